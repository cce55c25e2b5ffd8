//! The invariants a real DeepSeek endpoint enforces on every chat-completions body, checked by
//! the fake server on each request it receives (as codex-rs checks its mock's requests in the
//! matcher), so an integration test cannot pass on a request the live API would refuse with a
//! 400.
//!
//! Only rules that the live API enforces and that the adapter (`plugins/llm-deepseek`,
//! `serialize.rs` and `wire.rs`) is designed to follow are asserted. Deliberately not asserted:
//! consecutive user messages (the harness appends context snapshots as user messages, and
//! DeepSeek accepts them), the first non-system message's role and consecutive assistant
//! messages (only the retired `deepseek-reasoner` R1 refused those), and where a system message
//! sits (the adapter only ever sends the prompt first, but the live API is not known to refuse
//! one elsewhere). A body without a `messages` array is not judged at all: the server's own
//! transport tests post `{}` and non-JSON bodies.

use std::collections::HashSet;
use std::fmt;

use serde_json::Value;

use super::script::{Reply, SseEvent};

/// A rule of the wire, named in every report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// `messages` is a non-empty array of objects whose `role` is `system`, `user`,
    /// `assistant` or `tool`: anything else is refused before the model sees it.
    MessageShape,
    /// An assistant message without `tool_calls` has a string `content`: the live API refuses a
    /// null-content assistant message (the adapter sends `""` on reasoning-only turns).
    AssistantContent,
    /// Each call of an assistant message's `tool_calls` has a non-empty string `id`, unique in
    /// that message: the `tool` answers are matched by it.
    ToolCallId,
    /// Every call of an assistant message is answered by a `tool` message with its id before
    /// the next assistant or user message ("An assistant message with 'tool_calls' must be
    /// followed by tool messages responding to each 'tool_call_id'").
    ToolCallAnswered,
    /// A `tool` message answers a call of the assistant message right before its run of `tool`
    /// messages, once ("Messages with role 'tool' must be a response to a preceding message
    /// with 'tool_calls'").
    ToolAnswersACall,
    /// In thinking mode (DeepSeek's default: anything but `thinking: {type: disabled}`), an
    /// assistant message with `tool_calls` carries the `reasoning_content` the model produced
    /// with those calls ("The `reasoning_content` in the thinking mode must be passed back to
    /// the API"). Checked for the turns this server streamed with reasoning, whose reasoning it
    /// knows: it must come back whole and unchanged.
    ReasoningPassedBack,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Self::MessageShape => "message-shape",
            Self::AssistantContent => "assistant-content",
            Self::ToolCallId => "tool-call-id",
            Self::ToolCallAnswered => "tool-call-answered",
            Self::ToolAnswersACall => "tool-answers-a-call",
            Self::ReasoningPassedBack => "reasoning-passed-back",
        }
    }
}

/// One broken rule in one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The request's index in [`super::FakeDeepSeek::requests`] (arrival order, from 0).
    pub request: usize,
    pub rule: Rule,
    /// What broke it, naming the message index.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "request #{} (requests()[{}]) broke `{}`: {}",
            self.request + 1,
            self.request,
            self.rule.name(),
            self.detail
        )
    }
}

/// A tool-call turn this server streamed: its calls' ids in order, and the reasoning streamed
/// with them (empty when none was).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StreamedTurn {
    pub(crate) ids: Vec<String>,
    pub(crate) reasoning: String,
}

/// The tool-call turn a reply streams, if it streams one to its end (a cut or malformed stream
/// leaves no turn the adapter could log).
pub(crate) fn streamed_turn(reply: &Reply) -> Option<StreamedTurn> {
    let events = match reply {
        Reply::Sse(events) | Reply::SseUntilClose(events) => events,
        _ => return None,
    };
    let mut ids = Vec::new();
    let mut reasoning = String::new();
    for event in events {
        let SseEvent::Data(payload) = event else {
            continue;
        };
        let Ok(chunk) = serde_json::from_str::<Value>(payload) else {
            continue;
        };
        let Some(choices) = chunk["choices"].as_array() else {
            continue;
        };
        for choice in choices {
            let delta = &choice["delta"];
            if let Some(text) = delta["reasoning_content"].as_str() {
                reasoning.push_str(text);
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                if let Some(id) = call["id"].as_str() {
                    ids.push(id.to_owned());
                }
            }
        }
    }
    (!ids.is_empty()).then_some(StreamedTurn { ids, reasoning })
}

fn role_of(message: &Value) -> Option<&str> {
    message["role"].as_str()
}

/// The calls still owed an answer, and by which assistant message.
struct Owed {
    assistant: usize,
    ids: Vec<String>,
}

/// Every rule `body` breaks, as `(rule, detail)`; `streamed` is every tool-call turn this server
/// has streamed so far.
pub(crate) fn check(body: &Value, streamed: &[StreamedTurn]) -> Vec<(Rule, String)> {
    let mut broken = Vec::new();
    let Some(messages) = body.get("messages") else {
        return broken;
    };
    let Some(messages) = messages.as_array() else {
        broken.push((Rule::MessageShape, "`messages` is not an array".to_owned()));
        return broken;
    };
    if messages.is_empty() {
        broken.push((Rule::MessageShape, "`messages` is empty".to_owned()));
        return broken;
    }
    let thinking = body["thinking"]["type"].as_str() != Some("disabled");
    let mut owed: Option<Owed> = None;
    let mut answered: HashSet<String> = HashSet::new();
    let close = |owed: &mut Option<Owed>, at: &str, broken: &mut Vec<(Rule, String)>| {
        if let Some(owed) = owed.take()
            && !owed.ids.is_empty()
        {
            broken.push((
                Rule::ToolCallAnswered,
                format!(
                    "the tool calls {:?} of messages[{}] are not answered before {at}",
                    owed.ids, owed.assistant
                ),
            ));
        }
    };
    for (index, message) in messages.iter().enumerate() {
        let role = role_of(message);
        match role {
            Some("system" | "user") => {
                close(
                    &mut owed,
                    &format!("messages[{index}] ({})", role.unwrap_or("?")),
                    &mut broken,
                );
            }
            Some("assistant") => {
                close(
                    &mut owed,
                    &format!("messages[{index}] (assistant)"),
                    &mut broken,
                );
                let calls = message.get("tool_calls").filter(|calls| !calls.is_null());
                let Some(calls) = calls else {
                    if !message["content"].is_string() {
                        broken.push((
                            Rule::AssistantContent,
                            format!(
                                "messages[{index}] is an assistant message without tool_calls and with content {}",
                                message.get("content").unwrap_or(&Value::Null)
                            ),
                        ));
                    }
                    continue;
                };
                let ids = assistant_call_ids(index, calls, &mut broken);
                if thinking {
                    check_reasoning(index, message, &ids, streamed, &mut broken);
                }
                answered.clear();
                owed = Some(Owed {
                    assistant: index,
                    ids,
                });
            }
            Some("tool") => {
                let Some(id) = message["tool_call_id"].as_str() else {
                    broken.push((
                        Rule::ToolAnswersACall,
                        format!(
                            "messages[{index}] is a tool message without a string tool_call_id"
                        ),
                    ));
                    continue;
                };
                let pending = owed.as_mut().and_then(|owed| {
                    let at = owed.ids.iter().position(|owed_id| owed_id == id)?;
                    Some(owed.ids.remove(at))
                });
                if pending.is_some() {
                    answered.insert(id.to_owned());
                } else if owed.is_some() && answered.contains(id) {
                    broken.push((
                        Rule::ToolAnswersACall,
                        format!("messages[{index}] answers tool call {id:?} a second time"),
                    ));
                } else {
                    broken.push((
                        Rule::ToolAnswersACall,
                        format!(
                            "messages[{index}] answers tool call {id:?}, which the assistant message before it did not make"
                        ),
                    ));
                }
            }
            _ => broken.push((
                Rule::MessageShape,
                format!(
                    "messages[{index}] has role {}",
                    message.get("role").unwrap_or(&Value::Null)
                ),
            )),
        }
    }
    close(&mut owed, "the end of `messages`", &mut broken);
    broken
}

/// The ids of an assistant message's calls, reporting calls without a usable one.
fn assistant_call_ids(
    index: usize,
    calls: &Value,
    broken: &mut Vec<(Rule, String)>,
) -> Vec<String> {
    let Some(calls) = calls.as_array() else {
        broken.push((
            Rule::ToolCallId,
            format!("messages[{index}].tool_calls is not an array"),
        ));
        return Vec::new();
    };
    let mut ids = Vec::new();
    for (at, call) in calls.iter().enumerate() {
        match call["id"].as_str().filter(|id| !id.is_empty()) {
            Some(id) if ids.iter().any(|seen| seen == id) => broken.push((
                Rule::ToolCallId,
                format!("messages[{index}].tool_calls[{at}] repeats the id {id:?}"),
            )),
            Some(id) => ids.push(id.to_owned()),
            None => broken.push((
                Rule::ToolCallId,
                format!("messages[{index}].tool_calls[{at}] has no id"),
            )),
        }
    }
    ids
}

fn check_reasoning(
    index: usize,
    message: &Value,
    ids: &[String],
    streamed: &[StreamedTurn],
    broken: &mut Vec<(Rule, String)>,
) {
    // The reasoning the model produced with exactly these calls; several turns may reuse ids.
    let expected: Vec<&str> = streamed
        .iter()
        .filter(|turn| turn.ids == ids && !turn.reasoning.is_empty())
        .map(|turn| turn.reasoning.as_str())
        .collect();
    if expected.is_empty() {
        return;
    }
    match message.get("reasoning_content").and_then(Value::as_str) {
        Some(sent) if expected.contains(&sent) => {}
        Some(sent) => broken.push((
            Rule::ReasoningPassedBack,
            format!(
                "messages[{index}] (tool calls {ids:?}) passes back reasoning_content {sent:?}, but the model streamed {:?}",
                expected[0]
            ),
        )),
        None => broken.push((
            Rule::ReasoningPassedBack,
            format!(
                "messages[{index}] (tool calls {ids:?}) has no reasoning_content in thinking mode; the model streamed {:?}",
                expected[0]
            ),
        )),
    }
}

/// The body the live API answers a refused request with.
pub(crate) fn refusal(violations: &[Violation]) -> Reply {
    let message = violations
        .iter()
        .map(|violation| format!("fake DeepSeek: {violation}"))
        .collect::<Vec<_>>()
        .join("; ");
    Reply::error(400, "invalid_request_error", &message)
}
