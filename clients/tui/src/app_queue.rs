//! Editing a message that waits in the session's queue: Alt-Up (composer empty) takes the
//! newest waiting message into the composer; Enter saves the new text in its place
//! (`session.updateQueue`, action `edit`: it keeps its id and its turn), Enter on an emptied
//! composer takes it out of the queue (action `remove`), and Esc leaves it as it was. A message
//! that starts running while it is edited cannot be changed any more: the text stays in the
//! composer, and Enter then sends it as a new message.

use dsh_client_protocol::{ClientRequest, UpdateQueue};
use dsh_protocol::{ContentBlock, QueueAction};

use crate::app::App;
use crate::app_event::Reply;

impl App {
    /// Alt-Up: the newest waiting message into the (empty) composer, for editing.
    pub(crate) fn edit_queued(&mut self) {
        if !self.composer.is_empty() || self.editing.is_some() {
            return;
        }
        let (Some(id), Some(text)) = (self.queue_ids.last(), self.queue.last()) else {
            self.status.hint("no queued message to edit");
            return;
        };
        self.editing = Some(id.clone());
        self.composer.insert(text);
    }

    /// Esc while editing: the waiting message stays as it was.
    pub(crate) fn cancel_edit(&mut self) {
        self.editing = None;
        self.composer.clear();
        self.status.hint("the queued message is unchanged");
    }

    /// Enter while editing: `text` replaces the waiting message, or an empty one removes it.
    /// Answers whether an edit was under way (else `text` is an ordinary message).
    pub(crate) fn save_edit(&mut self, text: &str) -> bool {
        let Some(id) = self.editing.take() else {
            return false;
        };
        let Some(session) = self.session.clone() else {
            return true;
        };
        let action = if text.trim().is_empty() {
            QueueAction::Remove
        } else {
            QueueAction::Edit {
                content: vec![ContentBlock::text(text)],
            }
        };
        let request = UpdateQueue {
            session_id: session,
            item_id: id,
            action,
        };
        self.send(
            ClientRequest::SessionUpdateQueue(request),
            Reply::QueueEdit {
                text: text.to_owned(),
            },
        );
        true
    }

    /// The queue changed: a message being edited that left it (it started running) can no
    /// longer be changed; what was typed stays, to be sent as a new message.
    pub(crate) fn queue_changed(&mut self) {
        if let Some(id) = &self.editing
            && !self.queue_ids.contains(id)
        {
            self.editing = None;
            self.status
                .hint("that message started running: Enter sends your text as a new one");
        }
    }

    /// The edit was refused (the message ran meanwhile): the text comes back to the composer.
    pub(crate) fn edit_refused(&mut self, text: &str, error: &str) {
        if self.composer.is_empty() {
            self.composer.insert(text);
        }
        self.status.hint(format!(
            "the queued message was not changed ({error}); your text is back"
        ));
    }
}
