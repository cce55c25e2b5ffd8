//! One session's inbox: the two lists and the splices that change them. Each operation answers
//! the `agent/inbox/spliced` data to log; the caller logs it and applies the change only when
//! the log took it, so the list never holds what the log does not say.

use serde_json::{Value, json};

use dsh_session_seam::SessionBox;

pub(crate) const NEXT_TURN: &str = "next-turn";
pub(crate) const NEXT_STEP: &str = "next-step";
pub(crate) const SPLICED: &str = "agent/inbox/spliced";

#[derive(Default, Debug, PartialEq)]
pub(crate) struct Inbox {
    pub(crate) next_turn: Vec<Value>,
    pub(crate) next_step: Vec<Value>,
}

/// Which list, by its logged name.
pub(crate) fn target_of(name: &str) -> Result<&'static str, String> {
    match name {
        NEXT_TURN => Ok(NEXT_TURN),
        NEXT_STEP => Ok(NEXT_STEP),
        other => Err(format!(
            "inbox target `{other}` is not next-turn or next-step"
        )),
    }
}

impl Inbox {
    /// The inbox a log's splices leave behind, so an inbox survives a reload of this plugin
    /// or a restart: every insertion and removal was logged.
    pub(crate) fn rebuilt<'a>(splices: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut inbox = Self::default();
        for splice in splices {
            let list = match splice["target"].as_str() {
                Some(NEXT_TURN) => &mut inbox.next_turn,
                Some(NEXT_STEP) => &mut inbox.next_step,
                _ => continue,
            };
            let start = splice["start"]
                .as_u64()
                .and_then(|start| usize::try_from(start).ok())
                .unwrap_or(0)
                .min(list.len());
            let removed = splice["removedCount"]
                .as_u64()
                .and_then(|count| usize::try_from(count).ok())
                .unwrap_or(0)
                .min(list.len() - start);
            let inserted: Vec<Value> = splice["inserted"].as_array().cloned().unwrap_or_default();
            list.splice(start..start + removed, inserted);
        }
        inbox
    }

    pub(crate) fn of_log(session: &SessionBox) -> Self {
        let splices: Vec<Value> = session
            .events(0, session.event_count())
            .iter()
            .filter(|record| record.kind.as_str() == SPLICED)
            .filter_map(|record| serde_json::from_str::<Value>(&record.json).ok())
            .map(|event| event["data"].clone())
            .collect();
        Self::rebuilt(&splices)
    }

    pub(crate) fn list_mut(&mut self, target: &str) -> &mut Vec<Value> {
        match target {
            NEXT_TURN => &mut self.next_turn,
            _ => &mut self.next_step,
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
            .any(|message| message["id"].as_str() == Some(id))
    }

    /// The splice that appends `message` to `target`.
    pub(crate) fn append_splice(&self, target: &str, message: &Value) -> Value {
        let start = match target {
            NEXT_TURN => self.next_turn.len(),
            _ => self.next_step.len(),
        };
        json!({"target": target, "start": start, "inserted": [message]})
    }

    /// The splice that clears `count` messages of `target` unrun (a cancel).
    pub(crate) fn cancel_splice(target: &str, count: usize) -> Value {
        json!({"target": target, "start": 0, "removedCount": count, "inserted": [], "outcome": "canceled"})
    }

    /// The splice that claims `count` messages from the head of `target`.
    pub(crate) fn claim_splice(target: &str, count: usize) -> Value {
        json!({"target": target, "start": 0, "removedCount": count, "inserted": []})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inbox_is_what_its_logged_splices_leave() {
        let a = json!({"id": "a"});
        let b = json!({"id": "b"});
        let c = json!({"id": "c"});
        let splices = [
            json!({"target": "next-turn", "start": 0, "inserted": [a]}),
            json!({"target": "next-turn", "start": 1, "inserted": [b]}),
            json!({"target": "next-step", "start": 0, "inserted": [c]}),
            json!({"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}),
            json!({"target": "next-step", "start": 0, "removedCount": 1, "inserted": []}),
        ];
        let inbox = Inbox::rebuilt(&splices);
        assert_eq!(inbox.next_turn, vec![json!({"id": "b"})]);
        assert!(inbox.next_step.is_empty());
    }

    #[test]
    fn a_splice_past_the_end_is_clamped_not_a_panic() {
        let splices = [
            json!({"target": "next-turn", "start": 5, "removedCount": 3, "inserted": [{"id": "x"}]}),
        ];
        let inbox = Inbox::rebuilt(&splices);
        assert_eq!(inbox.next_turn, vec![json!({"id": "x"})]);
    }

    #[test]
    fn cancel_splices_name_what_they_drop() {
        let splice = Inbox::cancel_splice(NEXT_STEP, 1);
        assert_eq!(splice["removedCount"], 1);
        assert_eq!(splice["outcome"], "canceled");
        // A rebuilt inbox applies a cancel like any removal.
        let rebuilt = Inbox::rebuilt(&[
            json!({"target": "next-step", "start": 0, "inserted": [{"id": "s"}]}),
            splice,
        ]);
        assert!(!rebuilt.has_pending());
        assert_eq!(
            target_of("later").unwrap_err(),
            "inbox target `later` is not next-turn or next-step"
        );
    }
}
