//! Plugin `tools`: provides `tools`, the tool registry and its guarded call pipeline. Tool
//! plugins register into it (each registration undoes itself when dropped); the agent loop
//! asks it for the schemas of a scope and runs each step's calls through it. The pipeline's
//! logic lives in `dsh-tools-core`; this crate wires it to the events, the session log and
//! the host.

mod body;
mod cancel;
mod code_dispatch;
mod pipeline;
mod reply;
mod service;

use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use dsh_plugin_api::prelude::*;
use dsh_tools_core::{DEFAULT_MAX_PARALLEL_TOOL_CALLS, ToolOrder};
use dsh_tools_seam::{TOOLS_SERVICE, Tools_TO};

/// Config of `tools`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct ToolsConfig {
    /// Tool names in the order a request lists them; `*` stands for every other tool (in
    /// code-unit order). Empty: code-unit order.
    pub tool_order: Vec<String>,
    /// How many parallel-safe calls of one step run at once.
    pub max_parallel_tool_calls: usize,
    /// The timeout of a call whose tool declares none (ms): the pipeline ends it with
    /// `TOOL_TIMEOUT`.
    pub default_timeout_ms: u64,
    /// No call runs longer than this, whatever its tool declares (ms).
    pub max_timeout_ms: u64,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            tool_order: Vec::new(),
            max_parallel_tool_calls: DEFAULT_MAX_PARALLEL_TOOL_CALLS,
            default_timeout_ms: 600_000,
            max_timeout_ms: 3_600_000,
        }
    }
}

pub struct ToolsPlugin;

impl Plugin for ToolsPlugin {
    const NAME: &'static str = "tools";
    const OPTIONAL: &'static [&'static str] = &[
        dsh_sessions_seam::SESSIONS_SERVICE,
        dsh_approval_seam::APPROVAL_SERVICE,
    ];
    const PROVIDES: &'static [&'static str] = &[TOOLS_SERVICE];
    type Config = ToolsConfig;

    async fn apply(ctx: Context, config: ToolsConfig) -> Result<(), PluginError> {
        let order = if config.tool_order.is_empty() {
            ToolOrder::code_unit()
        } else {
            ToolOrder::configured(config.tool_order).map_err(|error| {
                PluginError::new(
                    dsh_plugin_api::ErrorKind::Config,
                    format!("toolOrder: {error}"),
                )
            })?
        };
        let shared = Arc::new(service::Shared::new(
            ctx.clone(),
            order,
            config.max_parallel_tool_calls,
            service::Timeouts {
                default_ms: config.default_timeout_ms,
                max_ms: config.max_timeout_ms.max(1),
            },
        )?);
        ctx.provide(
            TOOLS_SERVICE,
            Tools_TO::from_value(service::Service(shared), TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(ToolsPlugin);
