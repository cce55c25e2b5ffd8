//! The live side of the connections: which of them follow which sessions, and one fold per
//! followed session, fed by `session/event` as events commit. Every update goes to every
//! follower in seq order; a follower whose queue is full is dropped from the session and told to
//! resynchronize, so one slow tab cannot hold the others back or grow the server without bound.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RArc, RString};
use dsh_agents_seam::{AGENTS_SERVICE, AgentsService};
use dsh_client_protocol::{ServerFrame, SessionUpdate};
use dsh_clients_seam::FrameSinkBox;
use dsh_plugin_api::{Context, lock};
use dsh_protocol::InboxListing;
use dsh_sessions_seam::{
    EventRecord, SESSIONS_SERVICE, SessionBox, SessionError, SessionErrorKind, SessionsService,
};

use crate::fold::{Change, Fold};
use crate::fold_cache::FoldCache;

/// How long an ask waits for a client that answers to come back after the last one left.
pub(crate) const ANSWERER_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// One connection's outgoing side: the transport's sink, and the sessions it must be told to
/// resynchronize because a frame of theirs did not fit.
#[derive(Clone)]
pub(crate) struct Outbox {
    pub(crate) id: u64,
    sink: Arc<FrameSinkBox>,
    /// Whether this client answers approvals and questions.
    answers: Arc<AtomicBool>,
    /// Sessions this connection must be told to resync (a frame of theirs was refused).
    lagged: Arc<Mutex<Vec<String>>>,
}

impl Outbox {
    pub(crate) fn new(id: u64, sink: FrameSinkBox, answers: bool) -> Self {
        Self {
            id,
            sink: Arc::new(sink),
            answers: Arc::new(AtomicBool::new(answers)),
            lagged: Arc::default(),
        }
    }

    /// Sends a frame, after the resync frames owed; `false` when the sink refused it (its
    /// queue is full or the client is gone).
    pub(crate) fn push(&self, frame: &ServerFrame) -> bool {
        let owed = std::mem::take(&mut *lock(&self.lagged));
        for (index, session_id) in owed.iter().enumerate() {
            let resync = ServerFrame::Resync {
                session_id: session_id.clone(),
                reason: "this client fell too far behind".to_owned(),
            };
            if !self.send(&resync) {
                lock(&self.lagged).extend(owed[index..].iter().cloned());
                return false;
            }
        }
        self.send(frame)
    }

    fn send(&self, frame: &ServerFrame) -> bool {
        let text = serde_json::to_string(frame).unwrap_or_default();
        self.sink.send(RString::from(text))
    }

    pub(crate) fn answers(&self) -> bool {
        self.answers.load(Ordering::Relaxed)
    }

    pub(crate) fn set_answers(&self, answers: bool) {
        self.answers.store(answers, Ordering::Relaxed);
    }
}

struct Follower {
    outbox: Outbox,
    /// Updates up to this seq were sent (by the replay or live).
    sent_through: Option<u64>,
}

struct Followed {
    fold: Fold,
    followers: Vec<Follower>,
    /// Another host's commits that came while this host read its copy of the session (see
    /// [`Hub::remote`]): `Some` until the copy is folded.
    pending: Option<Vec<RArc<EventRecord>>>,
}

/// Why a session cannot be followed; the page is told in a `resync` frame.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotFollowed {
    #[error("no `sessions` service")]
    NoSessions,
    #[error("{0}")]
    Open(SessionError),
}

/// Every followed session of this server.
pub(crate) struct Hub {
    ctx: Context,
    followed: Mutex<HashMap<String, Followed>>,
    connections: Mutex<Vec<Outbox>>,
    next_connection: AtomicU64,
    /// Woken when a connection goes, so asks waiting for an answer notice when nobody is left
    /// to give one.
    departed: tokio::sync::Notify,
}

fn update(session: &str, record: &EventRecord, change: Change) -> Option<ServerFrame> {
    if change.ops.is_empty()
        && change.running.is_none()
        && change.title.is_none()
        && change.stats.is_none()
    {
        return None;
    }
    Some(ServerFrame::Update(SessionUpdate {
        session_id: session.to_owned(),
        seq: record.seq,
        time: record.time,
        ops: change.ops,
        running: change.running,
        title: change.title,
        stats: change.stats,
    }))
}

impl Hub {
    pub(crate) fn new(ctx: Context) -> Self {
        Self {
            ctx,
            followed: Mutex::default(),
            connections: Mutex::default(),
            next_connection: AtomicU64::new(1),
            departed: tokio::sync::Notify::new(),
        }
    }

    /// A new connection's outbox, its frames going to `sink`.
    pub(crate) fn connect(&self, sink: FrameSinkBox, answers: bool) -> Outbox {
        let id = self.next_connection.fetch_add(1, Ordering::Relaxed);
        let outbox = Outbox::new(id, sink, answers);
        lock(&self.connections).push(outbox.clone());
        outbox
    }

    /// How many connected clients answer approvals and questions.
    pub(crate) fn answerer_count(&self) -> usize {
        lock(&self.connections)
            .iter()
            .filter(|outbox| outbox.answers())
            .count()
    }

    /// Forgets a closed connection everywhere.
    pub(crate) fn disconnect(&self, connection: u64) {
        lock(&self.connections).retain(|outbox| outbox.id != connection);
        let mut followed = lock(&self.followed);
        for session in followed.values_mut() {
            session.followers.retain(|f| f.outbox.id != connection);
        }
        followed.retain(|_, session| !session.followers.is_empty());
        drop(followed);
        self.departed.notify_waiters();
    }

    /// Ends once no connected client has answered approvals and questions for
    /// [`ANSWERER_GRACE`]: a page being reloaded comes back within it, a client that quit
    /// does not.
    pub(crate) async fn no_answerers(&self) {
        loop {
            let departed = self.departed.notified();
            let mut departed = std::pin::pin!(departed);
            departed.as_mut().enable();
            if self.answerer_count() == 0 {
                self.ctx.sleep(ANSWERER_GRACE).await;
                if self.answerer_count() == 0 {
                    return;
                }
                continue;
            }
            departed.await;
        }
    }

    /// A frame for every connection (a session appeared, a status changed).
    pub(crate) fn broadcast(&self, frame: &ServerFrame) {
        for outbox in lock(&self.connections).iter() {
            let _ = outbox.push(frame);
        }
    }

    /// Starts sending `session`'s updates after `after_seq` to `outbox`: the replay, folded from
    /// the log, then `session/subscribed`, then live ones. The log is read under the hub's lock,
    /// which `session/event` also takes, so no event falls between the replay and the live feed.
    pub(crate) async fn subscribe(
        &self,
        outbox: &Outbox,
        session_id: &str,
        after_seq: Option<u64>,
        folds: &FoldCache,
    ) -> Result<(), NotFollowed> {
        let session = self.open_or_view(session_id).await?;
        let mut followed = lock(&self.followed);
        let entry = followed
            .entry(session_id.to_owned())
            .or_insert_with(|| Followed {
                // Caught up quietly below (what it would say now goes nowhere), then it
                // speaks for the live events. A history read just before (as a client does
                // to open a session) left a fold to start from.
                fold: folds.copy(&session).unwrap_or_else(Fold::quiet),
                followers: Vec::new(),
                pending: None,
            });
        entry.followers.retain(|f| f.outbox.id != outbox.id);
        let count = session.event_count();
        // A follower that has seen the whole log (a client that just read the history) needs
        // no replay: only the shared fold catches up, on what it has not folded yet.
        if entry.pending.is_none()
            && after_seq.is_some_and(|after| after.saturating_add(1) >= count)
        {
            let from = entry.fold.last_seq.map_or(0, |last| last + 1).min(count);
            for record in session.events(from, count).iter() {
                entry.fold.apply(record);
            }
            entry.fold.speak();
            self.subscribed(entry, outbox, session_id, count.checked_sub(1));
            return Ok(());
        }
        let mut records = session.events(0, count).into_vec();
        // Another host's commits that came while its copy was read continue it, in order.
        for record in entry.pending.take().unwrap_or_default() {
            if record.seq == records.len() as u64 {
                records.push(record);
            }
        }
        // The shared fold catches up on what it has not seen; the replay is a fold of its own,
        // quiet through what the follower has seen (`after_seq`: nothing is rendered for it),
        // so this follower gets exactly the updates after that.
        let mut replay = Fold::quiet();
        let mut overflowed = false;
        for record in records.iter() {
            if entry.fold.last_seq.is_none_or(|last| record.seq > last) {
                entry.fold.apply(record);
            }
            let seen = after_seq.is_some_and(|after| record.seq <= after);
            if !seen && !overflowed {
                replay.speak();
            }
            let change = replay.apply(record);
            if seen || overflowed {
                continue;
            }
            if let Some(frame) = update(session_id, record, change) {
                overflowed = !outbox.push(&frame);
            }
        }
        entry.fold.speak();
        // A tally the replay's last events held back: this follower joins the live feed after
        // them, where nothing else would bring it.
        if let (Some(stats), Some(record)) = (replay.take_held_stats(), records.last())
            && !overflowed
            && after_seq.is_none_or(|after| record.seq > after)
        {
            let change = Change {
                stats: Some(stats),
                ..Change::default()
            };
            if let Some(frame) = update(session_id, record, change) {
                overflowed = !outbox.push(&frame);
            }
        }
        if overflowed {
            drop(followed);
            let _ = outbox.push(&ServerFrame::Resync {
                session_id: session_id.to_owned(),
                reason: "the replay is larger than the queue: fetch the history first".to_owned(),
            });
            return Ok(());
        }
        self.subscribed(entry, outbox, session_id, replay.last_seq);
        Ok(())
    }

    /// Tells `outbox` it follows `session_id` from after `last_seq` (with the session's queue
    /// and jobs), then adds it to the followers. Called with the followed sessions locked, so
    /// no live event passes between the catch-up and the follower's joining.
    fn subscribed(
        &self,
        entry: &mut Followed,
        outbox: &Outbox,
        session_id: &str,
        last_seq: Option<u64>,
    ) {
        let _ = outbox.push(&ServerFrame::Subscribed {
            session_id: session_id.to_owned(),
            last_seq,
        });
        if let Some(queue) = self.queue_of(session_id) {
            let _ = outbox.push(&ServerFrame::Queue {
                session_id: session_id.to_owned(),
                queue,
            });
        }
        if let Some(jobs) = crate::jobs::frame(&self.ctx, session_id) {
            let _ = outbox.push(&jobs);
        }
        entry.followers.push(Follower {
            outbox: outbox.clone(),
            sent_through: last_seq,
        });
    }

    /// Whether a page follows `session_id`.
    pub(crate) fn is_followed(&self, session_id: &str) -> bool {
        lock(&self.followed)
            .get(session_id)
            .is_some_and(|session| !session.followers.is_empty())
    }

    /// Whether `session_id` is followed here, or its view for a first follower is being read
    /// (what a store that watches it asks before reading its new events).
    pub(crate) fn is_followed_or_opening(&self, session_id: &str) -> bool {
        lock(&self.followed).contains_key(session_id)
    }

    /// A frame for every follower of `session_id`.
    pub(crate) fn to_followers(&self, session_id: &str, frame: &ServerFrame) {
        if let Some(session) = lock(&self.followed).get(session_id) {
            for follower in &session.followers {
                let _ = follower.outbox.push(frame);
            }
        }
    }

    pub(crate) fn unsubscribe(&self, outbox: &Outbox, session_id: &str) {
        let mut followed = lock(&self.followed);
        if let Some(session) = followed.get_mut(session_id) {
            session.followers.retain(|f| f.outbox.id != outbox.id);
            if session.followers.is_empty() {
                followed.remove(session_id);
            }
        }
    }

    /// `session/event`: folds a committed event into its session, if followed, and sends the
    /// update to each follower that has not had it.
    pub(crate) fn committed(&self, record: &EventRecord) {
        let mut followed = lock(&self.followed);
        let Some(session) = followed.get_mut(record.session.as_str()) else {
            return;
        };
        if session.fold.last_seq.is_some_and(|last| record.seq <= last) {
            return;
        }
        let change = session.fold.apply(record);
        let Some(frame) = update(record.session.as_str(), record, change) else {
            return;
        };
        session.followers.retain_mut(|follower| {
            if follower.sent_through.is_some_and(|sent| record.seq <= sent) {
                return true;
            }
            if follower.outbox.push(&frame) {
                follower.sent_through = Some(record.seq);
                return true;
            }
            lock(&follower.outbox.lagged).push(record.session.to_string());
            false
        });
    }

    /// What the inbox of an agent's session holds (`None` for a session without an agent).
    fn queue_of(&self, session_id: &str) -> Option<InboxListing> {
        let agents = self
            .ctx
            .get::<AgentsService>(AGENTS_SERVICE)
            .ok()
            .flatten()?;
        agents
            .inbox(RString::from(session_id))
            .into_result()
            .ok()?
            .decode()
            .ok()
    }

    /// The session, opened here; or, when another host holds it, a copy of it, with the
    /// commits that come while the copy is read kept for [`subscribe`](Self::subscribe).
    async fn open_or_view(&self, session_id: &str) -> Result<SessionBox, NotFollowed> {
        match self.open(session_id).await {
            Err(NotFollowed::Open(problem)) if problem.kind == SessionErrorKind::Locked => {}
            opened => return opened,
        }
        let sessions = match self.ctx.get::<SessionsService>(SESSIONS_SERVICE) {
            Ok(Some(sessions)) => sessions,
            _ => return Err(NotFollowed::NoSessions),
        };
        lock(&self.followed)
            .entry(session_id.to_owned())
            .or_insert_with(|| Followed {
                fold: Fold::quiet(),
                followers: Vec::new(),
                pending: None,
            })
            .pending
            .get_or_insert_with(Vec::new);
        let viewed = sessions
            .view(RString::from(session_id))
            .await
            .into_result()
            .map_err(NotFollowed::Open);
        if viewed.is_err() {
            let mut followed = lock(&self.followed);
            if followed
                .get(session_id)
                .is_some_and(|entry| entry.followers.is_empty())
            {
                followed.remove(session_id);
            }
        }
        viewed
    }

    /// `session/remote-event`: a commit of another host to a session followed here. Kept while
    /// the copy is read; folded and sent like a local commit after; a gap (a commit this host
    /// never got) sends the followers back to the history.
    pub(crate) fn remote(&self, record: &EventRecord) {
        let mut followed = lock(&self.followed);
        let Some(entry) = followed.get_mut(record.session.as_str()) else {
            return;
        };
        if let Some(pending) = &mut entry.pending {
            pending.push(RArc::new(record.clone()));
            return;
        }
        let expected = entry.fold.last_seq.map_or(0, |last| last + 1);
        if record.seq > expected {
            let frame = ServerFrame::Resync {
                session_id: record.session.to_string(),
                reason: format!(
                    "events {expected} to {} of another host did not arrive: fetch the history",
                    record.seq - 1
                ),
            };
            for follower in &entry.followers {
                let _ = follower.outbox.push(&frame);
            }
            followed.remove(record.session.as_str());
            return;
        }
        drop(followed);
        self.committed(record);
    }

    async fn open(&self, session_id: &str) -> Result<SessionBox, NotFollowed> {
        let sessions = match self.ctx.get::<SessionsService>(SESSIONS_SERVICE) {
            Ok(Some(sessions)) => sessions,
            _ => return Err(NotFollowed::NoSessions),
        };
        sessions
            .open(RString::from(session_id))
            .await
            .into_result()
            .map_err(NotFollowed::Open)
    }
}
