//! What the agent hears about its sessions: every committed event (turned into updates as the
//! mode says, and the end of the turn a prompt waits for), the claim of a prompt's message by
//! a turn, and an agent error outside that turn. Events of sessions this connection does not
//! own (another client's, a subagent's) are none of its business.

use std::sync::Arc;

use dsh_agents_seam::{AGENT_ERROR, AGENT_INBOX_CLAIMED, AGENT_ROUTE, AgentNotice};
use dsh_plugin_api::{PluginError, lock};
use dsh_protocol::kinds::{ASSISTANT_MESSAGE, TURN_END};
use dsh_protocol::{AgentNoticeData, AssistantMessageEvent, ContentBlock, TurnEndEvent};
use dsh_sessions_seam::{EventRecord, SESSION_EVENT};

use crate::server::{AcpSession, Inflight, Mode, Server};
use crate::updates::{Content, SessionNotification, SessionUpdate};

impl Server {
    /// One `session/update` of session `session`.
    pub(crate) fn update(&self, session: &str, update: SessionUpdate) {
        self.wire.notify(
            crate::schema::methods::SESSION_UPDATE,
            SessionNotification {
                session_id: session,
                update,
            },
        );
    }
}

/// The prompt in flight on `session`, if any.
pub(crate) fn inflight(session: &AcpSession) -> Option<Arc<Inflight>> {
    lock(&session.inflight).clone()
}

/// Registers the listeners; they go with the fiber.
pub(crate) fn listen(server: &Arc<Server>) -> Result<(), PluginError> {
    let events = server.clone();
    server.ctx.on_emit(&SESSION_EVENT, move |record| {
        if let Some(session) = events.session(record.session.as_str()) {
            committed(&events, &session, record);
        }
    })?;
    let claims = server.clone();
    server.ctx.on_emit(&AGENT_INBOX_CLAIMED, move |notice| {
        let Some((session, AgentNoticeData::InboxClaimed { message, turn })) =
            notice_of(&claims, notice)
        else {
            return;
        };
        if let Some(inflight) = inflight(&session)
            && inflight.message_id == message.id
        {
            lock(&inflight.state).turn = Some(turn);
        }
    })?;
    // A model someone else chose for the session (an attached client, a command): editor
    // mode shows the options again.
    let routes = server.clone();
    server.ctx.on_emit(&AGENT_ROUTE, move |notice| {
        if routes.mode != Mode::Editor {
            return;
        }
        let Some(session) = routes.session(notice.agent.as_str()) else {
            return;
        };
        if !session.editor.is_choosing_options() {
            crate::options::announce_options(&routes, &session.id, None);
        }
    })?;
    let errors = server.clone();
    server.ctx.on_emit(&AGENT_ERROR, move |notice| {
        let Some((session, AgentNoticeData::Error { turn, error, .. })) =
            notice_of(&errors, notice)
        else {
            return;
        };
        if let Some(inflight) = inflight(&session) {
            let mut state = lock(&inflight.state);
            // The prompt's own turn answers through its `turn/end`.
            if state.turn != Some(turn) {
                state.agent_error = Some(error.message);
            }
        }
    })
}

fn notice_of(server: &Server, notice: &AgentNotice) -> Option<(Arc<AcpSession>, AgentNoticeData)> {
    let session = server.session(notice.agent.as_str())?;
    Some((session, notice.data.decode().ok()?))
}

fn committed(server: &Arc<Server>, session: &Arc<AcpSession>, record: &EventRecord) {
    if record.kind.as_str() == TURN_END
        && let Some(Ok(end)) = record.decode::<TurnEndEvent>()
        && let Some(inflight) = inflight(session)
    {
        let mut state = lock(&inflight.state);
        if state.turn == Some(end.turn) {
            state.end = Some(end.reason);
        }
    }
    match server.mode {
        Mode::Automation => automation(server, session, record),
        Mode::Editor => crate::live::committed(server, session, record),
    }
}

/// Automation mode sends only committed assistant text: one `agent_message_chunk` per
/// non-empty text block of each `assistant/message`, in order, autonomous turns included.
fn automation(server: &Server, session: &AcpSession, record: &EventRecord) {
    if record.kind.as_str() != ASSISTANT_MESSAGE {
        return;
    }
    let Some(Ok(message)) = record.decode::<AssistantMessageEvent>() else {
        return;
    };
    for block in message.message.content {
        if let ContentBlock::Text { text } = block
            && !text.is_empty()
        {
            server.update(
                &session.id,
                SessionUpdate::AgentMessageChunk {
                    content: Content::text(text),
                },
            );
        }
    }
}
