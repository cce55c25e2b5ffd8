//! Plugin `session-persistence-jsonl`: provides `session_persistence`, keeping session logs in
//! the reference's format v0 under a root directory (`$DSH_HOME/sessions` in the base bundle).
//!
//! Committed events are queued per session and written in batches: a batch goes out 200 ms
//! after its first event, or at once when a `session/flush` is dispatched, and on shutdown.
//! Every batch is synced before it counts as written. Unlike the reference, the first write
//! takes an exclusive `session.lock` (holding the owner's pid) so a second process cannot append
//! to a session another process owns; a lock left by a killed process is free again. Encoding,
//! syncing and file walks run on the host's blocking pool. Sessions another process writes
//! under the same root are announced as `session/store-changed` (through the host's
//! `fs_watch`), from the first listing on.

mod export;
mod listing;
mod lock;
mod search;
mod store;
mod trash;
mod watch;

use dsh_plugin_api::io::watch::FS_WATCH_SERVICE;
use dsh_plugin_api::prelude::*;
use dsh_sessions_seam::{
    SESSION_ARCHIVE_SERVICE, SESSION_FLUSH, SESSION_PERSISTENCE_SERVICE, SessionArchive_TO,
    SessionStore_TO,
};

use std::path::{Path, PathBuf};

use crate::store::Store;

/// Row config of `session-persistence-jsonl`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    /// The sessions root, e.g. `!home sessions`.
    pub root: String,
    /// `zstd` (default) or `none` (plain `session.jsonl`).
    #[serde(default = "default_compression")]
    pub compression: String,
    /// The batching window in milliseconds.
    #[serde(default = "default_batch_ms")]
    pub batch_ms: u64,
    /// Pack runs of chunk deltas into rows, as the reference does.
    #[serde(default = "default_true")]
    pub pack_chunks: bool,
    /// Where deleted sessions go (default: `<root>.trash` beside the root).
    #[serde(default)]
    pub trash: Option<String>,
    /// The attachment store whose images an export carries (default: `attachments` beside
    /// the root).
    #[serde(default)]
    pub attachments: Option<String>,
}

fn default_compression() -> String {
    "zstd".to_owned()
}

fn default_batch_ms() -> u64 {
    200
}

fn default_true() -> bool {
    true
}

pub struct PersistencePlugin;

impl Plugin for PersistencePlugin {
    const NAME: &'static str = "session-persistence-jsonl";
    const PROVIDES: &'static [&'static str] =
        &[SESSION_PERSISTENCE_SERVICE, SESSION_ARCHIVE_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[FS_WATCH_SERVICE];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        let store = Store::new(ctx.clone(), &config)?;
        let on_flush = store.clone();
        // A failed flush is answered to whoever asked (a durability checkpoint must know).
        ctx.on_parallel_fallible(&SESSION_FLUSH, move |request| {
            let store = on_flush.clone();
            async move {
                let session = request
                    .session
                    .clone()
                    .into_option()
                    .map(|id| id.into_string());
                store
                    .drain(session.as_deref())
                    .await
                    .map_err(|error| PluginError::plugin(format!("session flush failed: {error}")))
            }
        })?;
        let on_dispose = store.clone();
        // Registered last, so it runs first on unload: everything queued is written and the
        // locks are released before the fiber is gone.
        ctx.effect(move || async move {
            if let Err(error) = on_dispose.drain(None).await {
                dsh_plugin_api::tracing::error!(
                    "writing queued session events at shutdown failed: {error}"
                );
            }
            on_dispose.release_all();
        })?;
        let exporter = export::Exporter {
            ctx: ctx.clone(),
            store: store.clone(),
            attachments: config.attachments.as_ref().map_or_else(
                || Path::new(&config.root).with_file_name("attachments"),
                PathBuf::from,
            ),
        };
        ctx.provide(
            SESSION_ARCHIVE_SERVICE,
            SessionArchive_TO::from_value(exporter, abi_stable::sabi_trait::TD_Opaque),
        )?;
        ctx.provide(
            SESSION_PERSISTENCE_SERVICE,
            SessionStore_TO::from_value(store, abi_stable::sabi_trait::TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(PersistencePlugin);
