//! The in-memory append-only log.

use dsh_protocol::kinds;
use std::sync::Arc;

use serde_json::Value;

use crate::derive::DerivedMessages;
use crate::error::{AppendError, LoadError, Violation};
use crate::lossless::{LosslessError, MAX_SAFE_INTEGER, check_lossless_at};
use crate::shape::check_message_event;
use crate::surface::{DeriveStats, Plan, Projection};
use crate::types::TypeRegistry;
use dsh_protocol::{SessionEvent, SurfaceOp};

/// An event to append: everything but the seq (which the log assigns) and the `ignorable`
/// marker (which the registry decides).
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub kind: String,
    /// Epoch milliseconds. The log has no clock: the caller stamps events.
    pub time: i64,
    pub data: Value,
    pub surface_op: Option<SurfaceOp>,
    pub source_event_seqs: Option<Vec<u64>>,
    /// When set, the seq the caller expects this event to get; the append is refused if the log
    /// has moved on (events computed for a position, like crash closers, must land there).
    pub expected_seq: Option<u64>,
}

impl NewEvent {
    /// A log-only event.
    pub fn new(kind: impl Into<String>, data: Value, time: i64) -> Self {
        Self {
            kind: kind.into(),
            time,
            data,
            surface_op: None,
            source_event_seqs: None,
            expected_seq: None,
        }
    }

    /// A surface event (`user/message`, `assistant/message`, `tool/result`).
    pub fn surface(kind: impl Into<String>, data: Value, op: SurfaceOp, time: i64) -> Self {
        Self {
            surface_op: Some(op),
            ..Self::new(kind, data, time)
        }
    }

    /// Adds provenance: the earlier events this one derives from.
    #[must_use]
    pub fn with_sources(mut self, seqs: Vec<u64>) -> Self {
        self.source_event_seqs = Some(seqs);
        self
    }

    /// Pins the seq this event must get.
    #[must_use]
    pub fn at_seq(mut self, seq: u64) -> Self {
        self.expected_seq = Some(seq);
        self
    }

    /// The event as it would be committed at `seq` with the given `ignorable` marker, for
    /// writers that hold events without a [`SessionLog`] (e.g. re-encoding a repaired file).
    pub fn into_event(self, seq: u64, ignorable: Option<bool>) -> SessionEvent {
        SessionEvent {
            kind: self.kind,
            seq,
            time: self.time,
            data: self.data,
            surface_op: self.surface_op,
            source_event_seqs: self.source_event_seqs,
            ignorable,
        }
    }
}

/// An event whose own rules (its data lossless JSON, a message event's shape) were checked
/// where it was parsed, for [`SessionLog::from_prechecked`]. Opening a long log parses it on
/// several threads; these checks walk every value of every event, and done there, beside the
/// parse and while the value is still in cache, they leave the load (one thread) only the
/// verdicts to read. The rules that depend on the log so far (seq, surface) stay in the load.
#[derive(Debug)]
pub struct Prechecked {
    event: Arc<SessionEvent>,
    verdicts: Verdicts,
}

/// The outcomes of an event's checks that need nothing but the event.
#[derive(Debug)]
struct Verdicts {
    lossless: Result<(), LosslessError>,
    shape: Result<(), Violation>,
}

impl Verdicts {
    fn of(event: &SessionEvent) -> Self {
        Self {
            lossless: check_lossless_at(&event.data, "$.data"),
            shape: check_message_event(event),
        }
    }
}

impl Prechecked {
    /// Checks `event`; the verdicts are kept, and the load reports each in its place among the
    /// rules (a load that fails earlier for another reason says that reason, as it would have
    /// without the precheck).
    pub fn new(event: SessionEvent) -> Self {
        let verdicts = Verdicts::of(&event);
        Self {
            event: Arc::new(event),
            verdicts,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Append,
    Load,
    Adopt,
}

/// The session log: committed events (immutable, shared as `Arc`), the surface, and the derived
/// history kept current as events arrive. Cloning shares the events (an in-memory repair for
/// inspection can work on a clone).
#[derive(Debug, Clone)]
pub struct SessionLog {
    registry: Arc<TypeRegistry>,
    events: Vec<Arc<SessionEvent>>,
    projection: Projection,
    last_end_seed: Option<u64>,
}

impl Default for SessionLog {
    fn default() -> Self {
        Self::new(Arc::new(TypeRegistry::new()))
    }
}

impl SessionLog {
    /// An empty log accepting the types of `registry`.
    pub fn new(registry: Arc<TypeRegistry>) -> Self {
        Self {
            registry,
            events: Vec::new(),
            projection: Projection::default(),
            last_end_seed: None,
        }
    }

    /// Loads committed events (from persistence, a seed, a fork), checking every rule an append
    /// checks, with one difference: an event of a type unknown to `registry` is kept if it carries
    /// `ignorable: true` (readers skip it) and refuses the load otherwise. Takes owned events or
    /// already shared ones (`Arc<SessionEvent>`, which are kept, not copied).
    pub fn from_events<I, E>(events: I, registry: Arc<TypeRegistry>) -> Result<Self, LoadError>
    where
        I: IntoIterator<Item = E>,
        E: Into<Arc<SessionEvent>>,
    {
        Self::load(
            events.into_iter().map(|event| (event.into(), None)),
            registry,
            Mode::Load,
        )
    }

    /// [`SessionLog::from_events`] over events whose lossless check was made beforehand.
    pub fn from_prechecked(
        events: Vec<Prechecked>,
        registry: Arc<TypeRegistry>,
    ) -> Result<Self, LoadError> {
        Self::load(
            events
                .into_iter()
                .map(|checked| (checked.event, Some(checked.verdicts))),
            registry,
            Mode::Load,
        )
    }

    /// Takes a prefix of a log that was already validated (a fork): payload checks are not
    /// repeated, but the surface is rebuilt, which re-checks its rules anyway.
    pub(crate) fn adopt(
        prefix: &[Arc<SessionEvent>],
        registry: Arc<TypeRegistry>,
    ) -> Result<Self, LoadError> {
        Self::load(
            prefix.iter().map(|event| (Arc::clone(event), None)),
            registry,
            Mode::Adopt,
        )
    }

    /// Each event with the verdicts of its own checks when they were made beforehand.
    fn load<I>(events: I, registry: Arc<TypeRegistry>, mode: Mode) -> Result<Self, LoadError>
    where
        I: Iterator<Item = (Arc<SessionEvent>, Option<Verdicts>)>,
    {
        let mut log = Self::new(registry);
        for (position, (event, verdicts)) in events.enumerate() {
            match log.validate(&event, mode, verdicts) {
                Ok(plan) => log.commit(event, plan),
                Err(violation) => {
                    return Err(LoadError {
                        position,
                        seq: event.seq,
                        kind: event.kind.clone(),
                        violation,
                    });
                }
            }
        }
        Ok(log)
    }

    /// Appends one event, or refuses it and leaves the log unchanged.
    pub fn append(&mut self, new: NewEvent) -> Result<Arc<SessionEvent>, AppendError> {
        let (event, plan) = self.checked(new, self.next_seq())?;
        self.commit(Arc::clone(&event), plan);
        Ok(event)
    }

    /// `new` made the event it would be at seq `expected` and checked there, not committed.
    fn checked(
        &self,
        new: NewEvent,
        expected: u64,
    ) -> Result<(Arc<SessionEvent>, Plan), AppendError> {
        let seq = new.expected_seq.unwrap_or(expected);
        let ignorable = self.registry.ignorable_marker(&new.kind);
        let event = Arc::new(new.into_event(seq, ignorable));
        let plan = self
            .validate_at(&event, Mode::Append, None, expected)
            .map_err(|violation| AppendError {
                seq,
                kind: event.kind.clone(),
                violation,
            })?;
        Ok((event, plan))
    }

    /// Appends `batch` whole, or refuses it at its first bad event (its index in the batch and
    /// why) and leaves the log unchanged.
    ///
    /// Why not try the batch on a copy of the log: the copy costs an `Arc` count per event of
    /// the whole log, so each batch of a long session would cost more than the one before. An
    /// event that adds to the surface (or stays off it) is checked the same wherever the batch
    /// puts it, its seq aside, so such a batch is checked whole and then committed. One that
    /// replaces part of the surface is checked against the surface the events before it left,
    /// so a batch holding one is still tried on a copy.
    pub fn append_batch(
        &mut self,
        mut batch: Vec<NewEvent>,
    ) -> Result<Vec<Arc<SessionEvent>>, (usize, AppendError)> {
        let replaces = |new: &NewEvent| {
            new.surface_op
                .as_ref()
                .is_some_and(|op| op.replace_span().is_some())
        };
        // One event commits or fails on its own.
        if batch.len() == 1
            && let Some(new) = batch.pop()
        {
            return self
                .append(new)
                .map(|event| vec![event])
                .map_err(|error| (0, error));
        }
        if batch.iter().any(replaces) {
            let mut staged = self.clone();
            let mut committed = Vec::with_capacity(batch.len());
            for (index, new) in batch.into_iter().enumerate() {
                committed.push(staged.append(new).map_err(|error| (index, error))?);
            }
            *self = staged;
            return Ok(committed);
        }
        let first = self.next_seq();
        let checked = batch
            .into_iter()
            .enumerate()
            .map(|(index, new)| {
                self.checked(new, first + index as u64)
                    .map_err(|error| (index, error))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(checked
            .into_iter()
            .map(|(event, plan)| {
                self.commit(Arc::clone(&event), plan);
                event
            })
            .collect())
    }

    /// Every rule an event must pass to enter at the end of this log; `verdicts`, the event's
    /// own checks when they were made beforehand.
    fn validate(
        &self,
        event: &SessionEvent,
        mode: Mode,
        verdicts: Option<Verdicts>,
    ) -> Result<Plan, Violation> {
        self.validate_at(event, mode, verdicts, self.next_seq())
    }

    /// [`Self::validate`] for an event that will enter at seq `expected`.
    fn validate_at(
        &self,
        event: &SessionEvent,
        mode: Mode,
        verdicts: Option<Verdicts>,
        expected: u64,
    ) -> Result<Plan, Violation> {
        if event.seq != expected {
            return Err(Violation::SeqMismatch { expected });
        }
        if mode == Mode::Adopt {
            return self.projection.plan(event, &self.events);
        }
        if event.ignorable == Some(false) {
            return Err(Violation::IgnorableFalse);
        }
        if event.time.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(Violation::TimeOutOfRange { time: event.time });
        }
        // Only a load may keep an unknown type, and only when its writer marked it skippable.
        let kept_unknown = mode == Mode::Load && event.is_ignorable();
        if !self.registry.is_known(&event.kind) && !kept_unknown {
            return Err(Violation::UnknownType {
                kind: event.kind.clone(),
            });
        }
        let verdicts = verdicts.unwrap_or_else(|| Verdicts::of(event));
        verdicts.lossless.map_err(Violation::Lossless)?;
        let plan = self.projection.plan(event, &self.events)?;
        verdicts.shape?;
        Ok(plan)
    }

    /// For `check_log`: validates like a load and commits a valid event; a refused one is still
    /// kept (outside the surface) so the positions of later events stay aligned.
    pub(crate) fn push_checked(&mut self, event: Arc<SessionEvent>) -> Result<(), Violation> {
        let result = self.validate(&event, Mode::Load, None);
        match result {
            Ok(plan) => self.commit(event, plan),
            Err(_) => self.events.push(event),
        }
        result.map(|_| ())
    }

    fn commit(&mut self, event: Arc<SessionEvent>, plan: Plan) {
        self.projection.commit(&event, plan);
        if event.kind == kinds::SESSION_END_SEED {
            self.last_end_seed = Some(event.seq);
        }
        self.events.push(event);
    }

    /// The seq the next event gets (= the log length).
    pub fn next_seq(&self) -> u64 {
        self.events.len() as u64
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// All committed events, including ignorable ones of unknown types (persistence keeps them).
    pub fn events(&self) -> &[Arc<SessionEvent>] {
        &self.events
    }

    pub fn get(&self, seq: u64) -> Option<&Arc<SessionEvent>> {
        usize::try_from(seq).ok().and_then(|i| self.events.get(i))
    }

    pub fn last(&self) -> Option<&Arc<SessionEvent>> {
        self.events.last()
    }

    /// The events a reader interprets: everything except ignorable events of types this log's
    /// registry does not know.
    pub fn readable_events(&self) -> impl Iterator<Item = &Arc<SessionEvent>> + '_ {
        self.events
            .iter()
            .filter(|e| self.registry.is_known(&e.kind))
    }

    pub fn registry(&self) -> &Arc<TypeRegistry> {
        &self.registry
    }

    /// Swaps the registry (a plugin registered or removed a type). Committed events stay: they
    /// were valid when they entered.
    pub fn set_registry(&mut self, registry: Arc<TypeRegistry>) {
        self.registry = registry;
    }

    /// Surface nodes: seqs of the model-visible events, in model-visible order.
    pub fn surface_nodes(&self) -> &[u64] {
        self.projection.seqs()
    }

    /// How many positional replaces the surface has seen.
    pub fn replace_generation(&self) -> u64 {
        self.projection.generation()
    }

    /// The derived model history. O(log n): the snapshot shares the log's message list.
    pub fn derive_messages(&self) -> DerivedMessages {
        self.projection.derived()
    }

    /// History hash of [`Self::derive_messages`], O(1).
    pub fn derived_hash(&self) -> u64 {
        self.projection.hash()
    }

    /// Work spent keeping derived history current.
    pub fn derive_stats(&self) -> DeriveStats {
        self.projection.stats()
    }

    /// Seq of the last `session/end-seed`. Brackets (e.g. a compaction lock) opened before it
    /// belong to an ended lifetime and are stale; ones opened after it are live.
    pub fn last_end_seed(&self) -> Option<u64> {
        self.last_end_seed
    }

    /// Whether an unmatched bracket opener at `opener_seq` is stale: it precedes the last
    /// end-seed, so whatever lifetime opened it has ended (however it ended).
    pub fn is_stale_opener(&self, opener_seq: u64) -> bool {
        self.last_end_seed.is_some_and(|end| opener_seq < end)
    }
}
