//! One session's inbox: the two lists and the splices that change them. Each operation answers
//! the `agent/inbox/spliced` event to log; the caller logs it and applies the change only when
//! the log took it, so the list never holds what the log does not say.

use dsh_protocol::{InboxSplicedEvent, InboxTarget, Message, SpliceOutcome};
use dsh_sessions_seam::SessionBox;

#[derive(Default, Debug, PartialEq)]
pub(crate) struct Inbox {
    pub(crate) next_turn: Vec<Message>,
    pub(crate) next_step: Vec<Message>,
}

impl Inbox {
    /// The inbox a log's splices leave behind, so an inbox survives a reload of this plugin
    /// or a restart: every insertion and removal was logged.
    pub(crate) fn rebuilt(splices: impl IntoIterator<Item = InboxSplicedEvent>) -> Self {
        let mut inbox = Self::default();
        for splice in splices {
            let list = inbox.list_mut(splice.target);
            let start = usize::try_from(splice.start)
                .unwrap_or(usize::MAX)
                .min(list.len());
            let removed = splice
                .removed_count
                .and_then(|count| usize::try_from(count).ok())
                .unwrap_or(0)
                .min(list.len() - start);
            list.splice(start..start + removed, splice.inserted);
        }
        inbox
    }

    /// The inbox of `session`'s log. A splice that does not read is skipped: it cannot say
    /// what it changed.
    pub(crate) fn of_log(session: &SessionBox) -> Self {
        let splices: Vec<InboxSplicedEvent> = session
            .events(0, session.event_count())
            .iter()
            .filter_map(|record| record.decode::<InboxSplicedEvent>())
            .filter_map(Result::ok)
            .collect();
        Self::rebuilt(splices)
    }

    pub(crate) fn list_mut(&mut self, target: InboxTarget) -> &mut Vec<Message> {
        match target {
            InboxTarget::NextTurn => &mut self.next_turn,
            InboxTarget::NextStep => &mut self.next_step,
        }
    }

    pub(crate) fn has_pending(&self) -> bool {
        !self.next_turn.is_empty() || !self.next_step.is_empty()
    }

    /// Whether a message id is already pending (ids are unique across both lists).
    pub(crate) fn holds(&self, id: &str) -> bool {
        self.next_turn
            .iter()
            .chain(&self.next_step)
            .any(|message| message.id == id)
    }

    /// Where the pending message `id` waits: its list and its place in it.
    pub(crate) fn position(&self, id: &str) -> Option<(InboxTarget, usize)> {
        let find = |list: &Vec<Message>| list.iter().position(|message| message.id == id);
        find(&self.next_turn)
            .map(|at| (InboxTarget::NextTurn, at))
            .or_else(|| find(&self.next_step).map(|at| (InboxTarget::NextStep, at)))
    }

    /// The splice that appends `message` to `target`.
    pub(crate) fn append_splice(
        &self,
        target: InboxTarget,
        message: &Message,
    ) -> InboxSplicedEvent {
        let start = match target {
            InboxTarget::NextTurn => self.next_turn.len(),
            InboxTarget::NextStep => self.next_step.len(),
        };
        InboxSplicedEvent {
            target,
            start: start as u64,
            removed_count: None,
            inserted: vec![message.clone()],
            outcome: None,
        }
    }

    /// The splice that clears `count` messages of `target` unrun (a cancel).
    pub(crate) fn cancel_splice(target: InboxTarget, count: usize) -> InboxSplicedEvent {
        InboxSplicedEvent {
            outcome: Some(SpliceOutcome::Canceled),
            ..Self::claim_splice(target, count)
        }
    }

    /// The splice that claims `count` messages from the head of `target`.
    pub(crate) fn claim_splice(target: InboxTarget, count: usize) -> InboxSplicedEvent {
        InboxSplicedEvent {
            target,
            start: 0,
            removed_count: Some(count as u64),
            inserted: Vec::new(),
            outcome: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::{ContentBlock, MessageSource};

    fn message(id: &str) -> Message {
        Message::user(id, vec![ContentBlock::text(id)], MessageSource::user())
    }

    fn insert(target: InboxTarget, start: u64, id: &str) -> InboxSplicedEvent {
        InboxSplicedEvent {
            target,
            start,
            removed_count: None,
            inserted: vec![message(id)],
            outcome: None,
        }
    }

    #[test]
    fn an_inbox_is_what_its_logged_splices_leave() {
        let splices = [
            insert(InboxTarget::NextTurn, 0, "a"),
            insert(InboxTarget::NextTurn, 1, "b"),
            insert(InboxTarget::NextStep, 0, "c"),
            Inbox::claim_splice(InboxTarget::NextTurn, 1),
            Inbox::claim_splice(InboxTarget::NextStep, 1),
        ];
        let inbox = Inbox::rebuilt(splices);
        assert_eq!(inbox.next_turn, vec![message("b")]);
        assert!(inbox.next_step.is_empty());
    }

    #[test]
    fn a_splice_past_the_end_is_clamped_not_a_panic() {
        let mut splice = insert(InboxTarget::NextTurn, 5, "x");
        splice.removed_count = Some(3);
        let inbox = Inbox::rebuilt([splice]);
        assert_eq!(inbox.next_turn, vec![message("x")]);
    }

    #[test]
    fn cancel_splices_name_what_they_drop() {
        let splice = Inbox::cancel_splice(InboxTarget::NextStep, 1);
        assert_eq!(
            serde_json::to_value(&splice).unwrap(),
            serde_json::json!({"target": "next-step", "start": 0, "removedCount": 1, "inserted": [], "outcome": "canceled"})
        );
        // A rebuilt inbox applies a cancel like any removal.
        let rebuilt = Inbox::rebuilt([insert(InboxTarget::NextStep, 0, "s"), splice]);
        assert!(!rebuilt.has_pending());
    }
}
