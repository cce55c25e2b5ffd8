//! Plugin `session`: provides `sessions`, the append-only log of every live session.
//!
//! It owns the live logs (rules from `dsh-session-log`: contiguous seqs, surface ops, lossless
//! JSON, known types), commits appends, shares each committed event once as an `EventRecord`,
//! dispatches `session/event` after every commit and `session/flush` when asked for a
//! checkpoint, and hands committed events to the `session_persistence` service when one is
//! mounted (without one, sessions live in memory only). Loading a stored session runs the
//! crash-repair closers and marks the end of the seed.

mod ids;
mod live;
mod registry;

use dsh_plugin_api::prelude::*;
use dsh_sessions_seam::{SESSION_PERSISTENCE_SERVICE, SESSIONS_SERVICE, Sessions_TO};

use crate::registry::Registry;

pub struct SessionPlugin;

impl Plugin for SessionPlugin {
    const NAME: &'static str = "session";
    const PROVIDES: &'static [&'static str] = &[SESSIONS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[SESSION_PERSISTENCE_SERVICE];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let registry = Registry::new(ctx.clone());
        ctx.provide(
            SESSIONS_SERVICE,
            Sessions_TO::from_value(registry, abi_stable::sabi_trait::TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(SessionPlugin);
