//! Plugin `agent`: provides `agents`, the agent registry. An agent is a session with its route
//! (model, working directory, tool scope) and a driver that runs its turns through the
//! `agent_loop` service when woken. Each session has an inbox of two lists: `next-turn` holds
//! messages that start turns (one per turn), `next-step` holds messages that join the running
//! turn at its next step boundary. Every insertion, claim and cancellation is logged as
//! `agent/inbox/spliced`, so the log says when a message was queued, when the model got it and
//! what was dropped unrun; an inbox is rebuilt from those splices the first time a session is
//! used, so queued messages survive a reload of this plugin and a restart.
//!
//! The wake rules (followup, steer, inject), cancel with or without the inbox, and the
//! `agent/*` notifications (`created`, `session-start`, `status`, `inbox/inserted`,
//! `inbox/claimed`, `inbox/discarded`, `disposed`) follow the reference; `agent/error` comes
//! from the loop, which knows the step.
//!
//! A session runs an agent preset when it is made with one (`agentPreset` in its options,
//! written in its header) or switched to one before its first turn: the preset's tool scope
//! joins its chain (see `preset`).

mod driver;
mod error;
mod inbox;
mod preset;
mod queue;
mod registry;
mod service;

use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RString;
use dsh_agents_seam::{AGENT_LOOP_SERVICE, AGENTS_SERVICE, Agents_TO};
use dsh_plugin_api::lock;
use dsh_plugin_api::prelude::*;
use dsh_sessions_seam::{SESSION_DISPOSED, SESSIONS_SERVICE};

use crate::registry::Registry;
use crate::service::Service;

pub struct AgentPlugin;

impl Plugin for AgentPlugin {
    const NAME: &'static str = "agent";
    // Reached when used; declared so that a shutdown disposes agents before them.
    const OPTIONAL: &'static [&'static str] = &[
        SESSIONS_SERVICE,
        AGENT_LOOP_SERVICE,
        dsh_agents_seam::presets::AGENT_PRESETS_SERVICE,
    ];
    const PROVIDES: &'static [&'static str] = &[AGENTS_SERVICE];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let registry = Arc::new(Registry::new(ctx.clone()));
        let forget = Arc::downgrade(&registry);
        ctx.on_emit(&SESSION_DISPOSED, move |id: &RString| {
            let Some(registry) = forget.upgrade() else {
                return;
            };
            if let Some(agent) = registry.retire(id.as_str()) {
                // Its session is gone: no turn of it may run on.
                let running = {
                    let mut phase = lock(&agent.phase);
                    phase.disposing = true;
                    phase.running
                };
                if running {
                    registry.cancel_turn(id.as_str(), &dsh_protocol::AbortCause::Disposed);
                }
            }
        })?;
        ctx.provide(
            AGENTS_SERVICE,
            Agents_TO::from_value(Service(registry), TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(AgentPlugin);
