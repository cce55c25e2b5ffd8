//! The folds of the sessions read most recently, kept so that reading one again (a person going
//! back to a conversation, a card opened whole) folds only what was logged since, not the whole
//! log. A handful are kept: a fold holds its items' texts, and the list of kept ones is cheap to
//! walk.

use std::collections::VecDeque;
use std::sync::Mutex;

use dsh_plugin_api::lock;
use dsh_sessions_seam::SessionBox;

use crate::fold::Fold;

/// Folds kept at once.
const KEPT: usize = 4;

#[derive(Default)]
pub(crate) struct FoldCache {
    kept: Mutex<VecDeque<(String, Fold)>>,
}

impl FoldCache {
    /// `read` on `session`'s fold, caught up with its log.
    pub(crate) fn read<R>(&self, session: &SessionBox, read: impl FnOnce(&Fold) -> R) -> R {
        let id = session.id().to_string();
        let count = session.event_count();
        // Taken out while it catches up, so other sessions' readers do not wait for it.
        let taken = {
            let mut kept = lock(&self.kept);
            let at = kept.iter().position(|(kept_id, _)| *kept_id == id);
            at.and_then(|at| kept.remove(at)).map(|(_, fold)| fold)
        };
        let mut fold = taken.unwrap_or_else(Fold::quiet);
        let folded = fold.last_seq.map_or(0, |seq| seq + 1);
        // A log shorter than what was folded is another log under this id: fold it anew.
        let from = if folded > count {
            fold = Fold::quiet();
            0
        } else {
            folded
        };
        for record in session.events(from, count).iter() {
            fold.apply(record);
        }
        let answer = read(&fold);
        let mut kept = lock(&self.kept);
        kept.retain(|(kept_id, _)| *kept_id != id);
        kept.push_front((id, fold));
        kept.truncate(KEPT);
        answer
    }

    /// A copy of `session`'s kept fold (quiet, as every kept one is), if one is kept and the
    /// log still holds everything it folded: a new follower of the session starts from it
    /// instead of folding the whole log again.
    pub(crate) fn copy(&self, session: &SessionBox) -> Option<Fold> {
        let id = session.id().to_string();
        let count = session.event_count();
        let kept = lock(&self.kept);
        let (_, fold) = kept.iter().find(|(kept_id, _)| *kept_id == id)?;
        (fold.last_seq.map_or(0, |seq| seq + 1) <= count).then(|| fold.clone())
    }
}
