//! Which asks this client answers, as the host granted them in `initialize`: on a host that
//! does not grant `approvals` or `questions` (an ACP host before its socket's clients could
//! answer, where the editor alone did) an ask is shown as waiting in the status line, not put
//! as a modal the host would refuse the answer of. Current hosts grant both everywhere.

use crate::status::Status;

/// The asks this client answers and the host's profile.
pub(crate) struct Answering {
    pub(crate) approvals: bool,
    pub(crate) questions: bool,
    pub(crate) profile: String,
}

impl Default for Answering {
    /// Until the host answers `initialize`: as asked.
    fn default() -> Self {
        Self {
            approvals: true,
            questions: true,
            profile: String::new(),
        }
    }
}

impl Answering {
    pub(crate) fn of(initialized: &dsh_client_protocol::Initialized) -> Self {
        let granted = |feature: &str| initialized.features.iter().any(|f| f == feature);
        Self {
            approvals: granted("approvals"),
            questions: granted("questions"),
            profile: initialized.host.profile.clone(),
        }
    }

    /// Says in the status line that an ask waits for another client while one does that this
    /// client may not answer, and takes that back once none does.
    pub(crate) fn show_wait(&self, status: &mut Status, approval: bool, question: bool) {
        let waiting = (approval && !self.approvals) || (question && !self.questions);
        let hint = format!(
            "waiting for an answer: the {} host's own client answers its asks",
            self.profile
        );
        if waiting {
            status.hint(hint);
        } else if status
            .hint
            .as_ref()
            .is_some_and(|(shown, _)| *shown == hint)
        {
            // Answered where it was asked: the wait is over.
            status.hint = None;
        }
    }
}
