//! Test plugin `tools-probe`: opens a session, logs a turn whose assistant message holds the
//! configured tool calls, runs them as one step through the `tools` service, closes the turn
//! and prints `schemas <json>`, `report <json>` and one `event <json line>` per logged event,
//! so integration tests see what the agent loop will see. `cancelAfterMs` fires the caller's
//! cancellation signal that long after the step starts. With `guard`, a guard denies every
//! call whose arguments contain that text; with `block`, a post-execute listener blocks every
//! call of that tool.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use abi_stable::std_types::{RNone, ROption, RSome, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::cancel::{CancelBox, CancelFlag, first_of};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::serde_json;
use dsh_protocol::{
    AssistantMessageEvent, ContentBlock, EventData, Message, MessageSource, OutcomeSummary,
    PostDecision, Role, StepEndEvent, StepStartEvent, ToolDecl, ToolReply, TurnEndEvent,
    TurnEndReason, TurnStartEvent, UserMessageEvent,
};
use dsh_sessions_seam::{CreateSession, SessionBox, SessionExt, SessionsService};
use dsh_tools_seam::{
    CallView, Guard, StepCall, StepCalls, TOOLS_CHANGE, TOOLS_POST_EXECUTE, TOOLS_SERVICE, Tool,
    ToolsService, guard_box, tool_box,
};

/// One call as the model would write it.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct ProbeCall {
    pub id: String,
    pub name: String,
    /// The raw argument string.
    pub arguments: String,
}

/// Row config of `tools-probe`.
#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    pub session: String,
    pub cwd: String,
    pub calls: Vec<ProbeCall>,
    #[serde(default)]
    pub cancel_after_ms: Option<u64>,
    #[serde(default)]
    pub guard: Option<String>,
    #[serde(default)]
    pub block: Option<String>,
    /// Wait (up to 10 s) until the global view holds this many tools before starting: tool
    /// plugins reapplied together with the probe may register a moment later.
    #[serde(default)]
    pub wait_for_tools: Option<usize>,
    /// Benchmark mode: register a no-op tool and time this many one-call steps through the
    /// whole pipeline, outside a session and inside one; prints `bench <name> <µs>` lines.
    #[serde(default)]
    pub bench_calls: Option<u32>,
}

/// The benchmark's tool: answers at once.
struct Noop;

impl Tool for Noop {
    fn spec(&self) -> Json<ToolDecl> {
        let parameters =
            serde_json::json!({"type":"object","properties":{},"additionalProperties":false});
        Json::encode(&ToolDecl::new("noop", "Does nothing.", parameters))
    }

    fn execute(&self, _call: CallView, _cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        async { Json::encode(&ToolReply::text("ok")) }.into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }
}

/// Median µs of `run_step` for one no-op call, over 7 batches of `calls / 7` steps (after a
/// warm-up batch). In a session, each step is framed as the loop frames it (step/start, the
/// assistant message with the call, step/end), untimed: only the pipeline is measured.
async fn time_steps(
    tools: &ToolsService,
    session: Option<&SessionBox>,
    calls: u32,
    signal: &Arc<CancelFlag>,
) -> Result<f64, PluginError> {
    let batch = (calls / 7).max(1);
    let id = session.map_or_else(String::new, |session| session.id().to_string());
    let mut samples = Vec::new();
    let mut step_number = 0u64;
    for round in 0..8 {
        let mut spent = Duration::ZERO;
        for _ in 0..batch {
            step_number += 1;
            let call_id = format!("n{step_number}");
            if let Some(session) = session {
                append(
                    session,
                    &StepStartEvent {
                        turn: 1,
                        step: step_number,
                    },
                )?;
                let call = ContentBlock::tool_call(call_id.as_str(), "noop", "{}");
                append(session, &assistant(step_number, vec![call]))?;
            }
            let step = StepCalls {
                session: id.as_str().into(),
                scope: RVec::new(),
                turn: 1,
                step: step_number,
                cwd: ".".into(),
                calls: RVec::from(vec![StepCall {
                    call_id: call_id.as_str().into(),
                    name: "noop".into(),
                    arguments: "{}".into(),
                }]),
            };
            let cancel = signal.signal();
            let started = std::time::Instant::now();
            tools.run_step(step, cancel).await;
            spent += started.elapsed();
            if let Some(session) = session {
                append(
                    session,
                    &StepEndEvent {
                        turn: 1,
                        step: step_number,
                    },
                )?;
            }
        }
        if round > 0 {
            samples.push(spent.as_secs_f64() * 1e6 / f64::from(batch));
        }
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

fn fail(error: impl std::fmt::Display) -> PluginError {
    PluginError::plugin(error.to_string())
}

fn append<E: EventData>(session: &SessionBox, data: &E) -> Result<(), PluginError> {
    session.log(data).map(|_| ()).map_err(fail)
}

/// The assistant message of step `step`, holding `content`.
fn assistant(step: u64, content: Vec<ContentBlock>) -> AssistantMessageEvent {
    AssistantMessageEvent {
        turn: 1,
        step,
        message: Message {
            id: format!("a{step}"),
            role: Role::Assistant,
            content,
            source: MessageSource::model("p", "m"),
        },
        usage: None,
        interrupted: None,
    }
}

/// The opening of the probe's turn: `turn/start` and the user's message.
fn open_turn(session: &SessionBox, text: &str) -> Result<(), PluginError> {
    append(session, &TurnStartEvent { turn: 1 })?;
    let user = Message::user("u1", vec![ContentBlock::text(text)], MessageSource::user());
    append(session, &UserMessageEvent(user))
}

struct ContainsGuard(String);

impl Guard for ContainsGuard {
    fn check(&self, call: &CallView) -> ROption<RString> {
        if call.arguments.contains(self.0.as_str()) {
            RSome(format!("the probe's guard refuses `{}`", self.0).into())
        } else {
            RNone
        }
    }
}

/// Waits (up to 10 s) until the global view holds `wanted` tools, on `tools/change`.
async fn wait_for_tools(
    ctx: &Context,
    tools: &ToolsService,
    wanted: usize,
) -> Result<(), PluginError> {
    // The flag of the current wait; a change fires it, and the next wait takes a fresh one.
    let slot = Arc::new(std::sync::Mutex::new(CancelFlag::new()));
    let listener = slot.clone();
    ctx.on_emit(&TOOLS_CHANGE, move |_: &RString| {
        dsh_plugin_api::lock(&listener).fire();
    })?;
    let count = |tools: &ToolsService| {
        tools
            .schemas(RVec::new())
            .into_result()
            .ok()
            .and_then(|schemas| schemas.decode().ok())
            .map_or(0, |list| list.len())
    };
    let deadline = ctx.sleep(Duration::from_secs(10));
    let mut deadline = std::pin::pin!(deadline);
    loop {
        // Taken before the count, so a change between the two fires the flag waited on.
        let flag = {
            let mut current = dsh_plugin_api::lock(&slot);
            if current.is_fired() {
                *current = CancelFlag::new();
            }
            current.clone()
        };
        if count(tools) >= wanted {
            return Ok(());
        }
        if let dsh_plugin_api::cancel::Either::Right(()) =
            first_of(flag.wait(), deadline.as_mut()).await
        {
            return Ok(());
        }
    }
}

pub struct ToolsProbe;

impl Plugin for ToolsProbe {
    const NAME: &'static str = "tools-probe";
    const INJECT: &'static [&'static str] = &["sessions", TOOLS_SERVICE];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        let sessions = ctx.inject::<SessionsService>("sessions")?;
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let _guard = config.guard.as_ref().map(|text| {
            tools.guard(
                RString::from(ctx.row_id()),
                guard_box(ContainsGuard(text.clone())),
            )
        });
        if let Some(blocked) = config.block.clone() {
            ctx.on_waterfall(&TOOLS_POST_EXECUTE, move |next| {
                let blocked = blocked.clone();
                async move {
                    let post = next.payload();
                    if post.call.name.as_str() == blocked {
                        return Ok(Json::encode(&PostDecision::Block {
                            feedback: vec![ContentBlock::text("blocked by the probe")],
                            additional_contexts: Vec::new(),
                        }));
                    }
                    next.run().await
                }
            })?;
        }
        if let Some(wanted) = config.wait_for_tools {
            wait_for_tools(&ctx, &tools, wanted).await?;
        }
        let schemas = tools.schemas(RVec::new()).into_result().map_err(fail)?;
        say(&format!("schemas {}", schemas.text()));
        if let Some(calls) = config.bench_calls {
            let registration = tools
                .register(RString::from(ctx.row_id()), RString::new(), tool_box(Noop))
                .into_result()
                .map_err(fail)?;
            let signal = CancelFlag::new();
            let unlogged = time_steps(&tools, None, calls, &signal).await?;
            say(&format!("bench tool_pipeline_noop_unlogged {unlogged:.3}"));
            let session = sessions
                .create(CreateSession {
                    id: RSome(config.session.as_str().into()),
                    cwd: RSome(config.cwd.as_str().into()),
                    ..CreateSession::default()
                })
                .await
                .into_result()
                .map_err(fail)?;
            open_turn(&session, "bench")?;
            let logged = time_steps(&tools, Some(&session), calls, &signal).await?;
            say(&format!("bench tool_pipeline_noop_logged {logged:.3}"));
            drop(registration);
            say("probe done");
            return Ok(());
        }
        let session = sessions
            .create(CreateSession {
                id: RSome(config.session.as_str().into()),
                cwd: RSome(config.cwd.as_str().into()),
                ..CreateSession::default()
            })
            .await
            .into_result()
            .map_err(fail)?;
        open_turn(&session, "run the tools")?;
        append(&session, &StepStartEvent { turn: 1, step: 1 })?;
        let blocks: Vec<ContentBlock> = config
            .calls
            .iter()
            .map(|call| {
                ContentBlock::tool_call(
                    call.id.as_str(),
                    call.name.as_str(),
                    call.arguments.as_str(),
                )
            })
            .collect();
        append(&session, &assistant(1, blocks))?;
        let signal = CancelFlag::new();
        if let Some(millis) = config.cancel_after_ms {
            let (flag, timer) = (signal.clone(), ctx.sleep(Duration::from_millis(millis)));
            ctx.spawn(async move {
                timer.await;
                flag.fire();
            })?;
        }
        let step = StepCalls {
            session: config.session.as_str().into(),
            scope: RVec::new(),
            turn: 1,
            step: 1,
            cwd: config.cwd.as_str().into(),
            calls: config
                .calls
                .iter()
                .map(|call| StepCall {
                    call_id: call.id.as_str().into(),
                    name: call.name.as_str().into(),
                    arguments: call.arguments.as_str().into(),
                })
                .collect(),
        };
        let report = tools.run_step(step, signal.signal()).await;
        say(&format!("report {}", report.text()));
        append(&session, &StepEndEvent { turn: 1, step: 1 })?;
        append(
            &session,
            &TurnEndEvent {
                turn: 1,
                reason: TurnEndReason::Completed,
            },
        )?;
        for record in session.events(0, session.event_count()).iter() {
            say(&format!("event {}", record.json));
        }
        say("probe done");
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(ToolsProbe);
