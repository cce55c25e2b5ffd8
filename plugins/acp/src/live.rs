//! A session's events as an editor shows them. Live: text and thoughts chunk by chunk as the
//! model streams, each tool call when it is logged, in progress when its body starts and closed
//! with its output or diff, the plan when the todo list changes, the context meter after each
//! answer, the mode when the permission preset or plan mode changes. Replayed (`session/load`): the same
//! from the stored events, with the person's messages and whole assistant messages instead of
//! chunks.

use std::sync::Arc;

use dsh_compaction_seam::{COMPACTION_SERVICE, CompactionService};
use dsh_plugin_api::{Json, Next, PluginError};
use dsh_protocol::kinds::{
    ASSISTANT_CHUNK, ASSISTANT_MESSAGE, PERMISSION_PRESET, PLAN_MODE, TODO_WRITE, TOOL_CALL,
    TOOL_RESULT, USER_MESSAGE,
};
use dsh_protocol::{
    AgentPresetSelectedEvent, AssistantChunkEvent, AssistantMessageEvent, ContentBlock,
    MessageSource, StreamChunk, TodoStatus, TodoWriteEvent, ToolCallEvent, ToolReply,
    ToolResultEvent, UserMessageEvent,
};
use dsh_sessions_seam::EventRecord;
use dsh_tools_seam::{CallView, TOOLS_EXECUTE};

use crate::server::{AcpSession, Mode, Server};
use crate::updates::{
    Content, PlanEntry, SessionUpdate, ToolCallContent, ToolCallStatus, ToolCallUpdate,
};

/// A committed event of one of this connection's sessions, live.
pub(crate) fn committed(server: &Arc<Server>, session: &Arc<AcpSession>, record: &EventRecord) {
    for update in updates(session, record, false) {
        server.update(&session.id, update);
    }
    // An agent preset someone else chose (an attached client): the options again, with the
    // preset as logged (the agent takes it up right after logging it).
    if !session.editor.is_choosing_options()
        && let Some(Ok(chosen)) = record.decode::<AgentPresetSelectedEvent>()
    {
        crate::options::announce_options(server, &session.id, Some(&chosen.agent_preset));
    }
    // The mode: plan mode while planning (a preset changed meanwhile does not show), else the
    // preset.
    if matches!(record.kind.as_str(), PERMISSION_PRESET | PLAN_MODE) {
        server.update(
            &session.id,
            SessionUpdate::CurrentModeUpdate {
                current_mode_id: crate::modes::current_mode_id(server, &session.id),
            },
        );
    }
    if record.kind.as_str() == ASSISTANT_MESSAGE
        && let Some(update) = usage(server, &session.id)
    {
        server.update(&session.id, update);
    }
}

/// The context meter of `session`, where the model's window is known.
fn usage(server: &Server, session: &str) -> Option<SessionUpdate> {
    let compaction = server
        .ctx
        .get::<CompactionService>(COMPACTION_SERVICE)
        .ok()
        .flatten()?;
    let meter = compaction.meter(session.into()).decode().ok().flatten()?;
    Some(SessionUpdate::UsageUpdate {
        used: meter.tokens,
        size: meter.window?,
    })
}

/// The updates one event makes; `replay` when the stored conversation is shown again.
pub(crate) fn updates(
    session: &AcpSession,
    record: &EventRecord,
    replay: bool,
) -> Vec<SessionUpdate> {
    match record.kind.as_str() {
        ASSISTANT_CHUNK if !replay => chunk(session, record).into_iter().collect(),
        ASSISTANT_MESSAGE => message(session, record, replay),
        USER_MESSAGE if replay => said(record, None).into_iter().collect(),
        // Live, the editor shows its own prompt already; a message someone else sent (a
        // client attached through the socket) is shown as the editor would replay it.
        USER_MESSAGE => said(record, own_prompt(session).as_deref())
            .into_iter()
            .collect(),
        TOOL_CALL => match record.decode::<ToolCallEvent>() {
            Some(Ok(call)) => {
                let announced = crate::tool_calls::announce(
                    &session.cwd,
                    &call.call_id,
                    &call.name,
                    &call.arguments,
                );
                session.editor.remember(
                    &announced,
                    crate::tool_calls::asked_changes(&session.cwd, &call.name, &call.arguments),
                );
                vec![SessionUpdate::ToolCall(announced)]
            }
            _ => Vec::new(),
        },
        TOOL_RESULT => match record.decode::<ToolResultEvent>() {
            Some(Ok(result)) => crate::tool_calls::finished(&session.cwd, &result, |call| {
                session.editor.asked_changes(call)
            })
            .map(|mut update| {
                // A command that ran in the client's terminal shows that terminal.
                if let Some(terminal_id) = session.editor.terminal_of(&update.tool_call_id) {
                    update.content = Some(vec![ToolCallContent::Terminal { terminal_id }]);
                }
                update
            })
            .map(SessionUpdate::ToolCallUpdate)
            .into_iter()
            .collect(),
            _ => Vec::new(),
        },
        TODO_WRITE => match record.decode::<TodoWriteEvent>() {
            Some(Ok(todos)) => vec![plan(todos)],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// The id of the message of the prompt in flight on `session`.
fn own_prompt(session: &AcpSession) -> Option<String> {
    crate::events::inflight(session).map(|inflight| inflight.message_id.clone())
}

fn chunk(session: &AcpSession, record: &EventRecord) -> Option<SessionUpdate> {
    let event = record.decode::<AssistantChunkEvent>()?.ok()?;
    let (text, thought) = match event.chunk {
        StreamChunk::TextDelta { text, .. } => (text, false),
        StreamChunk::ReasoningDelta { text, .. } => (text, true),
        _ => return None,
    };
    session.editor.streamed(event.turn, event.step);
    if text.is_empty() {
        return None;
    }
    let content = Content::text(text);
    Some(match thought {
        true => SessionUpdate::AgentThoughtChunk { content },
        false => SessionUpdate::AgentMessageChunk { content },
    })
}

/// A whole assistant message: shown when it was not streamed (a replay, an adapter that does
/// not stream).
fn message(session: &AcpSession, record: &EventRecord, replay: bool) -> Vec<SessionUpdate> {
    let Some(Ok(event)) = record.decode::<AssistantMessageEvent>() else {
        return Vec::new();
    };
    if !replay && session.editor.was_streamed(event.turn, event.step) {
        return Vec::new();
    }
    event
        .message
        .content
        .into_iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } if !text.is_empty() => {
                Some(SessionUpdate::AgentMessageChunk {
                    content: Content::text(text),
                })
            }
            ContentBlock::Reasoning { text } if !text.is_empty() => {
                Some(SessionUpdate::AgentThoughtChunk {
                    content: Content::text(text),
                })
            }
            _ => None,
        })
        .collect()
}

/// A person's message as the editor shows it, unless it is `own` (the id of the prompt this
/// connection has in flight).
fn said(record: &EventRecord, own: Option<&str>) -> Option<SessionUpdate> {
    let UserMessageEvent(message) = record.decode::<UserMessageEvent>()?.ok()?;
    if !matches!(message.source, MessageSource::User { .. }) || own == Some(message.id.as_str()) {
        return None;
    }
    let text = message.text();
    (!text.is_empty()).then(|| SessionUpdate::UserMessageChunk {
        content: Content::text(text),
    })
}

fn plan(todos: TodoWriteEvent) -> SessionUpdate {
    SessionUpdate::Plan {
        entries: todos
            .todos
            .into_iter()
            .map(|todo| PlanEntry {
                content: todo.content,
                priority: "medium",
                status: match todo.status {
                    TodoStatus::Pending => "pending",
                    TodoStatus::InProgress => "in_progress",
                    TodoStatus::Completed => "completed",
                },
            })
            .collect(),
    }
}

/// A call of one of this connection's sessions is in progress once its body starts (after
/// the policy, the approval and the guards let it through).
pub(crate) fn listen(server: &Arc<Server>) -> Result<(), PluginError> {
    if server.mode != Mode::Editor {
        return Ok(());
    }
    let watching = server.clone();
    server.ctx.on_waterfall(
        &TOOLS_EXECUTE,
        move |next: Next<CallView, Json<ToolReply>>| {
            let call = next.payload();
            if watching.session(call.session.as_str()).is_some() {
                watching.update(
                    call.session.as_str(),
                    SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                        tool_call_id: call.call_id.to_string(),
                        status: Some(ToolCallStatus::InProgress),
                        ..ToolCallUpdate::default()
                    }),
                );
            }
            next.run()
        },
    )
}
