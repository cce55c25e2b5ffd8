//! `dsh-sessions-seam`: the session log across the plugin ABI. The `sessions` service (the log
//! of each session, provided by the `session` plugin) and the `session_persistence` service (its
//! store, provided by `session-persistence-jsonl`), with the events they dispatch.
//!
//! A committed event crosses the boundary as an [`EventRecord`]: its envelope fields plus its
//! JSON line, serialized once at commit and shared (`RArc`) by every reader, never copied per
//! reader. Plugins append the core events as `dsh-protocol` values ([`NewEventRecord::of`]) and
//! read them back typed ([`EventRecord::decode`]); their own event types stay JSON
//! ([`NewEventRecord::plugin`]). The rules of the log (seqs, surface, derive, repair) live in
//! `dsh-session-log`; the on-disk format in `dsh-session-jsonl`; this crate only says how
//! plugins talk about them.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

mod archive;
mod latest;
mod listing;

pub use archive::{
    ArchiveReport, ExportedArchive, SESSION_ARCHIVE_SERVICE, SessionArchive, SessionArchive_TO,
    SessionArchiveService,
};
pub use latest::LatestOf;
pub use listing::{last_activity, listed_title, search_snippet, shown_title, waiting_for_a_person};

use abi_stable::std_types::{RArc, RBox, ROption, RResult, RString, RVec};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::FfiFuture;
use dsh_plugin_api::{BailEvent, DecodeError, EmitEvent, Json, ParallelEvent};
use dsh_protocol::{
    EventData, Message, SearchHit, SessionEvent, SessionSummary, StreamChunk, SurfaceOp,
};
use serde::Serialize;

/// Service key of the session log.
pub const SESSIONS_SERVICE: &str = "sessions";
/// Service key of the session store.
pub const SESSION_PERSISTENCE_SERVICE: &str = "session_persistence";

/// `session/event`: after every commit, once per event (emit).
pub const SESSION_EVENT: EmitEvent<EventRecord> = EmitEvent::new("session/event");
/// `session/flush`: an awaited durability checkpoint (parallel): stores drain what they hold.
pub const SESSION_FLUSH: ParallelEvent<FlushRequest> = ParallelEvent::new("session/flush");
/// `session/created`: a session entered the registry (emit).
pub const SESSION_CREATED: EmitEvent<RString> = EmitEvent::new("session/created");
/// `session/disposed`: a session left the registry (emit).
pub const SESSION_DISPOSED: EmitEvent<RString> = EmitEvent::new("session/disposed");

/// `session/remote-event`: an event another process committed to a session this process
/// follows without holding it (see [`SessionStore::view`]), once per event, in seq order per
/// session (emit). Only the followers of a session listen: it is not this process's to act on.
pub const SESSION_REMOTE_EVENT: EmitEvent<EventRecord> = EmitEvent::new("session/remote-event");

/// `session/followed`: whether a reader in this process still follows the commits another
/// process makes to session `id` (bail: the first `true` answers). A store that watches sessions
/// it does not hold asks before it reads their new events, and stops watching a session nobody
/// follows (a view taken only to read the history, or one whose last follower left). A reader
/// of [`SESSION_REMOTE_EVENT`] answers it for the sessions it follows, from before it asks for
/// their [`SessionStore::view`] until its last follower leaves.
pub const SESSION_FOLLOWED: BailEvent<RString, bool> = BailEvent::new("session/followed");

/// `session/store-changed`: a session folder appeared in the store or left it, written by
/// another process (or deleted there); the payload is the folder's path. Readers list the
/// store again (emit).
pub const SESSION_STORE_CHANGED: EmitEvent<RString> = EmitEvent::new("session/store-changed");

/// One committed event.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    /// The session it belongs to.
    pub session: RString,
    pub seq: u64,
    pub kind: RString,
    pub time: i64,
    /// The whole event as its JSON line (envelope and data), as the store writes it.
    pub json: RString,
}

impl EventRecord {
    /// The event's data as `E`, when the event is of `E`'s type.
    pub fn decode<E: EventData>(&self) -> Option<Result<E, DecodeError>> {
        #[derive(serde::Deserialize)]
        struct Line<E> {
            data: E,
        }
        if self.kind.as_str() != E::KIND {
            return None;
        }
        Some(
            serde_json::from_str::<Line<E>>(&self.json)
                .map(|line| line.data)
                .map_err(|error| DecodeError {
                    what: E::KIND,
                    message: error.to_string(),
                }),
        )
    }

    /// The whole event.
    pub fn event(&self) -> Result<SessionEvent, DecodeError> {
        serde_json::from_str(&self.json).map_err(|error| DecodeError {
            what: "session event",
            message: error.to_string(),
        })
    }
}

/// An event to append: everything but `seq` (the log assigns it) and `time` (the log stamps it
/// unless given).
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct NewEventRecord {
    pub kind: RString,
    /// The event's `data` as JSON text (checked to be lossless JSON).
    pub data: RString,
    /// How a surface event changes the model-visible surface (only the 3 surface types).
    pub surface_op: ROption<Json<SurfaceOp>>,
    pub source_event_seqs: ROption<RVec<u64>>,
    pub time: ROption<i64>,
}

impl NewEventRecord {
    /// A core event; a surface event appends to the surface.
    pub fn of<E: EventData>(data: &E) -> Self {
        let record = Self::with_text(E::KIND, serde_json::to_string(data).unwrap_or_default());
        if E::SURFACE {
            record.with_surface(SurfaceOp::append())
        } else {
            record
        }
    }

    /// An event of a plugin's own type, whose data is open by nature.
    pub fn plugin(kind: &str, data: &impl Serialize) -> Self {
        Self::with_text(kind, serde_json::to_string(data).unwrap_or_default())
    }

    /// An `assistant/chunk` whose chunk is the text an adapter serialized, embedded as it is:
    /// the chunk is not parsed and encoded again on its way to the log.
    pub fn chunk(turn: u64, step: u64, chunk: &Json<StreamChunk>) -> Self {
        #[derive(Serialize)]
        struct Data<'a> {
            turn: u64,
            step: u64,
            chunk: &'a serde_json::value::RawValue,
        }
        let data =
            serde_json::value::RawValue::from_string(chunk.text().to_owned()).and_then(|raw| {
                serde_json::to_string(&Data {
                    turn,
                    step,
                    chunk: &raw,
                })
            });
        // A chunk that is not JSON is refused by the log's lossless check, naming the type.
        Self::with_text(
            <dsh_protocol::AssistantChunkEvent as EventData>::KIND,
            data.unwrap_or_default(),
        )
    }

    fn with_text(kind: &str, data: String) -> Self {
        Self {
            kind: kind.into(),
            data: data.into(),
            surface_op: ROption::RNone,
            source_event_seqs: ROption::RNone,
            time: ROption::RNone,
        }
    }

    /// The event cites `seqs` (`sourceEventSeqs`); nothing when `seqs` is empty.
    pub fn citing(mut self, seqs: &[u64]) -> Self {
        if !seqs.is_empty() {
            self.source_event_seqs = ROption::RSome(RVec::from(seqs.to_vec()));
        }
        self
    }

    pub fn with_surface(mut self, op: SurfaceOp) -> Self {
        self.surface_op = ROption::RSome(Json::encode(&op));
        self
    }

    /// Stamps the event with `time` (epoch milliseconds) instead of the log's clock.
    pub fn at(mut self, time: i64) -> Self {
        self.time = ROption::RSome(time);
        self
    }
}

/// Which sessions a flush should drain (`RNone`: all).
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct FlushRequest {
    pub session: ROption<RString>,
}

#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionErrorKind {
    /// The append broke a rule of the log (seq, surface, lossless JSON, unknown type...).
    Rejected,
    NotFound,
    /// Another process owns the session (its lock is held).
    Locked,
    /// The stored log cannot be read (corruption, wrong version, unknown required type).
    Unreadable,
    /// The store failed to write.
    Storage,
    /// A fork boundary inside an open turn, a duplicate id...
    Invalid,
}

#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct SessionError {
    pub kind: SessionErrorKind,
    pub message: RString,
}

impl SessionError {
    pub fn new(kind: SessionErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: RString::from(message.into()),
        }
    }
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SessionError {}

/// How to create a session.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq, Default)]
pub struct CreateSession {
    /// A fresh UUID when absent.
    pub id: ROption<RString>,
    pub cwd: ROption<RString>,
    pub parent: ROption<RString>,
    /// 0 for a top-level session; a child agent's session is one deeper than its parent's
    /// (and is written with `origin: subagent`).
    pub delegation_depth: u64,
    /// Seeds the new session with the first events of a live one (a forked child), its cwd
    /// taken from the source when `cwd` is absent.
    pub seed: ROption<SessionSeed>,
    /// The agent preset the session is made with (the header's `agentPreset`).
    pub agent_preset: ROption<RString>,
}

/// The events a new session starts from: the first `prefix_len` of live session `source`.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct SessionSeed {
    pub source: RString,
    pub prefix_len: u64,
}

/// The model history of a session at one point: shared and append-only, read by index.
#[sabi_trait]
pub trait DerivedView: Send + Sync {
    fn message_count(&self) -> u64;
    /// Message `index` (its id is empty: providers never see ids).
    fn message(&self, index: u64) -> ROption<Json<Message>>;
    /// The rolling hash of the history, for the model-visible-means-logged check.
    fn hash(&self) -> u64;
}
pub type DerivedViewBox = DerivedView_TO<'static, RBox<()>>;

/// One session's log.
#[sabi_trait]
pub trait Session: Send + Sync {
    fn id(&self) -> RString;
    fn event_count(&self) -> u64;
    /// Appends a batch atomically: all events commit, or none.
    fn append(&self, batch: RVec<NewEventRecord>)
    -> RResult<RVec<RArc<EventRecord>>, SessionError>;
    /// Committed events with `from <= seq < to`.
    fn events(&self, from: u64, to: u64) -> RVec<RArc<EventRecord>>;
    fn derive_messages(&self) -> DerivedViewBox;
    /// Awaits a durability checkpoint (`session/flush`) for this session.
    fn flush(&self) -> FfiFuture<RResult<(), SessionError>>;
    /// The agent preset the session runs: the header's `agentPreset`, replaced by the last
    /// `agent-preset/selected` event (`None`: the plain agent).
    fn agent_preset(&self) -> ROption<RString>;
}
pub type SessionBox = Session_TO<'static, RBox<()>>;

/// The `sessions` service.
#[sabi_trait]
pub trait Sessions: Send + Sync {
    fn create(&self, request: CreateSession) -> FfiFuture<RResult<SessionBox, SessionError>>;
    /// Opens a live session, or loads a stored one (running the crash-repair closers first).
    fn open(&self, id: RString) -> FfiFuture<RResult<SessionBox, SessionError>>;
    /// A child seeded from the first `prefix_len` events of `source`.
    fn fork(
        &self,
        source: RString,
        prefix_len: u64,
        child: ROption<RString>,
    ) -> FfiFuture<RResult<SessionBox, SessionError>>;
    /// Ids of the live sessions.
    fn live(&self) -> RVec<RString>;
    /// Makes a plugin's own event type known. Its events are written with `ignorable: true`
    /// unless `required`, so removing the plugin never makes its sessions unreadable.
    fn register_type(&self, kind: RString, required: bool) -> RResult<(), SessionError>;
    /// Flushes a live session, releases it from this process and announces `session/disposed`.
    fn close(&self, id: RString) -> FfiFuture<RResult<(), SessionError>>;
    /// A read-only copy of a stored session another process holds, as it is now: its events
    /// can be read and derived, an append is refused (`Locked`), nothing is repaired. The store
    /// then announces what the holder commits as `session/remote-event`, where it can.
    fn view(&self, id: RString) -> FfiFuture<RResult<SessionBox, SessionError>>;
}
pub type SessionsService = Sessions_TO<'static, RBox<()>>;

/// A stored session as the store returns it.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct StoredSession {
    /// The header line (JSON).
    pub header: RString,
    /// Every committed event as its JSON line, packed rows expanded.
    pub events: RVec<RString>,
    /// What a torn tail repair did, if anything.
    pub repaired: ROption<RString>,
}

/// The `session_persistence` service: where logs are kept.
#[sabi_trait]
pub trait SessionStore: Send + Sync {
    /// Registers a new session; nothing is written until its first append.
    fn create(&self, header: RString) -> FfiFuture<RResult<(), SessionError>>;
    /// Queues committed events; they are written within the batch window or at the next flush.
    fn append(
        &self,
        session: RString,
        events: RVec<RArc<EventRecord>>,
    ) -> RResult<(), SessionError>;
    /// Writes everything queued for `session` (or all) and syncs it.
    fn flush(&self, session: ROption<RString>) -> FfiFuture<RResult<(), SessionError>>;
    fn load(&self, id: RString) -> FfiFuture<RResult<StoredSession, SessionError>>;
    /// A stored session as it is now, without taking it (no lock, no lease, nothing repaired),
    /// for following a session another process writes. A store that can tell when the holder
    /// commits (PostgreSQL's `NOTIFY`) then emits those events as `session/remote-event`.
    fn view(&self, id: RString) -> FfiFuture<RResult<StoredSession, SessionError>>;
    /// Writes what is queued for `session`, then forgets it and releases its lock.
    fn close(&self, session: RString) -> FfiFuture<RResult<(), SessionError>>;
    /// Every stored session (its header and when its log last changed), newest first; `live`
    /// and `title` are left for the caller, which knows them.
    fn list(&self) -> FfiFuture<RResult<Json<Vec<SessionSummary>>, SessionError>>;
    /// Moves a stored session that is not open out of the listing, into the store's trash
    /// (nothing is erased: a person can move it back).
    fn delete(&self, id: RString) -> FfiFuture<RResult<(), SessionError>>;
    /// Moves the latest deleted copy of a session back out of the trash, into the listing.
    fn restore(&self, id: RString) -> FfiFuture<RResult<(), SessionError>>;
    /// Marks a stored session archived (or not): listed apart, kept whole.
    fn archive(&self, id: RString, archived: bool) -> FfiFuture<RResult<(), SessionError>>;
    /// The stored sessions whose messages (a person's or the model's) hold `query`, ignoring
    /// case, most recently active first, at most `limit`; each with its latest such message.
    fn search(
        &self,
        query: RString,
        limit: u32,
    ) -> FfiFuture<RResult<Json<Vec<SearchHit>>, SessionError>>;
}
pub type SessionStoreService = SessionStore_TO<'static, RBox<()>>;

/// Appending and reading typed events on a session.
pub trait SessionExt {
    /// Appends one event; answers its seq.
    fn append_one(&self, record: NewEventRecord) -> Result<u64, SessionError>;
    /// Appends one core event; answers its seq.
    fn log<E: EventData>(&self, data: &E) -> Result<u64, SessionError> {
        self.append_one(NewEventRecord::of(data))
    }
}

impl SessionExt for SessionBox {
    fn append_one(&self, record: NewEventRecord) -> Result<u64, SessionError> {
        let committed = self.append(RVec::from(vec![record])).into_result()?;
        Ok(committed.first().map_or(0, |event| event.seq))
    }
}

/// Appends `record` to the live session `session` through the `sessions` service, for plugins
/// that log beside a conversation (a todo list, a retry, an approval). No session id or no
/// `sessions` service: nothing to log to. A refused or failed append is reported in the host
/// log under `owner`, since the caller's own work has already happened.
pub async fn append_or_report(
    ctx: &dsh_plugin_api::Context,
    owner: &str,
    session: &str,
    record: NewEventRecord,
) {
    if session.is_empty() {
        return;
    }
    if !matches!(ctx.get::<SessionsService>(SESSIONS_SERVICE), Ok(Some(_))) {
        return;
    }
    let kind = record.kind.clone();
    // Only a live session: a late write must not load a closed one back from the store.
    let appended = open_live(ctx, session).and_then(|live| live.append_one(record));
    if let Err(error) = appended {
        ctx.log(
            dsh_plugin_api::LogLevel::Error,
            &format!("{owner}: `{kind}` not logged in `{session}`: {error}"),
        );
    }
}

/// The live session `id`, at once: a live session's `open` is ready on its first poll, so a
/// caller that must change and log something in one step (inside an emit listener, or between
/// two appends) needs no await. An error when there is no `sessions` service, or the session
/// is not live (opening it would load it from the store).
pub fn open_live(ctx: &dsh_plugin_api::Context, id: &str) -> Result<SessionBox, SessionError> {
    let Ok(Some(sessions)) = ctx.get::<SessionsService>(SESSIONS_SERVICE) else {
        return Err(SessionError::new(
            SessionErrorKind::NotFound,
            "no `sessions` service",
        ));
    };
    let waker = std::task::Waker::noop();
    let mut poll = std::task::Context::from_waker(waker);
    let mut opening = std::pin::pin!(sessions.open(RString::from(id)));
    match opening.as_mut().poll(&mut poll) {
        std::task::Poll::Ready(opened) => opened.into_result(),
        std::task::Poll::Pending => Err(SessionError::new(
            SessionErrorKind::NotFound,
            format!("session `{id}` is not live"),
        )),
    }
}
