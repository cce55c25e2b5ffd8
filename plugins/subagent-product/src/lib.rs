//! Plugin `subagent-product`: another agent product as a child agent. A row runs one product,
//! Codex (through `codex app-server`) or Claude Code (through `claude` and its stream-json
//! wire), in the parent session's working directory, and registers one tool for it
//! (`subagent_codex`, `subagent_claude_code`, or the row's `toolName`) with the reference's
//! one-shot parameters: the call waits for the child's final answer, or with
//! `run_in_background` becomes a job read with `job_output`.
//!
//! Each run is a fresh process given the standalone task and nothing of the parent's
//! conversation; the product's own configuration, model and login stay its own. Nobody is
//! asked anything on its behalf: what the product would put to a person is refused at once.
//! Its native permission mode comes from the row, narrowed by the parent session's sandbox
//! mode so the product's own confinement is never wider than its parent's mode. That
//! confinement is the product's: it needs its network and its home, so it starts through the
//! host's launcher, not the `sandbox` service, and what dsh hides from its own tools (the
//! credentials file) is hidden from the child only as far as the product's sandbox hides it. A run that fails answers a fixed
//! diagnostic (product, stage, category, HTTP status, exit code, signal) beside the partial
//! answer, never the product's raw output. Loading a row starts nothing; the process lives
//! only while a call runs, and ends with its whole group when the call ends or is stopped.

mod claude;
mod claude_wire;
mod codex;
mod codex_failure;
mod codex_wire;
mod config;
mod outcome;
mod run;
mod tool;
mod wire;

use std::sync::Arc;

use abi_stable::std_types::RString;
use dsh_plugin_api::ErrorKind;
use dsh_plugin_api::io::piped::{PIPED_SUBPROCESS_SERVICE, PipedSubprocessService};
use dsh_plugin_api::prelude::*;
use dsh_tools_seam::{TOOLS_SERVICE, ToolsService, tool_box};

use crate::config::Permissions;
pub use crate::config::{Product, ProductConfig};
use crate::run::Runner;
use crate::tool::ProductTool;

pub struct SubagentProductPlugin;

impl Plugin for SubagentProductPlugin {
    const NAME: &'static str = "subagent-product";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE, PIPED_SUBPROCESS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        dsh_sandbox_seam::SANDBOX_SERVICE,
        dsh_jobs_seam::JOBS_SERVICE,
    ];
    type Config = ProductConfig;

    async fn apply(ctx: Context, config: ProductConfig) -> Result<(), PluginError> {
        let permissions = Permissions::of(&config)
            .map_err(|error| PluginError::new(ErrorKind::Config, error.to_string()))?;
        if config.tool_name().trim().is_empty() || config.command().trim().is_empty() {
            return Err(PluginError::new(
                ErrorKind::Config,
                "`toolName` and `command` must not be empty".to_owned(),
            ));
        }
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let launcher = ctx.inject::<PipedSubprocessService>(PIPED_SUBPROCESS_SERVICE)?;
        let runner = Arc::new(Runner {
            ctx: ctx.clone(),
            row: ctx.row_id().to_owned(),
            config,
            permissions,
            launcher,
        });
        let tool = tool_box(ProductTool(runner));
        let registration = tools
            .register(RString::from(ctx.row_id()), RString::new(), tool)
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?;
        ctx.on_dispose(move || drop(registration))
    }
}

dsh_plugin_api::export_plugins!(SubagentProductPlugin);
