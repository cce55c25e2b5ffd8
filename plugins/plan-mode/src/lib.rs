//! Plugin `plan-mode`: a session can plan before it changes anything. `/plan` turns plan mode
//! on (logged as `plan/mode {active: true}`, so the session log stays the truth and a resumed or
//! forked session keeps its mode); while it is on, the system prompt carries the plan policy
//! and every call that could change the workspace is refused on `tools/pre-execute` with a
//! result telling the model it is planning (`gate`). The model ends with `exit_plan_mode`,
//! whose plan a person reviews through the approval seam (`review`): approved, plan mode ends
//! and the model carries the plan out; kept planning with a note, the note goes back to the
//! model, which plans again. `/plan off` leaves without a review.
//!
//! Unlike the reference, whose plan mode only guides the model, this one enforces: reads go
//! on, writes do not. The rest of the rules (sandbox, permissions, approval) apply as ever.

mod command;
mod gate;
mod review;
mod shell;
mod state;

use std::sync::Arc;

use abi_stable::std_types::RString;
use dsh_plugin_api::prelude::*;
use dsh_protocol::PromptRequest;
use dsh_system_prompt_seam::SYSTEM_PROMPT_ASSEMBLE;
use dsh_tools_seam::{TOOLS_SERVICE, ToolsService};

use crate::gate::Allowed;
use crate::state::Modes;

/// What the model reads while plan mode is on, unless the row says otherwise.
const POLICY: &str = "# Plan mode\n\nThe person has put this session in plan mode: they want a plan to review before anything changes. Until exit_plan_mode succeeds or the person leaves plan mode, a request to build or fix something is a request to plan it, and agreement in conversation approves nothing.\n\nInvestigate first: read files, search the code, run read-only commands, so that the plan rests on what the repository really contains. Do not write or edit files, change configuration, install anything, commit, or start work that does; such calls are refused while planning. Prefer what the code already has to new machinery. Ask the person (ask_user_question) only about choices that are theirs or ambiguities no inspection can settle.\n\nMake the plan complete enough that someone else could carry it out without deciding anything: the goal and how to tell it is reached, the changes grouped by area with the files they touch, interfaces and data that change, edge cases and failures, the tests, and the assumptions made. Keep it short enough to review.\n\nWhen it is ready, call exit_plan_mode with the whole plan as markdown starting with a `# ` title, as the only and last call of that answer; do not paste the plan as a reply or ask for approval in prose. If the person keeps planning, their note comes back as the call's result: revise and present again. If no one can review it, stay in plan mode and give the plan in your answer.";

/// Config of `plan-mode`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(
    crate = "dsh_plugin_api::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct PlanModeConfig {
    /// The policy the system prompt carries while plan mode is on (default: the plugin's own).
    pub section: Option<String>,
    /// More tools that run in plan mode as they are (an MCP server's searches, say), besides
    /// the built-in read-only ones.
    pub read_only_tools: Vec<String>,
    /// More programs a shell command may run in plan mode, besides the built-in readers.
    pub read_only_commands: Vec<String>,
}

pub struct PlanModePlugin;

impl Plugin for PlanModePlugin {
    const NAME: &'static str = "plan-mode";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        dsh_sessions_seam::SESSIONS_SERVICE,
        dsh_approval_seam::APPROVAL_SERVICE,
        dsh_agents_seam::AGENTS_SERVICE,
    ];
    type Config = PlanModeConfig;

    async fn apply(ctx: Context, config: PlanModeConfig) -> Result<(), PluginError> {
        let section = match config.section {
            Some(text) if text.trim().is_empty() => {
                return Err(PluginError {
                    kind: dsh_plugin_api::ErrorKind::Config,
                    message:
                        "invalid config: `section` is empty (leave it out for the default policy)"
                            .into(),
                    path: abi_stable::std_types::RSome("$.section".into()),
                });
            }
            Some(text) => text,
            None => POLICY.to_owned(),
        };
        let modes = Arc::new(Modes::default());
        let allowed = Arc::new(Allowed {
            tools: config.read_only_tools,
            commands: config.read_only_commands,
        });
        gate::listen(&ctx, modes.clone(), allowed)?;
        command::answer(&ctx, modes.clone())?;
        policy_in_prompt(&ctx, modes.clone(), section)?;
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let registration = tools
            .register(
                RString::from(ctx.row_id()),
                RString::new(),
                review::tool(&ctx, modes),
            )
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?;
        ctx.on_dispose(move || drop(registration))
    }
}

/// While a session plans, its system prompt ends with the policy.
fn policy_in_prompt(ctx: &Context, modes: Arc<Modes>, section: String) -> Result<(), PluginError> {
    let host = ctx.clone();
    let section = Arc::new(section);
    ctx.on_waterfall(&SYSTEM_PROMPT_ASSEMBLE, move |next| {
        let (host, modes, section) = (host.clone(), modes.clone(), section.clone());
        let request: Option<PromptRequest> = next.payload().decode().ok();
        async move {
            let text = next.run().await?;
            match request {
                Some(request) if modes.active(&host, &request.session) => {
                    Ok(RString::from(format!("{text}\n\n{section}")))
                }
                _ => Ok(text),
            }
        }
    })
}

dsh_plugin_api::export_plugins!(PlanModePlugin);
