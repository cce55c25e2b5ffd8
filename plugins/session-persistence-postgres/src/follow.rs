//! Following sessions other hosts hold: `view` reads a session without its lease and watches
//! it; every commit is announced on the events channel, and for a watched session this host
//! does not hold the new rows are read from the last seq it has and emitted as
//! `session/remote-event`, in order. A notification that is missed (the listening connection
//! broke, or it came while the view was read) costs nothing: the next read starts from the seq
//! the watch has, and a reconnect reads every watch up to date. A watch lasts while a reader
//! here follows the session (`session/followed`); the first commit after that ends it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abi_stable::std_types::{RNone, RString, RVec};
use dsh_plugin_api::io::postgres::{PgStatement, PgValue};
use dsh_plugin_api::lock;
use dsh_sessions_seam::{
    EventRecord, SESSION_FOLLOWED, SessionError, SessionErrorKind, StoredSession,
};

use crate::schema::EVENTS_CHANNEL;
use crate::store::{Store, error, first_text, from_db};

/// What this host has of a watched session: the seq it reads from next. The async lock
/// serializes reads of one session, so no event is emitted twice.
type Watch = Arc<tokio::sync::Mutex<u64>>;

#[derive(Default)]
pub(crate) struct Watches {
    sessions: Mutex<HashMap<String, Watch>>,
}

impl Watches {
    fn get(&self, id: &str) -> Option<Watch> {
        lock(&self.sessions).get(id).cloned()
    }

    fn all(&self) -> Vec<String> {
        lock(&self.sessions).keys().cloned().collect()
    }

    /// Ends `watch` of `id`, unless a later view replaced it (that one watches on).
    fn forget(&self, id: &str, watch: &Watch) {
        let mut sessions = lock(&self.sessions);
        if sessions.get(id).is_some_and(|now| Arc::ptr_eq(now, watch)) {
            sessions.remove(id);
        }
    }
}

/// The stored session as it is, read without its lease; watched from its last seq on.
pub(crate) async fn view(store: &Store, id: &str) -> Result<StoredSession, SessionError> {
    let watches = &store.inner.watches;
    let answers = store
        .inner
        .db
        .transaction(RVec::from(vec![
            PgStatement::new(dsh_session_pg::SELECT_HEADER, vec![PgValue::text(id)]),
            PgStatement::new(
                "SELECT line FROM dsh_events WHERE session = $1 ORDER BY seq",
                vec![PgValue::text(id)],
            ),
        ]))
        .await
        .into_result()
        .map_err(|problem| from_db(id, problem))?;
    let Some(header) = answers.first().and_then(first_text) else {
        return Err(error(
            SessionErrorKind::NotFound,
            format!("no stored session `{id}`"),
        ));
    };
    let events: RVec<RString> = answers
        .get(1)
        .map(|rows| {
            rows.rows
                .iter()
                .filter_map(|row| row.first().and_then(PgValue::as_text).map(RString::from))
                .collect()
        })
        .unwrap_or_default();
    let next = events.len() as u64;
    let watch = Arc::new(tokio::sync::Mutex::new(next));
    let replaced = lock(&watches.sessions).insert(id.to_owned(), watch);
    // A view taken again starts over from what it read: the earlier watch's reader may be
    // mid-read, and its later events come through the new one.
    drop(replaced);
    Ok(StoredSession {
        header: RString::from(header),
        events,
        repaired: RNone,
    })
}

/// Reads the rows of watched session `id` after the seq the watch has and emits them.
pub(crate) async fn catch_up(store: &Store, id: &str) {
    let Some(watch) = store.inner.watches.get(id) else {
        return;
    };
    if store.holds(id) {
        // This host writes it now: its own events reach its readers as `session/event`.
        return;
    }
    let followed = store
        .inner
        .ctx
        .bail(&SESSION_FOLLOWED, &RString::from(id))
        .is_ok_and(|answer| answer == Some(true));
    if !followed {
        // Viewed only to be read, or its last follower left: no more reads for it. A later
        // view watches it again from what that view reads.
        store.inner.watches.forget(id, &watch);
        store.inner.ctx.log(
            dsh_plugin_api::LogLevel::Info,
            &format!(
                "session `{id}`: nobody here follows it any more; its commits are no longer read"
            ),
        );
        return;
    }
    let mut next = watch.lock().await;
    let rows = store
        .inner
        .db
        .query(PgStatement::new(
            "SELECT seq, kind, time, line FROM dsh_events WHERE session = $1 AND seq >= $2
             ORDER BY seq",
            vec![
                PgValue::text(id),
                PgValue::Int(i64::try_from(*next).unwrap_or(i64::MAX)),
            ],
        ))
        .await
        .into_result();
    let rows = match rows {
        Ok(rows) => rows,
        Err(problem) => {
            dsh_plugin_api::tracing::warn!("following session `{id}`: {problem}");
            return;
        }
    };
    for row in rows.rows.iter() {
        let seq = row
            .first()
            .and_then(PgValue::as_int)
            .and_then(|seq| u64::try_from(seq).ok());
        if seq != Some(*next) {
            // Rows come in seq order from the watch's seq on; anything else is not this log.
            break;
        }
        let record = EventRecord {
            session: RString::from(id),
            seq: *next,
            kind: RString::from(row.get(1).and_then(PgValue::as_text).unwrap_or_default()),
            time: row.get(2).and_then(PgValue::as_int).unwrap_or(0),
            json: RString::from(row.get(3).and_then(PgValue::as_text).unwrap_or_default()),
        };
        let _ = store.inner.remote.emit(&record);
        *next += 1;
    }
}

/// Listens on the events channel for as long as the plugin runs, listening again (and reading
/// every watch up to date) whenever the connection breaks.
pub(crate) async fn listen(store: Store) {
    loop {
        let listener = store
            .inner
            .db
            .listen(RString::from(EVENTS_CHANNEL))
            .await
            .into_result();
        let listener = match listener {
            Ok(listener) => listener,
            Err(problem) => {
                dsh_plugin_api::tracing::warn!(
                    "listening for other hosts' commits failed (again in 1 s): {problem}"
                );
                store.inner.ctx.sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        for id in store.inner.watches.all() {
            catch_up(&store, &id).await;
        }
        while let Some(note) = listener.next().await.into_option() {
            let Some((id, _range)) = note.payload.as_str().split_once(' ') else {
                continue;
            };
            catch_up(&store, id).await;
        }
    }
}
