//! The store: per-session queues, batching, writing on the blocking pool, loading with repair.

use dsh_plugin_api::lock;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abi_stable::std_types::{RArc, RErr, RNone, ROk, ROption, RResult, RSome, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::{Context, Json, PluginError};
use dsh_protocol::{MessageSource, SearchHit, SessionSummary, UserMessageEvent};
use dsh_session_jsonl::{
    CommittedLine, Encoding, ListingFile, RootError, SessionHeader, SessionWriter, WriterOptions,
    read_session_lines, session_dir,
};
use dsh_session_log::SessionEvent;
use dsh_sessions_seam::{
    EventRecord, SessionError, SessionErrorKind, SessionStore, StoredSession, last_activity,
    listed_title,
};

use crate::Config;
use crate::lock::{LockError, SessionLock, acquire};

pub(crate) fn error(kind: SessionErrorKind, message: impl Into<String>) -> SessionError {
    SessionError::new(kind, message)
}

pub(crate) fn storage(message: impl std::fmt::Display) -> SessionError {
    error(SessionErrorKind::Storage, message.to_string())
}

/// Why a session could not be looked up: an id that is no session id is the caller's error.
pub(crate) fn lookup(problem: RootError) -> SessionError {
    let kind = match problem {
        RootError::Layout(_) => SessionErrorKind::Invalid,
        _ => SessionErrorKind::Unreadable,
    };
    error(kind, problem.to_string())
}

/// One session the store writes.
struct Stored {
    id: String,
    dir: PathBuf,
    queue: Mutex<Vec<RArc<EventRecord>>>,
    /// A batch timer is pending.
    armed: AtomicBool,
    /// Serializes drains, so batches reach the file in order. A write holds it until the
    /// listing files beside the log are written too, after its batch was acknowledged.
    draining: Arc<tokio::sync::Mutex<()>>,
    /// Moved onto the blocking pool for each write and back.
    writer: Arc<Mutex<Writer>>,
    held: Arc<Mutex<Option<SessionLock>>>,
    /// The session's first human message, once appended: a fallback title is made of its first
    /// words, and may land in a later batch than the message (see `listed_title`).
    first_message: Mutex<Option<RArc<EventRecord>>>,
}

impl Stored {
    /// Puts `batch`, which could not be written, back ahead of anything queued since.
    fn put_back(&self, batch: Vec<RArc<EventRecord>>) {
        let mut queue = lock(&self.queue);
        let later = std::mem::take(&mut *queue);
        *queue = batch;
        queue.extend(later);
    }
}

/// Whether `record` is a person's message.
fn is_human_message(record: &EventRecord) -> bool {
    matches!(
        record.decode::<UserMessageEvent>(),
        Some(Ok(UserMessageEvent(message))) if matches!(message.source, MessageSource::User { .. })
    )
}

/// How the next write reaches the file.
enum Writer {
    Ready(SessionWriter),
    /// A loaded log with a torn tail: the first write truncates it and re-appends the complete
    /// records of a torn frame. Until then the file stays exactly as it was, so a session that
    /// is refused after loading (an unknown required event type) is left untouched.
    Repair(RepairPlan),
}

struct RepairPlan {
    path: PathBuf,
    truncate_to: u64,
    pack_chunks: bool,
    recovered_from: u64,
    recovered: Vec<SessionEvent>,
}

impl Writer {
    /// The writer, after applying a pending repair.
    fn ready(&mut self) -> Result<&mut SessionWriter, SessionError> {
        if let Writer::Repair(plan) = self {
            dsh_session_jsonl::truncate_to(&plan.path, plan.truncate_to).map_err(storage)?;
            let mut writer = SessionWriter::open(&plan.path, plan.pack_chunks, plan.recovered_from)
                .map_err(storage)?;
            writer.append(&plan.recovered).map_err(storage)?;
            *self = Writer::Ready(writer);
        }
        match self {
            Writer::Ready(writer) => Ok(writer),
            Writer::Repair(_) => Err(storage("the repair of the session log did not apply")),
        }
    }
}

struct Inner {
    ctx: Context,
    root: PathBuf,
    trash: PathBuf,
    options: WriterOptions,
    batch: Duration,
    sessions: Mutex<HashMap<String, Arc<Stored>>>,
    /// Whether the sessions other processes write are followed yet (from the first listing).
    following: std::sync::atomic::AtomicBool,
}

#[derive(Clone)]
pub(crate) struct Store {
    inner: Arc<Inner>,
}

/// Appends `records` to the session's log and syncs it, taking the session's lock file first
/// if this store does not hold it yet. Runs on the blocking pool.
fn append_batch(
    records: &[RArc<EventRecord>],
    held: &Mutex<Option<SessionLock>>,
    writer: &Mutex<Writer>,
    dir: &Path,
    id: &str,
) -> Result<(), SessionError> {
    // The log's own JSON lines are written as they are; only chunk runs that pack are parsed.
    let lines: Vec<CommittedLine<'_>> = records
        .iter()
        .map(|record| CommittedLine {
            seq: record.seq,
            kind: &record.kind,
            json: &record.json,
        })
        .collect();
    let mut held = lock(held);
    if held.is_none() {
        *held = Some(acquire(dir).map_err(|problem| match problem {
            LockError::Held { .. } => error(
                SessionErrorKind::Locked,
                format!("session `{id}`: {problem}"),
            ),
            LockError::Io(message) => storage(message),
        })?);
    }
    lock(writer)
        .ready()?
        .append_committed(&lines)
        .map_err(|problem| storage(format!("session `{id}`: {problem}")))
}

/// The latest title and activity beside the log, so a listing need not read whole logs. One
/// that cannot be written costs only the listing's line.
fn write_listing_files(dir: &Path, listed: &[RArc<EventRecord>], records: &[RArc<EventRecord>]) {
    let active = last_activity(records);
    let _ = match (listed_title(listed), active) {
        (Some(title), active) => ListingFile::record_title(dir, &title, active),
        (None, Some(ms)) => ListingFile::record_activity(dir, ms),
        (None, None) => Ok(()),
    };
}

/// `<root>.trash` beside the root: inside it, the trash would be listed as a project.
fn trash_beside(root: &Path) -> PathBuf {
    let name = root.file_name().map_or_else(
        || "sessions".into(),
        |name| name.to_string_lossy().into_owned(),
    );
    root.with_file_name(format!("{name}.trash"))
}

impl Store {
    /// Starts following the sessions other processes write, once, at the first listing: only
    /// a listing is told of them, and following costs a scan of every session folder and a
    /// watch on each, which a run that never lists (a headless task) need not pay before its
    /// first request.
    fn follow_others(&self) {
        if self.inner.following.swap(true, Ordering::AcqRel) {
            return;
        }
        let ctx = self.inner.ctx.clone();
        let follow = crate::watch::follow(ctx.clone(), self.clone(), self.root());
        if let Err(error) = ctx.spawn(follow) {
            ctx.log(
                dsh_plugin_api::LogLevel::Warn,
                &format!("not following the session store: {error}"),
            );
        }
    }

    pub(crate) fn new(ctx: Context, config: &Config) -> Result<Self, PluginError> {
        let encoding = match config.compression.as_str() {
            "zstd" => Encoding::Zstd,
            "none" => Encoding::Raw,
            other => {
                return Err(PluginError {
                    kind: dsh_plugin_api::ErrorKind::Config,
                    message: format!(
                        "invalid config: compression `{other}` (expected `zstd` or `none`)"
                    )
                    .into(),
                    path: RSome("$.compression".into()),
                });
            }
        };
        Ok(Self {
            inner: Arc::new(Inner {
                ctx,
                root: PathBuf::from(&config.root),
                trash: config
                    .trash
                    .as_ref()
                    .map_or_else(|| trash_beside(Path::new(&config.root)), PathBuf::from),
                options: WriterOptions {
                    encoding,
                    pack_chunks: config.pack_chunks,
                },
                batch: Duration::from_millis(config.batch_ms),
                sessions: Mutex::new(HashMap::new()),
                following: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    /// The sessions root.
    pub(crate) fn root(&self) -> PathBuf {
        self.inner.root.clone()
    }

    /// Whether `dir` is the folder of a session this store writes.
    pub(crate) fn writes(&self, dir: &Path) -> bool {
        lock(&self.inner.sessions)
            .values()
            .any(|stored| stored.dir == dir)
    }

    fn stored(&self, id: &str) -> Result<Arc<Stored>, SessionError> {
        lock(&self.inner.sessions).get(id).cloned().ok_or_else(|| {
            error(
                SessionErrorKind::NotFound,
                format!("session `{id}` is not open in this store"),
            )
        })
    }

    /// Writes what is queued for `session` (or for every session), in order, and syncs it.
    pub(crate) async fn drain(&self, session: Option<&str>) -> Result<(), SessionError> {
        let targets: Vec<Arc<Stored>> = match session {
            Some(id) => self
                .stored(id)
                .map(|stored| vec![stored])
                .unwrap_or_default(),
            None => lock(&self.inner.sessions).values().cloned().collect(),
        };
        // Every target is tried even when one fails (a shutdown must write all it can); the
        // first failure is the answer.
        let mut first_failure = None;
        for stored in targets {
            if let Err(problem) = self.drain_one(&stored).await {
                first_failure.get_or_insert(problem);
            }
        }
        first_failure.map_or(Ok(()), Err)
    }

    async fn drain_one(&self, stored: &Arc<Stored>) -> Result<(), SessionError> {
        let turn = stored.draining.clone().lock_owned().await;
        stored.armed.store(false, Ordering::Release);
        let batch = std::mem::take(&mut *lock(&stored.queue));
        if batch.is_empty() {
            return Ok(());
        }
        let (writer, held, dir, id) = (
            stored.writer.clone(),
            stored.held.clone(),
            stored.dir.clone(),
            stored.id.clone(),
        );
        let records = batch.clone();
        // What the listing files are read from: the batch, and the first message its title
        // may be made of.
        let mut listed = batch.clone();
        {
            let mut first = lock(&stored.first_message);
            if first.is_none() {
                *first = batch
                    .iter()
                    .find(|record| is_human_message(record))
                    .cloned();
            }
            if let Some(message) = first.as_ref()
                && !listed.iter().any(|record| record.seq == message.seq)
            {
                listed.insert(0, message.clone());
            }
        }
        // The batch is acknowledged once it is synced; the listing files follow on the same
        // thread, off the caller's path (a rename costs about as much as the fsync here),
        // while this session's next drain, its close and the shutdown wait for them.
        let (acknowledge, acknowledged) = tokio::sync::oneshot::channel();
        let session = stored.clone();
        self.inner.ctx.start_blocking(move || {
            match append_batch(&records, &held, &writer, &dir, &id) {
                Ok(()) => {
                    let _ = acknowledge.send(Ok(()));
                    write_listing_files(&dir, &listed, &records);
                }
                Err(problem) => {
                    // A failed write keeps its events, ahead of anything queued since, before
                    // the next drain may start (whether or not the caller still waits); no
                    // automatic retry until the next flush asks for one.
                    dsh_plugin_api::tracing::error!("writing session `{id}` failed: {problem}");
                    session.put_back(records);
                    let _ = acknowledge.send(Err(problem));
                }
            }
            drop(turn);
        });
        match acknowledged.await {
            Ok(written) => written,
            Err(_) => {
                // The job never answered (it panicked, or a host shutting down dropped it
                // unrun): its events go back to the queue as after a failed write.
                stored.put_back(batch);
                Err(storage(format!(
                    "session `{}`: the write ended without an answer",
                    stored.id
                )))
            }
        }
    }

    /// Drops every lock (shutdown, after the last drain).
    pub(crate) fn release_all(&self) {
        for stored in lock(&self.inner.sessions).values() {
            lock(&stored.held).take();
        }
    }

    fn register(
        &self,
        header: &SessionHeader,
        writer: Writer,
        held: Option<SessionLock>,
    ) -> Result<(), SessionError> {
        let dir =
            session_dir(&self.inner.root, header.cwd.as_deref(), &header.id).map_err(storage)?;
        let stored = Arc::new(Stored {
            id: header.id.clone(),
            dir,
            queue: Mutex::new(Vec::new()),
            armed: AtomicBool::new(false),
            first_message: Mutex::new(None),
            draining: Arc::new(tokio::sync::Mutex::new(())),
            writer: Arc::new(Mutex::new(writer)),
            held: Arc::new(Mutex::new(held)),
        });
        lock(&self.inner.sessions).insert(header.id.clone(), stored);
        Ok(())
    }

    async fn list(&self) -> Result<Vec<SessionSummary>, SessionError> {
        self.follow_others();
        let root = self.inner.root.clone();
        let encoding = self.inner.options.encoding;
        self.inner
            .ctx
            .blocking(move || crate::listing::summaries(&root, encoding))
            .await
            .map_err(storage)?
    }

    async fn delete(&self, id: String) -> Result<(), SessionError> {
        if lock(&self.inner.sessions).contains_key(&id) {
            return Err(error(
                SessionErrorKind::Locked,
                format!("session `{id}` is open: close it before deleting it"),
            ));
        }
        let (root, trash) = (self.inner.root.clone(), self.inner.trash.clone());
        let encoding = self.inner.options.encoding;
        self.inner
            .ctx
            .blocking(move || crate::trash::move_to_trash(&root, &trash, encoding, &id))
            .await
            .map_err(storage)?
    }

    async fn restore(&self, id: String) -> Result<(), SessionError> {
        let (root, trash) = (self.inner.root.clone(), self.inner.trash.clone());
        let encoding = self.inner.options.encoding;
        self.inner
            .ctx
            .blocking(move || crate::trash::restore(&root, &trash, encoding, &id))
            .await
            .map_err(storage)?
    }

    async fn archive(&self, id: String, archived: bool) -> Result<(), SessionError> {
        let root = self.inner.root.clone();
        let encoding = self.inner.options.encoding;
        self.inner
            .ctx
            .blocking(move || crate::trash::set_archived(&root, encoding, &id, archived))
            .await
            .map_err(storage)?
    }

    async fn search(&self, query: String, limit: usize) -> Result<Vec<SearchHit>, SessionError> {
        let root = self.inner.root.clone();
        let encoding = self.inner.options.encoding;
        // What is queued is written first, so a search finds the latest messages.
        self.drain(None).await?;
        self.inner
            .ctx
            .blocking(move || crate::search::search(&root, encoding, &query, limit))
            .await
            .map_err(storage)?
    }

    async fn load(&self, id: String) -> Result<StoredSession, SessionError> {
        let root = self.inner.root.clone();
        let options = self.inner.options;
        let loaded = self
            .inner
            .ctx
            .blocking(move || -> Result<Loaded, SessionError> {
                let path = crate::trash::stored_log(&root, options.encoding, &id)?;
                let dir = path
                    .parent()
                    .map(PathBuf::from)
                    .unwrap_or_else(|| root.clone());
                let held = acquire(&dir).map_err(|problem| match problem {
                    LockError::Held { .. } => error(
                        SessionErrorKind::Locked,
                        format!("session `{id}`: {problem}"),
                    ),
                    LockError::Io(message) => storage(message),
                })?;
                // Kept as lines: the session service parses each one, once.
                let read = read_session_lines(&path)
                    .map_err(|problem| error(SessionErrorKind::Unreadable, problem.to_string()))?;
                let (writer, repaired) = match &read.repair {
                    Some(repair) => {
                        let recovered = read.lines[repair.recovered_from..]
                            .iter()
                            .map(|line| serde_json::from_str(line))
                            .collect::<Result<Vec<_>, _>>()
                            .map_err(storage)?;
                        let plan = RepairPlan {
                            path: path.clone(),
                            truncate_to: repair.truncate_to,
                            pack_chunks: options.pack_chunks,
                            recovered_from: repair.recovered_from as u64,
                            recovered,
                        };
                        (Writer::Repair(plan), Some(repair.reason.clone()))
                    }
                    None => {
                        let writer = SessionWriter::open(
                            &path,
                            options.pack_chunks,
                            read.lines.len() as u64,
                        )
                        .map_err(storage)?;
                        (Writer::Ready(writer), None)
                    }
                };
                Ok(Loaded {
                    header: read.header,
                    lines: read.lines,
                    repaired,
                    writer,
                    held,
                })
            })
            .await
            .map_err(|problem| storage(problem.to_string()))??;
        let Loaded {
            header,
            lines,
            repaired,
            writer,
            held,
        } = loaded;
        self.register(&header, writer, Some(held))?;
        Ok(StoredSession {
            header: RString::from(header.to_line()),
            events: lines.into_iter().map(RString::from).collect(),
            repaired: match repaired {
                Some(reason) => RSome(RString::from(reason)),
                None => RNone,
            },
        })
    }
}

impl Store {
    /// The stored log as it is, read without its lock; a torn tail is left out, not repaired.
    async fn view(&self, id: String) -> Result<StoredSession, SessionError> {
        let root = self.inner.root.clone();
        let encoding = self.inner.options.encoding;
        self.inner
            .ctx
            .blocking(move || -> Result<StoredSession, SessionError> {
                let path = crate::trash::stored_log(&root, encoding, &id)?;
                let read = read_session_lines(&path)
                    .map_err(|problem| error(SessionErrorKind::Unreadable, problem.to_string()))?;
                Ok(StoredSession {
                    header: RString::from(read.header.to_line()),
                    events: read.lines.into_iter().map(RString::from).collect(),
                    repaired: RNone,
                })
            })
            .await
            .map_err(|problem| storage(problem.to_string()))?
    }
}

/// What loading a stored session yields, handed back from the blocking pool.
struct Loaded {
    header: SessionHeader,
    lines: Vec<String>,
    repaired: Option<String>,
    writer: Writer,
    held: SessionLock,
}

fn done<T>(result: Result<T, SessionError>) -> RResult<T, SessionError> {
    match result {
        Ok(value) => ROk(value),
        Err(problem) => RErr(problem),
    }
}

impl SessionStore for Store {
    fn create(&self, header: RString) -> FfiFuture<RResult<(), SessionError>> {
        let store = self.clone();
        async move {
            let created = SessionHeader::parse("session header", &header)
                .map_err(|problem| error(SessionErrorKind::Invalid, problem.to_string()))
                .and_then(|header| {
                    let writer = SessionWriter::create(
                        &store.inner.root,
                        header.clone(),
                        store.inner.options,
                    )
                    .map_err(storage)?;
                    store.register(&header, Writer::Ready(writer), None)
                });
            done(created)
        }
        .into_ffi()
    }

    fn append(
        &self,
        session: RString,
        events: RVec<RArc<EventRecord>>,
    ) -> RResult<(), SessionError> {
        let stored = match self.stored(&session) {
            Ok(stored) => stored,
            Err(problem) => return RErr(problem),
        };
        lock(&stored.queue).extend(events);
        if !stored.armed.swap(true, Ordering::AcqRel) {
            let store = self.clone();
            let timer = self.inner.ctx.clone();
            let batch = self.inner.batch;
            let spawned = self.inner.ctx.spawn(async move {
                timer.sleep(batch).await;
                let _ = store.drain_one(&stored).await;
            });
            if let Err(problem) = spawned {
                return RErr(storage(problem.to_string()));
            }
        }
        ROk(())
    }

    fn flush(&self, session: ROption<RString>) -> FfiFuture<RResult<(), SessionError>> {
        let store = self.clone();
        async move {
            let session = session.into_option().map(RString::into_string);
            done(store.drain(session.as_deref()).await)
        }
        .into_ffi()
    }

    fn close(&self, session: RString) -> FfiFuture<RResult<(), SessionError>> {
        let store = self.clone();
        async move {
            let drained = store.drain(Some(session.as_str())).await;
            // A session whose events could not be written stays open (and locked), so a later
            // flush can still write them; closing it would drop them.
            if drained.is_ok()
                && let Some(stored) = lock(&store.inner.sessions).remove(session.as_str())
            {
                lock(&stored.held).take();
            }
            done(drained)
        }
        .into_ffi()
    }

    fn load(&self, id: RString) -> FfiFuture<RResult<StoredSession, SessionError>> {
        let store = self.clone();
        async move { done(store.load(id.into_string()).await) }.into_ffi()
    }

    fn view(&self, id: RString) -> FfiFuture<RResult<StoredSession, SessionError>> {
        let store = self.clone();
        async move { done(store.view(id.into_string()).await) }.into_ffi()
    }

    fn delete(&self, id: RString) -> FfiFuture<RResult<(), SessionError>> {
        let store = self.clone();
        async move { done(store.delete(id.into_string()).await) }.into_ffi()
    }

    fn restore(&self, id: RString) -> FfiFuture<RResult<(), SessionError>> {
        let store = self.clone();
        async move { done(store.restore(id.into_string()).await) }.into_ffi()
    }

    fn archive(&self, id: RString, archived: bool) -> FfiFuture<RResult<(), SessionError>> {
        let store = self.clone();
        async move { done(store.archive(id.into_string(), archived).await) }.into_ffi()
    }

    fn search(
        &self,
        query: RString,
        limit: u32,
    ) -> FfiFuture<RResult<Json<Vec<SearchHit>>, SessionError>> {
        let store = self.clone();
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        async move {
            done(
                store
                    .search(query.into_string(), limit)
                    .await
                    .map(|hits| Json::encode(&hits)),
            )
        }
        .into_ffi()
    }

    fn list(&self) -> FfiFuture<RResult<Json<Vec<SessionSummary>>, SessionError>> {
        let store = self.clone();
        async move { done(store.list().await.map(|listed| Json::encode(&listed))) }.into_ffi()
    }
}
