//! Plugin `session-persistence-postgres`: provides `session_persistence` on a PostgreSQL
//! database, so several hosts share their sessions. Events are rows keyed by `(session, seq)`,
//! so a second writer of a seq fails and is reported; a batch commits in one transaction. A
//! session is written by one host at a time: the one holding its lease (a row with an owner and
//! an expiry, taken on load or first write and renewed while the session is open here). A host
//! that dies loses its leases when they expire, and another host resumes its sessions with the
//! crash closers every store gets. Each commit is announced with `NOTIFY`, so other hosts can
//! follow a session they do not own. The database is reached through the host's `postgres`
//! service (plugins own no runtime).

mod export;
mod follow;
mod listing;
mod schema;
mod store;

use dsh_plugin_api::io::postgres::{POSTGRES_SERVICE, PostgresService};
use dsh_plugin_api::prelude::*;
use dsh_sessions_seam::{
    SESSION_ARCHIVE_SERVICE, SESSION_FLUSH, SESSION_PERSISTENCE_SERVICE, SessionArchive_TO,
    SessionStore_TO,
};

use crate::store::Store;

/// Row config of `session-persistence-postgres`.
#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    /// A libpq connection string, e.g. `postgresql:///dsh?host=/run/pg`.
    pub url: String,
    /// Connections in the pool.
    #[serde(default = "default_pool")]
    pub pool: u32,
    /// The batching window in milliseconds (a `session/flush` writes at once).
    #[serde(default = "default_batch_ms")]
    pub batch_ms: u64,
    /// How long a lease lasts unless renewed; a killed host's sessions open elsewhere after it.
    #[serde(default = "default_lease_ms")]
    pub lease_ms: u64,
    /// The name this host holds leases under (default: hostname, pid and start time).
    #[serde(default)]
    pub owner: Option<String>,
    /// The attachment store whose images an export carries (default `$DSH_HOME/attachments`);
    /// exports without a path go to `exports/` beside it.
    #[serde(default)]
    pub attachments: Option<String>,
}

/// `$DSH_HOME/attachments`, where the base bundle keeps the images.
fn default_attachments() -> std::path::PathBuf {
    let home = std::env::var_os("DSH_HOME").map_or_else(
        || {
            std::env::var_os("HOME")
                .map(std::path::PathBuf::from)
                .unwrap_or_else(std::env::temp_dir)
                .join(".dsh-host")
        },
        std::path::PathBuf::from,
    );
    home.join("attachments")
}

fn default_pool() -> u32 {
    4
}

fn default_batch_ms() -> u64 {
    50
}

fn default_lease_ms() -> u64 {
    10_000
}

/// `hostname/pid/start`: unique per process, readable in a refusal.
fn default_owner() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .unwrap_or_else(|_| "host".to_owned());
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis());
    format!("{host}/{}/{started}", std::process::id())
}

pub struct PostgresPersistencePlugin;

impl Plugin for PostgresPersistencePlugin {
    const NAME: &'static str = "session-persistence-postgres";
    const PROVIDES: &'static [&'static str] =
        &[SESSION_PERSISTENCE_SERVICE, SESSION_ARCHIVE_SERVICE];
    const INJECT: &'static [&'static str] = &[POSTGRES_SERVICE];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        if config.lease_ms < 300 {
            return Err(PluginError {
                kind: dsh_plugin_api::ErrorKind::Config,
                message: "invalid config: leaseMs must be at least 300".into(),
                path: abi_stable::std_types::RSome("$.leaseMs".into()),
            });
        }
        let postgres = ctx.inject::<PostgresService>(POSTGRES_SERVICE)?;
        let db = postgres
            .connect(config.url.clone().into(), config.pool)
            .await
            .into_result()
            .map_err(|error| {
                PluginError::plugin(format!(
                    "cannot reach the session database `{}`: {error}",
                    config.url
                ))
            })?;
        schema::ensure(&db).await.map_err(|error| {
            PluginError::plugin(format!("cannot prepare the session tables: {error}"))
        })?;
        let owner = config.owner.clone().unwrap_or_else(default_owner);
        let store = Store::new(ctx.clone(), db, owner, &config)?;
        let on_flush = store.clone();
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
        ctx.spawn(store.clone().renew_leases())?;
        ctx.spawn(follow::listen(store.clone()))?;
        let on_dispose = store.clone();
        // Registered last, so it runs first on unload: everything queued is written and the
        // leases are given back before the fiber is gone.
        ctx.effect(move || async move {
            if let Err(error) = on_dispose.drain(None).await {
                dsh_plugin_api::tracing::error!(
                    "writing queued session events at shutdown failed: {error}"
                );
            }
            on_dispose.release_all().await;
        })?;
        let exporter = export::Exporter {
            ctx: ctx.clone(),
            store: store.clone(),
            attachments: config
                .attachments
                .as_ref()
                .map_or_else(default_attachments, std::path::PathBuf::from),
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

dsh_plugin_api::export_plugins!(PostgresPersistencePlugin);
