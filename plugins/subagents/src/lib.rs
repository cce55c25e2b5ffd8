//! Plugin `subagents`: the agent tree. A tool call of a parent agent starts a child agent in
//! this process with its own session (its header names the parent, `origin: subagent` and the
//! delegation depth), the parent's route and working directory, and the parent's tool scope
//! plus the children's layer (where `report` lives). `subagent` spawns a fresh child: in the
//! background by default (continuable: its id answers at once, `send_message` gives it more
//! turns, and when its run settles the parent receives a notice with its closing message), or
//! waited for (one-shot: its last answer is the tool result). `subagent_fork` seeds a one-shot
//! child with the parent's completed turns. `interrupt_agent`, `list_agents` and `report`
//! complete the set. Children run concurrently when the model asks for several; their depth
//! is capped (`maxDepth`); a child's approvals are refused (its scope was fixed when it
//! started), and its runtime context says so (`subagent:delegation`); cancelling a parent's turn cancels the children it is running. The service
//! `subagents` lists a session's children and says when a whole tree has settled (the headless
//! runner waits for it before it exits).

mod child;
mod error;
mod opening;
mod text;
mod tools;
mod tree;

use dsh_protocol::kinds;
use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RString;
use async_ffi::{FfiFuture, FutureExt};
use dsh_agents_seam::AGENT_DISPOSED;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{AbortCause, ChildStatus, ChildSummary};
use dsh_sessions_seam::SESSION_EVENT;
use dsh_subagents_seam::{SUBAGENTS_SERVICE, Subagents, Subagents_TO};
use dsh_tools_seam::{TOOLS_SERVICE, ToolsService, tool_box};

use crate::child::{CHILD_SCOPE, Delegation, agents};
use crate::opening::Openings;
use crate::tools::{DelegationTool, Kind};
use crate::tree::Tree;

/// Config of `subagents`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct SubagentsConfig {
    /// The deepest a child may be (1: children of a top-level agent only).
    pub max_depth: u64,
    /// Whether `subagent` runs in the background when the call does not say (false: it waits
    /// for the child's result, as the reference's SDK profile does).
    pub background_by_default: bool,
}

impl Default for SubagentsConfig {
    fn default() -> Self {
        Self {
            max_depth: 2,
            background_by_default: true,
        }
    }
}

struct Handle(Arc<Tree>);

impl Subagents for Handle {
    fn children(&self, parent: RString, descendants: bool) -> Json<Vec<ChildSummary>> {
        Json::encode(&self.0.summaries(parent.as_str(), descendants))
    }

    fn settled(&self, session: RString) -> FfiFuture<()> {
        let tree = self.0.clone();
        async move { tree.settled(session.as_str()).await }.into_ffi()
    }
}

pub struct SubagentsPlugin;

impl Plugin for SubagentsPlugin {
    const NAME: &'static str = "subagents";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        dsh_agents_seam::AGENTS_SERVICE,
        dsh_sessions_seam::SESSIONS_SERVICE,
        dsh_approval_seam::APPROVAL_SERVICE,
    ];
    const PROVIDES: &'static [&'static str] = &[SUBAGENTS_SERVICE];
    type Config = SubagentsConfig;

    async fn apply(ctx: Context, config: SubagentsConfig) -> Result<(), PluginError> {
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let tree = Arc::new(Tree::default());
        let openings = Arc::new(Openings::default());
        let delegation = Arc::new(Delegation {
            ctx: ctx.clone(),
            tree: tree.clone(),
            max_depth: config.max_depth,
            background_by_default: config.background_by_default,
            presets: dsh_sessions_seam::LatestOf::default(),
            modes: dsh_sessions_seam::LatestOf::default(),
            openings: openings.clone(),
        });
        let mut registrations = Vec::new();
        for kind in Kind::ALL {
            let scope = match kind {
                Kind::Report => CHILD_SCOPE,
                _ => "",
            };
            let tool = DelegationTool {
                kind,
                delegation: delegation.clone(),
            };
            let registration = tools
                .register(
                    RString::from(ctx.row_id()),
                    RString::from(scope),
                    tool_box(tool),
                )
                .into_result()
                .map_err(|error| PluginError::plugin(error.to_string()))?;
            registrations.push(registration);
        }
        follow_parents(&ctx, &tree)?;
        opening::listen(&ctx, &openings)?;
        ctx.provide(
            SUBAGENTS_SERVICE,
            Subagents_TO::from_value(Handle(tree), TD_Opaque),
        )?;
        ctx.on_dispose(move || drop(registrations))
    }
}

/// A parent's cancelled turn cancels the children it is running; a parent that goes away
/// takes its subtree with it.
fn follow_parents(ctx: &Context, tree: &Arc<Tree>) -> Result<(), PluginError> {
    let (canceller, watched) = (ctx.clone(), tree.clone());
    ctx.on_emit(&SESSION_EVENT, move |record| {
        // Every event of every session passes here: only a cancelled turn end is read.
        if record.kind.as_str() != kinds::TURN_END || !record.json.contains("\"aborted\"") {
            return;
        }
        let running: Vec<String> = watched
            .walk(record.session.as_str(), true)
            .into_iter()
            .filter(|node| node.status == ChildStatus::Running)
            .map(|node| node.id)
            .collect();
        if running.is_empty() {
            return;
        }
        if let Ok(agents) = agents(&canceller) {
            for child in running {
                let _ = agents.cancel(
                    RString::from(child),
                    Json::encode(&AbortCause::Parent),
                    false,
                );
            }
        }
    })?;
    let (disposer, owned) = (ctx.clone(), tree.clone());
    ctx.on_emit(&AGENT_DISPOSED, move |notice| {
        let gone = owned.remove_subtree(notice.agent.as_str());
        if gone.is_empty() {
            return;
        }
        let ctx = disposer.clone();
        let _ = disposer.spawn(async move {
            if let Ok(agents) = agents(&ctx) {
                for child in gone {
                    let _ = agents.dispose(RString::from(child)).await;
                }
            }
        });
    })?;
    Ok(())
}

dsh_plugin_api::export_plugins!(SubagentsPlugin);
