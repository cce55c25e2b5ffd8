//! The session events of the recorder and of undo, and what a log says about them. Every
//! recorded change is an `undo/change` of the turn whose call made it; every undo is an
//! `undo/revert` naming the turns it reverted, so the log alone says which turns can still be
//! undone, in this process or in one that reopens the session. Both are registered as
//! ignorable: a host without this plugin still reads the session.

use std::collections::BTreeSet;

use abi_stable::std_types::RString;
use dsh_plugin_api::{Deserialize, Serialize};
use dsh_protocol::EventData;
use dsh_sessions_seam::SessionBox;

use crate::scan::Change;

/// `undo/change`: what one tool call changed under its working directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct ChangeEvent {
    pub(crate) turn: u64,
    pub(crate) call_id: String,
    pub(crate) tool: String,
    /// The working directory the paths are relative to.
    pub(crate) root: String,
    pub(crate) changes: Vec<Change>,
    /// Why the call's changes could not be recorded (an undo of its turn is refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unrecorded: Option<String>,
}

impl EventData for ChangeEvent {
    const KIND: &'static str = "undo/change";
}

/// `undo/revert`: turns whose changes were reverted, and the paths that were put back.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct RevertEvent {
    pub(crate) turns: Vec<u64>,
    pub(crate) paths: Vec<String>,
    /// `undo` or `rewind`.
    pub(crate) by: String,
}

impl EventData for RevertEvent {
    const KIND: &'static str = "undo/revert";
}

/// The recorded changes of a session's log, in log order, and the turns already reverted.
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    pub(crate) changes: Vec<ChangeEvent>,
    pub(crate) reverted: BTreeSet<u64>,
}

impl Recorded {
    /// Reads them from `session`'s log.
    pub(crate) fn of(session: &SessionBox) -> Self {
        let mut recorded = Self::default();
        let count = session.event_count();
        for record in session.events(0, count) {
            if let Some(Ok(change)) = record.decode::<ChangeEvent>() {
                recorded.changes.push(change);
            } else if let Some(Ok(revert)) = record.decode::<RevertEvent>() {
                recorded.reverted.extend(revert.turns);
            }
        }
        recorded
    }

    /// The turns with recorded changes not reverted yet, oldest first.
    pub(crate) fn undoable(&self) -> Vec<u64> {
        let turns: BTreeSet<u64> = self
            .changes
            .iter()
            .filter(|event| !self.reverted.contains(&event.turn))
            .map(|event| event.turn)
            .collect();
        turns.into_iter().collect()
    }

    /// The change events of `turns`, in log order.
    pub(crate) fn of_turns(&self, turns: &[u64]) -> Vec<&ChangeEvent> {
        self.changes
            .iter()
            .filter(|event| turns.contains(&event.turn))
            .collect()
    }
}

/// The kinds to register with the sessions service (ignorable).
pub(crate) fn kinds() -> [RString; 2] {
    [
        RString::from(ChangeEvent::KIND),
        RString::from(RevertEvent::KIND),
    ]
}
