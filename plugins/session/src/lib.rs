//! Plugin `session`: provides `sessions`, the append-only log of every live session.
//!
//! It owns the live logs (rules from `dsh-session-log`: contiguous seqs, surface ops, lossless
//! JSON, known types), commits appends, shares each committed event once as an `EventRecord`,
//! dispatches `session/event` after every commit and `session/flush` when asked for a
//! checkpoint, and hands committed events to the `session_persistence` service when one is
//! mounted. Whether a session may live in memory only is the row's `store`: `optional` (the
//! default of a bare tree) keeps sessions in memory when no store is mounted; `required` (what
//! the shipped profiles say) refuses to create a session while none is, so a run whose store
//! failed to mount stops with a named error instead of running turns that are stored nowhere.
//! Loading a stored session runs the crash-repair closers and marks the end of the seed.

mod ids;
mod live;
mod parse;
mod publish_order;
mod registry;
mod snapshot;

use dsh_plugin_api::prelude::*;
use dsh_sessions_seam::{SESSION_PERSISTENCE_SERVICE, SESSIONS_SERVICE, Sessions_TO};

use crate::registry::Registry;

/// Config of `session`.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct SessionConfig {
    /// Whether sessions need the `session_persistence` service.
    pub store: StoreRule,
}

/// Whether a session may be created while no store is mounted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "lowercase")]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub enum StoreRule {
    /// Sessions live in memory while no store is mounted (a profile without a store says so).
    #[default]
    Optional,
    /// A session is refused while no store is mounted: its events would be lost.
    Required,
}

pub struct SessionPlugin;

impl Plugin for SessionPlugin {
    const NAME: &'static str = "session";
    const PROVIDES: &'static [&'static str] = &[SESSIONS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[SESSION_PERSISTENCE_SERVICE];
    type Config = SessionConfig;

    async fn apply(ctx: Context, config: SessionConfig) -> Result<(), PluginError> {
        let registry = Registry::new(ctx.clone(), config.store == StoreRule::Required);
        ctx.provide(
            SESSIONS_SERVICE,
            Sessions_TO::from_value(registry, abi_stable::sabi_trait::TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(SessionPlugin);
