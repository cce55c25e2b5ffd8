//! Changes to one waiting message of an inbox (`session.updateQueue`): dropped, edited in place,
//! or moved into the running turn. Each is one logged splice, so a reload rebuilds the same
//! inbox, and each is announced like any other insertion or removal.

use dsh_protocol::{
    AgentNoticeData, ContentBlock, InboxSplicedEvent, InboxTarget, Message, SpliceOutcome,
};
use dsh_sessions_seam::{SessionBox, SessionExt};

use crate::error::AgentError;
use crate::registry::Registry;
use dsh_agents_seam::{AGENT_INBOX_DISCARDED, AGENT_INBOX_INSERTED};

impl Registry {
    /// Drops pending message `id` unrun (a cancelled splice); answers it.
    pub(crate) fn remove_pending(
        &self,
        session: &SessionBox,
        id: &str,
        outcome: Option<SpliceOutcome>,
    ) -> Result<(InboxTarget, Message), AgentError> {
        let (target, removed) = self.replace_pending(session, id, None, outcome)?;
        if outcome.is_some() {
            self.notify(
                &AGENT_INBOX_DISCARDED,
                session.id().as_str(),
                AgentNoticeData::InboxDiscarded {
                    message: removed.clone(),
                },
            );
        }
        Ok((target, removed))
    }

    /// Replaces the content of pending message `id`, keeping its id and place.
    pub(crate) fn edit_pending(
        &self,
        session: &SessionBox,
        id: &str,
        content: Vec<ContentBlock>,
    ) -> Result<(), AgentError> {
        if content.is_empty() {
            return Err(AgentError::EmptyEdit);
        }
        let (_, edited) = self.replace_pending(session, id, Some(content), None)?;
        self.notify(
            &AGENT_INBOX_INSERTED,
            session.id().as_str(),
            AgentNoticeData::InboxInserted { message: edited },
        );
        Ok(())
    }

    /// Takes pending message `id` out of its list, or swaps its content for `content`; applied
    /// at once and put back when the log refuses the splice (the log is written outside the
    /// inbox lock, as every other splice). Answers the message removed or the edited one.
    fn replace_pending(
        &self,
        session: &SessionBox,
        id: &str,
        content: Option<Vec<ContentBlock>>,
        outcome: Option<SpliceOutcome>,
    ) -> Result<(InboxTarget, Message), AgentError> {
        let (target, at, original, splice) = self.with_inbox(session, |inbox| {
            let (target, at) = inbox
                .position(id)
                .ok_or_else(|| AgentError::NotQueued(id.to_owned()))?;
            let list = inbox.list_mut(target);
            let original = list[at].clone();
            let inserted: Vec<Message> = content
                .map(|content| Message {
                    content,
                    ..original.clone()
                })
                .into_iter()
                .collect();
            list.splice(at..=at, inserted.iter().cloned());
            let splice = InboxSplicedEvent {
                target,
                start: at as u64,
                removed_count: Some(1),
                inserted,
                outcome,
            };
            Ok::<_, AgentError>((target, at, original, splice))
        })?;
        if let Err(error) = session.log(&splice) {
            self.with_inbox(session, |inbox| {
                let list = inbox.list_mut(target);
                match list.iter().position(|message| message.id == id) {
                    Some(edited) => list[edited] = original,
                    None => list.insert(at.min(list.len()), original),
                }
            });
            return Err(AgentError::Splice(error));
        }
        let answer = splice.inserted.into_iter().next().unwrap_or(original);
        Ok((target, answer))
    }
}
