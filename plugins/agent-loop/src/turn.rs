//! One turn, as ARCHITECTURE §7 draws it: `turn/start`; per step `agent/pre-step`,
//! `step/start`, the turn's input as `user/message` (first step), a durability checkpoint,
//! history derived from the log, `request/header` when the header changed, the model attempt,
//! the step's tool calls through `tools`, `step/end`; another step while tools owe the model an
//! answer; `turn/end` always, whatever happened before it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use abi_stable::std_types::{RArc, RString, RVec};
use std::collections::HashMap;

use dsh_agent_seam::{
    AGENTS, AgentRequest, AgentsService, PromptRequest, RequestError, SYSTEM_PROMPT, StepView,
    SystemPromptService, TurnRequest, TurnStopping,
};
use dsh_llm_api::{ContentBlock, FinishReason, LlmFailure, TokenUsage};
use dsh_plugin_api::Service;
use dsh_session_seam::SessionBox;
use dsh_tools_seam::{CancelFlag, StepCall, StepCalls};
use serde_json::{Value, json};

use crate::Deps;
use crate::log::{Log, Past};
use crate::stream::{Attempt, StepPlace, attempt};

/// How the turn ended: the logged `turn/end` reason.
pub(crate) struct End {
    pub(crate) reason: Value,
}

impl End {
    fn completed() -> Self {
        Self {
            reason: json!({"kind": "completed"}),
        }
    }

    fn error(message: &str, code: &str) -> Self {
        Self {
            reason: json!({"kind": "error", "error": {"message": message, "code": code}}),
        }
    }

    fn failed(failure: &LlmFailure) -> Self {
        let code = serde_json::to_value(&failure.code).unwrap_or(Value::Null);
        Self {
            reason: json!({"kind": "error", "error": {"message": failure.message, "code": code}}),
        }
    }

    fn aborted(cause: &str) -> Self {
        Self {
            reason: json!({"kind": "aborted", "reason": {"kind": cause}}),
        }
    }
}

/// What the turn reports besides its end.
#[derive(Default)]
pub(crate) struct Tally {
    /// The step whose `step/start` is logged and `step/end` not yet (0: none); shared with
    /// the guard that closes the log when the turn's future is dropped mid-way.
    pub(crate) open_step: Arc<AtomicU64>,
    /// The last step that closed (0: none), for `agent/error`.
    pub(crate) last_step: u64,
    pub(crate) output: String,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
}

impl Tally {
    fn add(&mut self, usage: Option<&TokenUsage>) {
        if let Some(usage) = usage {
            self.input_tokens += usage.input_tokens;
            self.output_tokens += usage.output_tokens;
        }
    }
}

/// The running turn's cancellation: the flag and the cause it was fired with.
pub(crate) struct Cancel {
    pub(crate) flag: Arc<CancelFlag>,
    pub(crate) cause: std::sync::Mutex<String>,
}

impl Cancel {
    fn cause(&self) -> String {
        dsh_plugin_api::lock(&self.cause).clone()
    }
}

const NO_MODEL: &str = "no model is configured: pass --model PROVIDER/MODEL, configure a model row, or export DEEPSEEK_API_KEY for DeepSeek";

/// Runs the steps of turn `turn`; `Err` is a log failure, which ends the turn `error`.
pub(crate) async fn steps(
    deps: &Deps,
    session: &SessionBox,
    request: &TurnRequest,
    turn: u64,
    past: Past,
    cancel: &Cancel,
    tally: &mut Tally,
) -> Result<End, String> {
    let log = Log { session };
    if request.provider.is_empty() {
        return Ok(End::error(NO_MODEL, "NO_MODEL"));
    }
    let mut memory = Memory {
        last_header: past.last_header,
        last_header_key: None,
        last_context: past.last_context,
        snapshots: past.snapshots,
        pending: claim(deps, session, turn, true)?,
    };
    if !request.input.is_empty() {
        memory.pending.push(json!({
            "content": [{"type": "text", "text": request.input.as_str()}],
            "source": {"kind": "user"},
            "role": "user",
            "id": format!("{}-t{turn}-input", session.id()),
        }));
    }
    if memory.pending.is_empty() {
        // Woken for a message that was gone before the claim: the turn has nothing to ask, so
        // it closes without a step (and without a pre-step for a step that never opens).
        return Ok(End::completed());
    }
    let id = session.id();
    for step in 1..=deps.max_steps {
        if cancel.flag.is_fired() {
            return Ok(End::aborted(&cancel.cause()));
        }
        let view = StepView {
            session: id.clone(),
            turn,
            step,
        };
        let decided = deps
            .pre_step
            .waterfall(RArc::new(view), |_| async {
                Ok(RString::from(r#"{"kind":"enter"}"#))
            })
            .await;
        let decision: Value = match decided {
            Ok(text) => serde_json::from_str(&text).unwrap_or(Value::Null),
            Err(error) => {
                return Ok(End::error(
                    &format!("agent/pre-step: {error}"),
                    "HOOK_FAILED",
                ));
            }
        };
        match decision["kind"].as_str() {
            Some("enter") => {}
            Some("reject") => {
                let reason = decision["reason"]
                    .as_str()
                    .unwrap_or("rejected by agent/pre-step");
                return Ok(End {
                    reason: json!({"kind": "blocked", "reason": reason}),
                });
            }
            _ => {
                return Ok(End::error(
                    &format!("agent/pre-step answered an invalid decision: {decision}"),
                    "HOOK_FAILED",
                ));
            }
        }
        if step > 1 {
            // Steering: what arrived for the next step enters now.
            memory.pending.extend(claim(deps, session, turn, false)?);
        }
        log.append("step/start", &json!({"turn": turn, "step": step}))?;
        tally.open_step.store(step, Ordering::Relaxed);
        let ran = step_body(
            deps,
            session,
            request,
            turn,
            step,
            cancel,
            tally,
            &mut memory,
        )
        .await;
        // `step/end` is written whatever happened inside the step, so the log never keeps a
        // step open under a closed turn.
        let closed = log.append("step/end", &json!({"turn": turn, "step": step}));
        tally.last_step = step;
        tally.open_step.store(0, Ordering::Relaxed);
        let end = ran?;
        closed?;
        match end {
            // Input that arrived for the next step while this one ran owes the model another
            // step, even though nothing else does.
            Some(end) if end.reason["kind"] == "completed" => {
                let mut more = claim(deps, session, turn, false)?;
                if more.is_empty() {
                    more.extend(keep_going(deps, session, turn, &end).await?);
                }
                if more.is_empty() {
                    return Ok(end);
                }
                memory.pending = more;
            }
            Some(end) => return Ok(end),
            None => {}
        }
    }
    Ok(End::error(
        &format!(
            "the turn reached its limit of {} steps (agent-loop `maxSteps`)",
            deps.max_steps
        ),
        "MAX_STEPS",
    ))
}

/// One step after its `step/start`: the input, the checkpoint, the model attempt (retried as
/// `agent/request-error` says) and the tool calls. `Some(end)` when the turn ends here.
#[allow(
    clippy::too_many_arguments,
    reason = "the step's whole context, passed once"
)]
async fn step_body(
    deps: &Deps,
    session: &SessionBox,
    request: &TurnRequest,
    turn: u64,
    step: u64,
    cancel: &Cancel,
    tally: &mut Tally,
    memory: &mut Memory,
) -> Result<Option<End>, String> {
    let log = Log { session };
    let id = session.id();
    for message in std::mem::take(&mut memory.pending) {
        log.append("user/message", &message)?;
    }
    // The durability checkpoint before the request is the `session-checkpoints` row's
    // `agent/request` listener: it flushes after every listener shaped the request.
    let system = match assemble_prompt(deps, &log, request, turn, step, memory).await? {
        Ok(system) => system,
        // A prompt that cannot be rendered (an unknown variable, say) ends the turn before
        // anything is asked, as the reference flattens non-model errors.
        Err(problem) => return Ok(Some(End::error(&problem, "UNKNOWN"))),
    };
    let config = json!({"provider": request.provider.as_str(), "model": request.model.as_str()});
    let place = StepPlace {
        log: &log,
        turn,
        step,
        provider: request.provider.as_str(),
        model: request.model.as_str(),
        message_id: format!("{id}-t{turn}-s{step}"),
    };
    let mut failures = 0u32;
    let outcome = loop {
        // Rebuilt from the log for every attempt: what the model sees is what was logged.
        // The history goes by reference (count and rolling hash of the log's snapshot): the
        // request stays the same size however long the session is, and whoever puts it on a
        // wire reads the messages from the log.
        let view = session.derive_messages();
        let history =
            json!({"count": view.message_count(), "hash": format!("{:016x}", view.hash())});
        let tools_text = tool_schemas(deps.tools.as_ref(), &request.scope)?;
        // The header is rebuilt only when something in it changed: the tool list is compared
        // as the registry's text, not parsed and compared as JSON every step.
        let header_changed = memory
            .last_header_key
            .as_ref()
            .is_none_or(|(text, sys)| *text != tools_text || *sys != system);
        if header_changed {
            let tools: Value = serde_json::from_str(&tools_text)
                .map_err(|error| format!("tool schemas: {error}"))?;
            let header = json!({"config": config, "system": system, "tools": tools});
            if memory.last_header.as_ref() != Some(&header) {
                let reason = if memory.last_header.is_none() {
                    "initial"
                } else {
                    "change"
                };
                log.append(
                    "request/header",
                    &json!({"header": header, "reason": reason}),
                )?;
                memory.last_header = Some(header);
            }
            memory.last_header_key = Some((tools_text.clone(), system.clone()));
        }
        // `request/context` names the route a request goes to, logged when it changes.
        let route = (request.provider.to_string(), request.model.to_string());
        if memory.last_context.as_ref() != Some(&route) {
            log.append(
                "request/context",
                &json!({"provider": route.0, "model": route.1}),
            )?;
            memory.last_context = Some(route);
        }
        // Config, system prompt and history are small; the tool list goes in as the registry's
        // text.
        let generate = format!(
            r#"{{"config":{config},"system":{},"history":{history},"tools":{tools_text},"sessionId":{}}}"#,
            json!(system),
            json!(id.as_str()),
        );
        let hooked = deps
            .request_hook
            .waterfall(
                RArc::new(AgentRequest {
                    session: id.clone(),
                    turn,
                    step,
                    request: RString::from(generate),
                }),
                |request: RArc<AgentRequest>| async move { Ok(request.request.clone()) },
            )
            .await
            .map_err(|error| format!("agent/request: {error}"))?;
        let outcome = attempt(&deps.llm, hooked.into_string(), &place, &cancel.flag).await?;
        let Attempt::Failed(failure, _) = &outcome else {
            break outcome;
        };
        failures += 1;
        if cancel.flag.is_fired() {
            break outcome;
        }
        let asked = retry_wanted(deps, &id, turn, step, request, failures, failure);
        // A retry's wait gives way to a cancel.
        match cancel.flag.until(asked).await {
            Some(true) if !cancel.flag.is_fired() => {}
            _ => break outcome,
        }
    };
    let end = match outcome {
        Attempt::Cancelled => Some(End::aborted(&cancel.cause())),
        Attempt::Failed(failure, partial) => {
            partial.keep(&place)?;
            if cancel.flag.is_fired() {
                Some(End::aborted(&cancel.cause()))
            } else {
                Some(End::failed(&failure))
            }
        }
        Attempt::Finished {
            blocks,
            finish,
            usage,
        } => {
            tally.add(usage.as_ref());
            let text = text_of(&blocks);
            if !text.is_empty() {
                tally.output = text;
            }
            let calls = calls_of(&blocks);
            match finish {
                FinishReason::MaxTokens => Some(End {
                    reason: json!({"kind": "max-tokens"}),
                }),
                _ if calls.is_empty() => Some(End::completed()),
                _ => run_tools(deps, request, &log, turn, step, calls, cancel).await?,
            }
        }
    };
    Ok(end)
}

/// Whether an `agent/request-error` listener asks to retry the failed attempt.
async fn retry_wanted(
    deps: &Deps,
    session: &RString,
    turn: u64,
    step: u64,
    request: &TurnRequest,
    failures: u32,
    failure: &LlmFailure,
) -> bool {
    let payload = RequestError {
        session: session.clone(),
        turn,
        step,
        provider: request.provider.clone(),
        failures,
        failure: RString::from(serde_json::to_string(failure).unwrap_or_default()),
    };
    let decided = deps
        .request_error
        .waterfall(RArc::new(payload), |_| async {
            Ok(RString::from(r#"{"kind":"fail"}"#))
        })
        .await;
    let Ok(text) = decided else {
        return false;
    };
    serde_json::from_str::<Value>(text.as_str()).is_ok_and(|decision| decision["kind"] == "retry")
}

/// Runs a step's calls; `Some(end)` when the turn ends with this step.
async fn run_tools(
    deps: &Deps,
    request: &TurnRequest,
    log: &Log<'_>,
    turn: u64,
    step: u64,
    calls: Vec<StepCall>,
    cancel: &Cancel,
) -> Result<Option<End>, String> {
    let Some(tools) = &deps.tools else {
        return Ok(Some(End::error(
            "the model called tools, but no `tools` service is mounted",
            "NO_TOOLS",
        )));
    };
    let report = tools
        .run_step(
            StepCalls {
                session: log.session.id(),
                scope: request.scope.clone(),
                turn,
                step,
                cwd: request.cwd.clone(),
                calls: RVec::from(calls),
            },
            cancel.flag.signal(),
        )
        .await;
    let report: Value = serde_json::from_str(&report).unwrap_or(Value::Null);
    if let Some(lost) = report["results"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|result| result["logged"] == false)
    {
        return Err(format!(
            "the result of tool call `{}` could not be logged",
            lost["callId"].as_str().unwrap_or("?")
        ));
    }
    let id = log.session.id();
    for (index, context) in report["additionalContexts"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        // Hooks give content; the log needs a complete user message.
        let source = match &context["source"] {
            Value::Null => json!({"kind": "plugin"}),
            source => source.clone(),
        };
        let message = json!({
            "content": context["content"].clone(),
            "source": source,
            "role": "user",
            "id": format!("{id}-t{turn}-s{step}-ctx{index}"),
        });
        log.append("user/message", &message)?;
    }
    if cancel.flag.is_fired() {
        return Ok(Some(End::aborted(&cancel.cause())));
    }
    if report["concludesTurn"] == true {
        return Ok(Some(End::completed()));
    }
    Ok(None)
}

/// What a turn remembers of its log between steps.
pub(crate) struct Memory {
    last_header: Option<Value>,
    /// The tool list text and system prompt the last header was built from.
    last_header_key: Option<(String, String)>,
    /// The route of the last logged `request/context`.
    last_context: Option<(String, String)>,
    /// The last logged text of each prompt context snapshot, by key.
    snapshots: HashMap<String, String>,
    /// Claimed input that enters at the next step.
    pending: Vec<Value>,
}

/// Asks `agent/turn-stopping` whether a completed turn goes on: a listener's message becomes
/// the next step's input.
async fn keep_going(
    deps: &Deps,
    session: &SessionBox,
    turn: u64,
    end: &End,
) -> Result<Option<Value>, String> {
    let stopping = TurnStopping {
        session: session.id(),
        turn,
        reason: RString::from(end.reason.to_string()),
    };
    let answer = deps
        .turn_stopping
        .serial(RArc::new(stopping))
        .await
        .map_err(|error| format!("agent/turn-stopping: {error}"))?;
    let Some(answer) = answer else {
        return Ok(None);
    };
    let mut message: Value = serde_json::from_str(&answer)
        .map_err(|error| format!("agent/turn-stopping answered no message: {error}"))?;
    if message["id"].as_str().is_none_or(str::is_empty) {
        message["id"] = json!(format!("{}-t{turn}-continue", session.id()));
    }
    message["role"] = json!("user");
    if message["source"].is_null() {
        message["source"] = json!({"kind": "plugin"});
    }
    Ok(Some(message))
}

/// Claims the session's inbox (`agents`), when the service is mounted.
fn claim(
    deps: &Deps,
    session: &SessionBox,
    turn: u64,
    turn_boundary: bool,
) -> Result<Vec<Value>, String> {
    let Ok(Some(agents)) = deps.ctx.get::<AgentsService>(AGENTS) else {
        return Ok(Vec::new());
    };
    let claimed = agents
        .claim(session.id(), turn, turn_boundary)
        .into_result()
        .map_err(|error| format!("inbox: {error}"))?;
    serde_json::from_str(&claimed).map_err(|error| format!("inbox: {error}"))
}

/// The plugin whose context snapshots the loop logs (and finds again on resume).
pub(crate) const SNAPSHOT_PLUGIN: &str = "system-prompt";

/// The system prompt of this step (the `system_prompt` service's, else the row's), after
/// appending every context snapshot that changed since it was last logged. The inner `Err` is
/// a prompt that cannot be rendered; the outer one a log that refused an append.
async fn assemble_prompt(
    deps: &Deps,
    log: &Log<'_>,
    request: &TurnRequest,
    turn: u64,
    step: u64,
    memory: &mut Memory,
) -> Result<Result<String, String>, String> {
    let Ok(Some(prompt)) = deps.ctx.get::<SystemPromptService>(SYSTEM_PROMPT) else {
        return Ok(Ok(deps.system.clone()));
    };
    let assembled = prompt
        .assemble(PromptRequest {
            session: log.session.id(),
            cwd: request.cwd.clone(),
            scope: request.scope.clone(),
            provider: request.provider.clone(),
            model: request.model.clone(),
        })
        .await;
    let assembled: Value =
        serde_json::from_str(&assembled).map_err(|error| format!("system prompt: {error}"))?;
    if let Some(error) = assembled["error"].as_str() {
        return Ok(Err(format!("system prompt: {error}")));
    }
    for context in assembled["contexts"].as_array().into_iter().flatten() {
        let (Some(key), Some(text)) = (context["key"].as_str(), context["text"].as_str()) else {
            continue;
        };
        if memory.snapshots.get(key).map(String::as_str) == Some(text) {
            continue;
        }
        let mut source =
            json!({"kind": "plugin", "plugin": SNAPSHOT_PLUGIN, "form": "snapshot", "key": key});
        if let Some(sections) = context.get("sections") {
            source["sections"] = sections.clone();
        }
        let message = json!({
            "content": [{"type": "text", "text": text}],
            "source": source,
            "role": "user",
            "id": format!("{}-t{turn}-s{step}-{key}", log.session.id()),
        });
        log.append("user/message", &message)?;
        memory.snapshots.insert(key.to_owned(), text.to_owned());
    }
    Ok(Ok(assembled["system"]
        .as_str()
        .unwrap_or_default()
        .to_owned()))
}

/// The tool list of the scope, as the registry's JSON text.
fn tool_schemas(
    tools: Option<&Service<dsh_tools_seam::ToolsService>>,
    scope: &RVec<RString>,
) -> Result<String, String> {
    let Some(tools) = tools else {
        return Ok("[]".to_owned());
    };
    tools
        .schemas(scope.clone())
        .into_result()
        .map(RString::into_string)
        .map_err(|error| format!("tool schemas: {error}"))
}

fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn calls_of(blocks: &[ContentBlock]) -> Vec<StepCall> {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
            } => Some(StepCall {
                call_id: id.as_str().into(),
                name: name.as_str().into(),
                arguments: arguments.as_str().into(),
            }),
            _ => None,
        })
        .collect()
}
