//! The latest event of one type in each session, read incrementally: a reader that asks at
//! every step (a session's sandbox mode, its approval policy) reads only what was logged since
//! it last asked, so its cost does not grow with the session. At most [`KEPT_SESSIONS`] are
//! remembered: past that the memory starts over, so a long-lived host does not grow with
//! every session it ever saw.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Mutex;

use dsh_plugin_api::lock;
use dsh_protocol::EventData;

use crate::SessionBox;

/// Sessions remembered at once.
const KEPT_SESSIONS: usize = 256;

/// Per session: how far its log was read, and the latest `E` found so far (as `T`: the event
/// itself, or what [`LatestOf::of_derived`] makes of it).
pub struct LatestOf<E, T = E> {
    seen: Mutex<HashMap<String, (u64, Option<T>)>>,
    event: PhantomData<fn() -> E>,
}

impl<E, T> Default for LatestOf<E, T> {
    fn default() -> Self {
        Self {
            seen: Mutex::new(HashMap::new()),
            event: PhantomData,
        }
    }
}

impl<E: EventData + Clone> LatestOf<E> {
    /// The latest `E` of `session` (an event that does not read is skipped).
    pub fn of(&self, session: &SessionBox) -> Option<E> {
        self.of_derived(session, |event| event)
    }
}

impl<E: EventData, T: Clone> LatestOf<E, T> {
    /// The latest `E` of `session` as `derive` makes it. `derive` runs once per new latest
    /// event, not at every ask: what is made of an event that repeats at every step (its text
    /// written out, say) is made once.
    pub fn of_derived(&self, session: &SessionBox, derive: impl FnOnce(E) -> T) -> Option<T> {
        let id = session.id().to_string();
        let count = session.event_count();
        let mut seen = lock(&self.seen);
        if seen.len() >= KEPT_SESSIONS && !seen.contains_key(&id) {
            seen.clear();
        }
        let entry = seen.entry(id).or_insert((0, None));
        // A log shorter than what was read is another log under the same id: read it anew.
        if count < entry.0 {
            *entry = (0, None);
        }
        if count > entry.0 {
            let newest = session
                .events(entry.0, count)
                .iter()
                .rev()
                .find_map(|record| record.decode::<E>()?.ok());
            if let Some(newest) = newest {
                entry.1 = Some(derive(newest));
            }
            entry.0 = count;
        }
        entry.1.clone()
    }

    /// Forgets `session` (it was closed or disposed).
    pub fn forget(&self, session: &str) {
        lock(&self.seen).remove(session);
    }
}
