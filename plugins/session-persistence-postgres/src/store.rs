//! The store: per-session queues, batches committed in one transaction each, leases taken and
//! renewed, sessions loaded whole.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use abi_stable::std_types::{RArc, RErr, RNone, ROk, ROption, RResult, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::io::postgres::{
    PgDatabaseBox, PgError, PgErrorKind, PgRows, PgStatement, PgValue,
};
use dsh_plugin_api::{Channel, Context, EmitEvent, Json, PluginError, lock};
use dsh_protocol::{MessageSource, SearchHit, SessionSummary, UserMessageEvent, kinds};
use dsh_session_jsonl::SessionHeader;
use dsh_sessions_seam::{
    EventRecord, SESSION_REMOTE_EVENT, SessionError, SessionErrorKind, SessionStore, StoredSession,
    last_activity, listed_title,
};

use crate::Config;
use crate::schema::LEASE_HELD;

pub(crate) fn error(kind: SessionErrorKind, message: impl Into<String>) -> SessionError {
    SessionError::new(kind, message)
}

/// A database error as the session seam says it: a lease held elsewhere is `Locked`, a seq
/// written twice is `Locked` too (another writer got there), an unreachable database `Storage`.
pub(crate) fn from_db(session: &str, problem: PgError) -> SessionError {
    if problem.code.as_str() == LEASE_HELD {
        return error(SessionErrorKind::Locked, problem.message.to_string());
    }
    match problem.kind {
        PgErrorKind::UniqueViolation if problem.message.contains("dsh_sessions_pkey") => error(
            SessionErrorKind::Invalid,
            format!("a session with id `{session}` is already stored"),
        ),
        PgErrorKind::UniqueViolation => error(
            SessionErrorKind::Locked,
            format!(
                "session `{session}`: another writer already wrote these seqs ({})",
                problem.message
            ),
        ),
        PgErrorKind::Connection => error(
            SessionErrorKind::Storage,
            format!("session `{session}`: the session database is unreachable: {problem}"),
        ),
        _ => error(
            SessionErrorKind::Storage,
            format!("session `{session}`: {problem}"),
        ),
    }
}

/// One session this store writes.
struct Stored {
    id: String,
    /// A session made here whose row is not written yet (it is, with its first batch).
    unwritten: Mutex<Option<SessionHeader>>,
    queue: Mutex<Vec<RArc<EventRecord>>>,
    /// A batch timer is pending.
    armed: AtomicBool,
    /// Serializes drains, so batches commit in order.
    draining: tokio::sync::Mutex<()>,
    /// The session's first human message: a fallback title is made of its first words and may
    /// land in a later batch than the message.
    first_message: Mutex<Option<RArc<EventRecord>>>,
    /// A turn of it runs (its last `turn/start` has no `turn/end` yet).
    turn_open: AtomicBool,
    /// When it last had events to write.
    last_append: Mutex<Instant>,
}

impl Stored {
    /// Whether its lease is renewed: while a turn runs (a wait for a person appends nothing
    /// for minutes), and for one lease after its last events. An idle session's lease lapses,
    /// so another host can take a session this one only opened to show; should this host
    /// write it again, its next batch takes the lease back, or is refused naming the host
    /// that took it.
    fn keeps_its_lease(&self, lease: Duration) -> bool {
        self.turn_open.load(Ordering::Acquire) || lock(&self.last_append).elapsed() < lease
    }
}

fn is_human_message(record: &EventRecord) -> bool {
    matches!(
        record.decode::<UserMessageEvent>(),
        Some(Ok(UserMessageEvent(message))) if matches!(message.source, MessageSource::User { .. })
    )
}

pub(crate) struct Inner {
    pub(crate) ctx: Context,
    pub(crate) db: PgDatabaseBox,
    owner: String,
    lease_ms: i64,
    batch: Duration,
    sessions: Mutex<HashMap<String, Arc<Stored>>>,
    /// Sessions followed without being held (`view`).
    pub(crate) watches: crate::follow::Watches,
    /// Where the commits of followed sessions go.
    pub(crate) remote: Channel<EmitEvent<EventRecord>>,
}

#[derive(Clone)]
pub(crate) struct Store {
    pub(crate) inner: Arc<Inner>,
}

fn hold(session: &str, owner: &str, lease_ms: i64) -> PgStatement {
    PgStatement::new(
        "SELECT dsh_hold_lease($1, $2, $3)",
        vec![
            PgValue::text(session),
            PgValue::text(owner),
            PgValue::Int(lease_ms),
        ],
    )
}

impl Store {
    pub(crate) fn new(
        ctx: Context,
        db: PgDatabaseBox,
        owner: String,
        config: &Config,
    ) -> Result<Self, PluginError> {
        let remote = ctx.channel(&SESSION_REMOTE_EVENT)?;
        Ok(Self {
            inner: Arc::new(Inner {
                remote,
                watches: crate::follow::Watches::default(),
                ctx,
                db,
                owner,
                lease_ms: i64::try_from(config.lease_ms).unwrap_or(i64::MAX),
                batch: Duration::from_millis(config.batch_ms),
                sessions: Mutex::new(HashMap::new()),
            }),
        })
    }

    fn stored(&self, id: &str) -> Result<Arc<Stored>, SessionError> {
        lock(&self.inner.sessions).get(id).cloned().ok_or_else(|| {
            error(
                SessionErrorKind::NotFound,
                format!("session `{id}` is not open in this store"),
            )
        })
    }

    pub(crate) fn holds(&self, id: &str) -> bool {
        lock(&self.inner.sessions).contains_key(id)
    }

    /// Commits what is queued for `session` (or for every session), in order.
    pub(crate) async fn drain(&self, session: Option<&str>) -> Result<(), SessionError> {
        let targets: Vec<Arc<Stored>> = match session {
            Some(id) => self
                .stored(id)
                .map(|stored| vec![stored])
                .unwrap_or_default(),
            None => lock(&self.inner.sessions).values().cloned().collect(),
        };
        let mut first_failure = None;
        for stored in targets {
            if let Err(problem) = self.drain_one(&stored).await {
                first_failure.get_or_insert(problem);
            }
        }
        first_failure.map_or(Ok(()), Err)
    }

    async fn drain_one(&self, stored: &Arc<Stored>) -> Result<(), SessionError> {
        let _turn = stored.draining.lock().await;
        stored.armed.store(false, Ordering::Release);
        let batch = std::mem::take(&mut *lock(&stored.queue));
        if batch.is_empty() {
            return Ok(());
        }
        let unwritten = lock(&stored.unwritten).clone();
        let statement = self.batch_statement(stored, unwritten.as_ref(), &batch);
        let committed = self.inner.db.query(statement).await.into_result();
        match committed {
            Ok(_) => {
                lock(&stored.unwritten).take();
                Ok(())
            }
            Err(problem) => {
                // A failed commit keeps its events, ahead of anything queued since; the next
                // flush tries again.
                let mut queue = lock(&stored.queue);
                let later = std::mem::take(&mut *queue);
                *queue = batch;
                queue.extend(later);
                let problem = from_db(&stored.id, problem);
                dsh_plugin_api::tracing::error!(
                    "writing session `{}` failed: {problem}",
                    stored.id
                );
                Err(problem)
            }
        }
    }

    /// One batch as one statement (`dsh_append`: one round trip, atomic): the session's row
    /// (first batch), the lease renewed (or refused), the events, the listing columns, the
    /// announcement.
    fn batch_statement(
        &self,
        stored: &Stored,
        unwritten: Option<&SessionHeader>,
        batch: &[RArc<EventRecord>],
    ) -> PgStatement {
        let mut listed = batch.to_vec();
        {
            let mut first = lock(&stored.first_message);
            if first.is_none() {
                *first = batch.iter().find(|r| is_human_message(r)).cloned();
            }
            if let Some(message) = first.as_ref()
                && !listed.iter().any(|record| record.seq == message.seq)
            {
                listed.insert(0, message.clone());
            }
        }
        let text_or_null = |value: Option<String>| value.map_or(PgValue::Null, PgValue::text);
        PgStatement::new(
            dsh_session_pg::APPEND_BATCH,
            vec![
                PgValue::text(&stored.id),
                PgValue::text(&self.inner.owner),
                PgValue::Int(self.inner.lease_ms),
                PgValue::Ints(
                    batch
                        .iter()
                        .map(|r| i64::try_from(r.seq).unwrap_or(i64::MAX))
                        .collect(),
                ),
                PgValue::Texts(batch.iter().map(|r| r.kind.clone()).collect()),
                PgValue::Ints(batch.iter().map(|r| r.time).collect()),
                PgValue::Texts(batch.iter().map(|r| r.json.clone()).collect()),
                text_or_null(listed_title(&listed)),
                last_activity(batch).map_or(PgValue::Null, PgValue::Int),
                text_or_null(unwritten.map(SessionHeader::to_line)),
                text_or_null(unwritten.and_then(|header| header.cwd.clone())),
                unwritten.map_or(PgValue::Null, |header| PgValue::Int(header.created_at)),
            ],
        )
    }

    /// Renews the leases of the sessions open here that keep them (see
    /// [`Stored::keeps_its_lease`]), a third of a lease apart, for as long as the plugin runs. A lease that cannot be renewed is reported; the next batch of that
    /// session is then refused, so nothing is written over another host's work.
    pub(crate) async fn renew_leases(self) {
        let every = Duration::from_millis(u64::try_from(self.inner.lease_ms / 3).unwrap_or(100));
        loop {
            self.inner.ctx.sleep(every).await;
            let lease = Duration::from_millis(u64::try_from(self.inner.lease_ms).unwrap_or(0));
            let held: Vec<String> = lock(&self.inner.sessions)
                .values()
                .filter(|stored| lock(&stored.unwritten).is_none())
                .filter(|stored| stored.keeps_its_lease(lease))
                .map(|stored| stored.id.clone())
                .collect();
            for id in held {
                let renewed = self
                    .inner
                    .db
                    .query(hold(&id, &self.inner.owner, self.inner.lease_ms))
                    .await
                    .into_result();
                if let Err(problem) = renewed {
                    dsh_plugin_api::tracing::warn!(
                        "the lease of session `{id}` was not renewed: {}",
                        from_db(&id, problem)
                    );
                }
            }
        }
    }

    /// Gives back every lease this host holds (shutdown, after the last drain).
    pub(crate) async fn release_all(&self) {
        let released = self
            .inner
            .db
            .query(PgStatement::new(
                "DELETE FROM dsh_leases WHERE owner = $1",
                vec![PgValue::text(&self.inner.owner)],
            ))
            .await;
        if let RErr(problem) = released {
            dsh_plugin_api::tracing::warn!("the leases were not given back: {problem}");
        }
    }

    fn register(&self, id: &str, unwritten: Option<SessionHeader>) {
        let stored = Arc::new(Stored {
            id: id.to_owned(),
            unwritten: Mutex::new(unwritten),
            queue: Mutex::new(Vec::new()),
            armed: AtomicBool::new(false),
            draining: tokio::sync::Mutex::new(()),
            first_message: Mutex::new(None),
            turn_open: AtomicBool::new(false),
            last_append: Mutex::new(Instant::now()),
        });
        lock(&self.inner.sessions).insert(id.to_owned(), stored);
    }

    async fn load(&self, id: String) -> Result<StoredSession, SessionError> {
        let db = &self.inner.db;
        let header = db
            .query(PgStatement::new(
                dsh_session_pg::SELECT_HEADER,
                vec![PgValue::text(&id)],
            ))
            .await
            .into_result()
            .map_err(|problem| from_db(&id, problem))?;
        let Some(header) = first_text(&header) else {
            return Err(error(
                SessionErrorKind::NotFound,
                format!("no stored session `{id}`"),
            ));
        };
        let answers = db
            .transaction(RVec::from(vec![
                hold(&id, &self.inner.owner, self.inner.lease_ms),
                PgStatement::new(dsh_session_pg::SELECT_LINES, vec![PgValue::text(&id)]),
            ]))
            .await
            .into_result()
            .map_err(|problem| from_db(&id, problem))?;
        let rows = answers.get(1).map(|rows| &rows.rows[..]).unwrap_or(&[]);
        let mut events = RVec::with_capacity(rows.len());
        for (index, row) in rows.iter().enumerate() {
            let seq = row.first().and_then(PgValue::as_int);
            if seq != i64::try_from(index).ok() {
                return Err(error(
                    SessionErrorKind::Unreadable,
                    format!("session `{id}`: event {index} is stored with seq {seq:?}"),
                ));
            }
            let line = row.get(1).and_then(PgValue::as_text).unwrap_or_default();
            events.push(RString::from(line));
        }
        self.register(&id, None);
        Ok(StoredSession {
            header: RString::from(header),
            events,
            repaired: RNone,
        })
    }
}

/// The first column of the first row, as text.
pub(crate) fn first_text(rows: &PgRows) -> Option<String> {
    rows.rows.first()?.first()?.as_text().map(str::to_owned)
}

pub(crate) fn done<T>(result: Result<T, SessionError>) -> RResult<T, SessionError> {
    match result {
        Ok(value) => ROk(value),
        Err(problem) => RErr(problem),
    }
}

impl SessionStore for Store {
    fn create(&self, header: RString) -> FfiFuture<RResult<(), SessionError>> {
        let store = self.clone();
        async move {
            let parsed = SessionHeader::parse("session header", &header)
                .map_err(|problem| error(SessionErrorKind::Invalid, problem.to_string()));
            done(parsed.map(|header| {
                let id = header.id.clone();
                store.register(&id, Some(header));
            }))
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
        for record in events.iter() {
            match record.kind.as_str() {
                kinds::TURN_START => stored.turn_open.store(true, Ordering::Release),
                kinds::TURN_END => stored.turn_open.store(false, Ordering::Release),
                _ => {}
            }
        }
        *lock(&stored.last_append) = Instant::now();
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
                return RErr(error(SessionErrorKind::Storage, problem.to_string()));
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
            // A session whose events could not be written stays open (and leased), so a later
            // flush can still write them.
            if drained.is_ok() && lock(&store.inner.sessions).remove(session.as_str()).is_some() {
                let released = store
                    .inner
                    .db
                    .query(PgStatement::new(
                        "DELETE FROM dsh_leases WHERE session = $1 AND owner = $2",
                        vec![
                            PgValue::text(session.as_str()),
                            PgValue::text(&store.inner.owner),
                        ],
                    ))
                    .await;
                if let RErr(problem) = released {
                    dsh_plugin_api::tracing::warn!(
                        "the lease of session `{session}` was not given back (it expires): {problem}"
                    );
                }
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
        async move {
            let viewed = crate::follow::view(&store, id.as_str()).await;
            if viewed.is_ok() {
                // What was committed between the read and the watch (its notification found
                // no watch yet) is read now rather than at the next commit.
                let catching = store.clone();
                let _ = store.inner.ctx.spawn(async move {
                    crate::follow::catch_up(&catching, id.as_str()).await;
                });
            }
            done(viewed)
        }
        .into_ffi()
    }

    fn delete(&self, id: RString) -> FfiFuture<RResult<(), SessionError>> {
        let store = self.clone();
        async move { done(crate::listing::delete(&store, id.as_str()).await) }.into_ffi()
    }

    fn restore(&self, id: RString) -> FfiFuture<RResult<(), SessionError>> {
        let store = self.clone();
        async move { done(crate::listing::restore(&store, id.as_str()).await) }.into_ffi()
    }

    fn archive(&self, id: RString, archived: bool) -> FfiFuture<RResult<(), SessionError>> {
        let store = self.clone();
        async move { done(crate::listing::archive(&store, id.as_str(), archived).await) }.into_ffi()
    }

    fn search(
        &self,
        query: RString,
        limit: u32,
    ) -> FfiFuture<RResult<Json<Vec<SearchHit>>, SessionError>> {
        let store = self.clone();
        async move {
            // What is queued is committed first, so a search finds the latest messages.
            let searched = match store.drain(None).await {
                Ok(()) => crate::listing::search(&store, query.as_str(), limit).await,
                Err(problem) => Err(problem),
            };
            done(searched.map(|hits| Json::encode(&hits)))
        }
        .into_ffi()
    }

    fn list(&self) -> FfiFuture<RResult<Json<Vec<SessionSummary>>, SessionError>> {
        let store = self.clone();
        async move { done(crate::listing::list(&store).await.map(|l| Json::encode(&l))) }.into_ffi()
    }
}
