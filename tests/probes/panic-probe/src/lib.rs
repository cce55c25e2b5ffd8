//! Test plugin `panic-probe`: panics in the one seam its row's `seam` names, every time that
//! seam reaches it, so the fault catalogue can check that a plugin's panic in each of the
//! turn's seams is contained by the host and named, and that the session's log stays sound:
//! `pre-step` (`agent/pre-step`), `request` (`agent/request`, the model request about to
//! leave), `pre-execute` and `post-execute` (a tool call's hooks), `guard` (a tools guard),
//! `turn-stopping` (`agent/turn-stopping`) and `session-event` (a listener of every committed
//! event, which panics on `turn/start`).

use abi_stable::std_types::{ROption, RString};

use dsh_agents_seam::{AGENT_PRE_STEP, AGENT_REQUEST, AGENT_TURN_STOPPING};
use dsh_plugin_api::prelude::*;
use dsh_sessions_seam::SESSION_EVENT;
use dsh_tools_seam::{
    CallView, Guard, TOOLS_POST_EXECUTE, TOOLS_PRE_EXECUTE, TOOLS_SERVICE, ToolsService, guard_box,
};

/// The seams a row can name.
#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "kebab-case")]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub enum Seam {
    PreStep,
    Request,
    PreExecute,
    PostExecute,
    Guard,
    TurnStopping,
    SessionEvent,
}

/// Row config of `panic-probe`.
#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    pub seam: Seam,
}

/// The panic, named after its seam so the host's report can be matched to it.
fn explode(seam: &str) -> ! {
    panic!("panic-probe exploded in {seam} on purpose")
}

struct Panicking;

impl Guard for Panicking {
    fn check(&self, _call: &CallView) -> ROption<RString> {
        if std::hint::black_box(true) {
            explode("a tools guard");
        }
        ROption::RNone
    }
}

pub struct PanicProbe;

impl Plugin for PanicProbe {
    const NAME: &'static str = "panic-probe";
    const OPTIONAL: &'static [&'static str] = &[TOOLS_SERVICE];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        match config.seam {
            Seam::PreStep => {
                ctx.on_waterfall(&AGENT_PRE_STEP, |next| async move {
                    if std::hint::black_box(true) {
                        explode("agent/pre-step");
                    }
                    next.run().await
                })?;
            }
            Seam::Request => {
                ctx.on_waterfall(&AGENT_REQUEST, |next| async move {
                    if std::hint::black_box(true) {
                        explode("agent/request");
                    }
                    next.run().await
                })?;
            }
            Seam::PreExecute => {
                ctx.on_waterfall(&TOOLS_PRE_EXECUTE, |next| async move {
                    if std::hint::black_box(true) {
                        explode("tools/pre-execute");
                    }
                    next.run().await
                })?;
            }
            Seam::PostExecute => {
                ctx.on_waterfall(&TOOLS_POST_EXECUTE, |next| async move {
                    if std::hint::black_box(true) {
                        explode("tools/post-execute");
                    }
                    next.run().await
                })?;
            }
            Seam::TurnStopping => {
                ctx.on_serial(&AGENT_TURN_STOPPING, |_stopping| async move {
                    if std::hint::black_box(true) {
                        explode("agent/turn-stopping");
                    }
                    None
                })?;
            }
            Seam::SessionEvent => {
                ctx.on_emit(&SESSION_EVENT, |record| {
                    if record.kind.as_str() == "turn/start" {
                        explode("session/event")
                    }
                })?;
            }
            Seam::Guard => {
                let Ok(Some(tools)) = ctx.get::<ToolsService>(TOOLS_SERVICE) else {
                    return Err(PluginError::plugin("no tools service to guard"));
                };
                let held = tools.guard(RString::from(ctx.row_id()), guard_box(Panicking));
                ctx.on_dispose(move || drop(held))?;
            }
        }
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(PanicProbe);
