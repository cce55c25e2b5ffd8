//! One live session: its log, the records shared with readers, and the commit path.

use dsh_plugin_api::Json;
use dsh_plugin_api::lock;
use dsh_protocol::Message;
use std::sync::{Arc, Mutex};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RErr, RNone, ROk, ROption, RResult, RSome, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::{Channel, EmitEvent, ParallelEvent, Service};
use dsh_session_log::{
    DerivedMessages, NewEvent, SessionEvent, SessionLog, SurfaceOp, parse_lossless,
};
use dsh_sessions_seam::{
    DerivedView, DerivedView_TO, DerivedViewBox, EventRecord, FlushRequest, NewEventRecord,
    Session, SessionError, SessionErrorKind, SessionStoreService,
};

use crate::ids::now_ms;
use crate::publish_order::{Entry, PublishOrder};

/// Channels and services a live session dispatches to.
pub(crate) struct Wiring {
    pub(crate) on_event: Channel<EmitEvent<EventRecord>>,
    pub(crate) on_flush: Channel<ParallelEvent<FlushRequest>>,
    pub(crate) store: Option<Service<SessionStoreService>>,
}

/// What a live session keeps of its header.
#[derive(Debug, Clone, Default)]
pub(crate) struct HeaderFacts {
    /// The working directory it names.
    pub(crate) cwd: Option<String>,
    /// The agent preset it was made with.
    pub(crate) agent_preset: Option<String>,
}

pub(crate) struct LiveSession {
    id: String,
    /// The working directory its header names, so a fork's header can name it too.
    pub(crate) cwd: Option<String>,
    log: Mutex<SessionLog>,
    records: Mutex<Vec<RArc<EventRecord>>>,
    /// The agent preset it runs: the header's, then the last `agent-preset/selected`.
    preset: Mutex<Option<String>>,
    wiring: Arc<Wiring>,
    /// Publishes commits in sequence order.
    order: PublishOrder,
}

/// The preset an `agent-preset/selected` event switches to.
fn selected_preset(event: &SessionEvent) -> Option<String> {
    if event.kind != dsh_protocol::kinds::AGENT_PRESET_SELECTED {
        return None;
    }
    serde_json::from_value::<dsh_protocol::AgentPresetSelectedEvent>(event.data.clone())
        .ok()
        .map(|selected| selected.agent_preset)
}

fn rejected(message: impl Into<String>) -> SessionError {
    SessionError::new(SessionErrorKind::Rejected, message)
}

/// The record readers share: the event's JSON line, serialized once.
pub(crate) fn record_of(
    session: &str,
    event: &SessionEvent,
) -> Result<RArc<EventRecord>, SessionError> {
    let json = serde_json::to_string(event)
        .map_err(|error| rejected(format!("event {}: {error}", event.seq)))?;
    Ok(RArc::new(EventRecord {
        session: RString::from(session),
        seq: event.seq,
        kind: RString::from(event.kind.as_str()),
        time: event.time,
        json: RString::from(json),
    }))
}

fn new_event(index: usize, record: &NewEventRecord) -> Result<NewEvent, SessionError> {
    let data = parse_lossless(&record.data)
        .map_err(|error| rejected(format!("event {index} ({}): data: {error}", record.kind)))?;
    let mut event = NewEvent::new(
        record.kind.as_str(),
        data,
        record.time.into_option().unwrap_or_else(now_ms),
    );
    if let RSome(op) = &record.surface_op {
        let op: SurfaceOp = op.decode().map_err(|error| {
            rejected(format!(
                "event {index} ({}): surfaceOp `{}`: {error}",
                record.kind,
                op.text()
            ))
        })?;
        event.surface_op = Some(op);
    }
    if let RSome(seqs) = &record.source_event_seqs {
        event.source_event_seqs = Some(seqs.to_vec());
    }
    Ok(event)
}

/// The records readers share of a loaded `log`, and the preset it runs: the last
/// `agent-preset/selected`, else the header's. `loaded` are the records made where the log was
/// parsed, one per event in order, each keeping its line as it is (writing every event again
/// cost a long log's open for nothing); without them, they are made from `log`.
pub(crate) fn records_and_preset(
    id: &str,
    log: &SessionLog,
    header_preset: Option<String>,
    loaded: Option<Vec<RArc<EventRecord>>>,
) -> Result<(Vec<RArc<EventRecord>>, Option<String>), SessionError> {
    let records = match loaded {
        Some(loaded) if loaded.len() == log.events().len() => loaded,
        _ => log
            .events()
            .iter()
            .map(|event| record_of(id, event))
            .collect::<Result<Vec<_>, _>>()?,
    };
    let preset = log
        .events()
        .iter()
        .rev()
        .find_map(|event| selected_preset(event))
        .or(header_preset);
    Ok((records, preset))
}

impl LiveSession {
    /// A live session of `log`; `loaded`, when given, are the records made where `log` was
    /// parsed.
    pub(crate) fn new(
        id: String,
        header: HeaderFacts,
        log: SessionLog,
        loaded: Option<Vec<RArc<EventRecord>>>,
        wiring: Arc<Wiring>,
    ) -> Result<Arc<Self>, SessionError> {
        let (records, preset) = records_and_preset(&id, &log, header.agent_preset, loaded)?;
        Ok(Arc::new(Self {
            id,
            cwd: header.cwd,
            log: Mutex::new(log),
            records: Mutex::new(records),
            preset: Mutex::new(preset),
            wiring,
            order: PublishOrder::default(),
        }))
    }

    /// The agent preset the session runs.
    pub(crate) fn agent_preset(&self) -> Option<String> {
        lock(&self.preset).clone()
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Uses `types` from now on (a plugin registered an event type).
    pub(crate) fn set_types(&self, types: Arc<dsh_session_log::TypeRegistry>) {
        lock(&self.log).set_registry(types);
    }

    /// The log as it stands (for forks).
    pub(crate) fn log_snapshot(&self) -> SessionLog {
        lock(&self.log).clone()
    }

    /// Commits `batch`, all or nothing, then publishes it.
    pub(crate) fn commit(
        &self,
        batch: &[NewEventRecord],
    ) -> Result<Vec<RArc<EventRecord>>, SessionError> {
        let events = batch
            .iter()
            .enumerate()
            .map(|(index, record)| new_event(index, record))
            .collect::<Result<Vec<_>, _>>()?;
        self.in_order(|log| {
            log.append_batch(events)
                .map_err(|(index, error)| rejected(format!("event {index} of the batch: {error}")))
        })
    }

    /// Closes an interrupted turn (crash repair) and marks the end of the seed, then publishes
    /// what that appended: the first thing done with a log loaded from the store.
    pub(crate) fn seal_seed(&self) -> Result<(), SessionError> {
        self.in_order(|log| {
            let mut added = log
                .repair_interrupted()
                .map_err(|error| rejected(format!("crash repair: {error}")))?;
            if let Some(marker) = log
                .mark_end_seed(now_ms())
                .map_err(|error| rejected(error.to_string()))?
            {
                added.push(marker);
            }
            Ok(added)
        })
        .map(|_| ())
    }

    /// Appends what `append` adds to the log and publishes it in sequence order (see
    /// `publish_order`): on the publishing thread itself (a listener appending), the
    /// announcement waits for the batch being announced.
    fn in_order(
        &self,
        append: impl FnOnce(&mut SessionLog) -> Result<Vec<Arc<SessionEvent>>, SessionError>,
    ) -> Result<Vec<RArc<EventRecord>>, SessionError> {
        let entry = self.order.enter();
        let added = append(&mut lock(&self.log))?;
        let records = self.share(&added)?;
        let Entry::Owner(turn) = entry else {
            self.order.defer(records.clone());
            return Ok(records);
        };
        let mut announced = self.announce(&records);
        while let Some(deferred) = turn.next_deferred() {
            // The outer commit answers for what its listeners appended: a store that refused
            // one of theirs is reported with it rather than lost.
            let outcome = self.announce(&deferred);
            if announced.is_ok() {
                announced = outcome;
            }
        }
        announced.map(|()| records)
    }

    /// Announces and stores the records of events already held (a fork's seed).
    pub(crate) fn announce_existing(&self) -> Result<(), SessionError> {
        let records = lock(&self.records).clone();
        self.announce(&records)
    }

    /// Makes the records readers share of events just added to the log (not yet announced).
    fn share(&self, events: &[Arc<SessionEvent>]) -> Result<Vec<RArc<EventRecord>>, SessionError> {
        let records = events
            .iter()
            .map(|event| record_of(&self.id, event))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(preset) = events.iter().rev().find_map(|event| selected_preset(event)) {
            *lock(&self.preset) = Some(preset);
        }
        lock(&self.records).extend(records.iter().cloned());
        Ok(records)
    }

    fn announce(&self, records: &[RArc<EventRecord>]) -> Result<(), SessionError> {
        for record in records {
            // A failing listener is contained and logged by the host; the commit stands.
            let _ = self.wiring.on_event.emit(record);
        }
        if let Some(store) = &self.wiring.store {
            store
                .append(
                    RString::from(self.id.as_str()),
                    RVec::from(records.to_vec()),
                )
                .into_result()?;
        }
        Ok(())
    }
}

/// A handle on a live session, as plugins hold it.
pub(crate) struct Handle(pub(crate) Arc<LiveSession>);

impl Session for Handle {
    fn id(&self) -> RString {
        RString::from(self.0.id.as_str())
    }

    fn event_count(&self) -> u64 {
        lock(&self.0.records).len() as u64
    }

    fn append(
        &self,
        batch: RVec<NewEventRecord>,
    ) -> RResult<RVec<RArc<EventRecord>>, SessionError> {
        match self.0.commit(&batch) {
            Ok(records) => ROk(RVec::from(records)),
            Err(error) => RErr(error),
        }
    }

    fn events(&self, from: u64, to: u64) -> RVec<RArc<EventRecord>> {
        let records = lock(&self.0.records);
        let end = usize::try_from(to).unwrap_or(usize::MAX).min(records.len());
        let start = usize::try_from(from).unwrap_or(usize::MAX).min(end);
        records[start..end].iter().cloned().collect()
    }

    fn derive_messages(&self) -> DerivedViewBox {
        let derived = lock(&self.0.log).derive_messages();
        DerivedView_TO::from_value(View(derived), TD_Opaque)
    }

    fn agent_preset(&self) -> ROption<RString> {
        self.0.agent_preset().map(RString::from).into()
    }

    fn flush(&self) -> FfiFuture<RResult<(), SessionError>> {
        let wiring = self.0.wiring.clone();
        let session = RString::from(self.0.id.as_str());
        async move {
            let request = RArc::new(FlushRequest {
                session: RSome(session),
            });
            match wiring.on_flush.parallel(request).await {
                Ok(()) => ROk(()),
                Err(error) => RErr(SessionError::new(
                    SessionErrorKind::Storage,
                    error.to_string(),
                )),
            }
        }
        .into_ffi()
    }
}

pub(crate) struct View(pub(crate) DerivedMessages);

impl DerivedView for View {
    fn message_count(&self) -> u64 {
        self.0.len() as u64
    }

    fn message(&self, index: u64) -> ROption<Json<Message>> {
        let Ok(index) = usize::try_from(index) else {
            return RNone;
        };
        match self.0.get(index) {
            // The log's message written straight from its event as JSON: neither copied into a
            // `Value` nor re-read as a typed value on the way.
            Some(message) => match serde_json::to_string(message) {
                Ok(json) => RSome(Json::from_text(json)),
                Err(_) => RNone,
            },
            None => RNone,
        }
    }

    fn hash(&self) -> u64 {
        self.0.hash()
    }
}
