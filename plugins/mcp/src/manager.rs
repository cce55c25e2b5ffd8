//! One set of servers and the sources that say which: the row's own and the user's files (the
//! global set, whose tools every session sees), or one working directory's `.mcp.json` (a
//! project's set, whose tools only that directory's sessions see). A reconcile reads the
//! sources and starts, stops or restarts servers so that what runs is what they say; closing
//! stops them all and keeps any later reconcile from starting one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_plugin_api::cancel::first_of;
use dsh_plugin_api::{LogLevel, lock};
use dsh_trust_seam::is_trusted;

use crate::config::{self, Loaded, ServerSpec, Sources};
use crate::server::{self, Server, Shared};

/// The servers of one set running now, by name, with the spec each was started from.
pub(crate) struct Manager {
    pub(crate) shared: Arc<Shared>,
    pub(crate) sources: Sources,
    running: Mutex<BTreeMap<String, (ServerSpec, Arc<Server>)>>,
    /// The last good entries of each file that stopped parsing, kept until it parses again.
    last_good: Mutex<BTreeMap<String, ServerSpec>>,
    /// One reconcile at a time: reading the files awaits, and a reading that finished earlier
    /// must not be applied after a later one.
    reconciling: tokio::sync::Mutex<()>,
    /// Set once the set is closed (its directory's last session went, or the plugin unloads):
    /// a reconcile still reading its files then starts nothing.
    closed: AtomicBool,
}

impl Manager {
    pub(crate) fn new(shared: Arc<Shared>, sources: Sources) -> Arc<Self> {
        Arc::new(Self {
            shared,
            sources,
            running: Mutex::default(),
            last_good: Mutex::default(),
            reconciling: tokio::sync::Mutex::default(),
            closed: AtomicBool::new(false),
        })
    }

    /// Reads the sources, reports their problems, and starts, stops or restarts servers so
    /// that what runs is what they say; answers the servers it started.
    pub(crate) async fn reconcile(&self) -> Vec<Arc<Server>> {
        let _one_at_a_time = self.reconciling.lock().await;
        if self.closed.load(Ordering::Acquire) {
            return Vec::new();
        }
        let ctx = &self.shared.ctx;
        // The files are read and parsed on the blocking pool: a large one must not hold a
        // runtime thread.
        let sources = self.sources.clone();
        let trusted = sources.project.is_some() && is_trusted(ctx, &self.shared.workspace);
        let loaded = match ctx.blocking(move || sources.load(trusted)).await {
            Ok(loaded) => loaded,
            Err(error) => {
                ctx.log(
                    LogLevel::Error,
                    &format!("mcp: the servers files were not read, nothing changes: {error}"),
                );
                return Vec::new();
            }
        };
        let Loaded {
            mut servers,
            errors,
            warnings,
        } = loaded;
        for warning in warnings {
            ctx.log(LogLevel::Warn, &format!("mcp: {warning}"));
        }
        for error in &errors {
            ctx.log(LogLevel::Error, &format!("mcp: {error}"));
            // A file that does not parse at all keeps its servers as they were.
            if let config::ConfigError::Malformed { file, .. } = error {
                for (name, spec) in lock(&self.last_good).iter() {
                    if &spec.source == file {
                        servers.entry(name.clone()).or_insert_with(|| spec.clone());
                    }
                }
            }
        }
        *lock(&self.last_good) = servers.clone();
        let mut running = lock(&self.running);
        // Checked again under the lock `close` takes: a close that came while the files were
        // read has emptied `running`, and nothing may start after it.
        if self.closed.load(Ordering::Acquire) {
            return Vec::new();
        }
        let gone: Vec<String> = running
            .iter()
            .filter(|(name, (spec, _))| servers.get(*name) != Some(spec))
            .map(|(name, _)| name.clone())
            .collect();
        for name in gone {
            if let Some((_, server)) = running.remove(&name) {
                ctx.log(
                    LogLevel::Info,
                    &format!("mcp `{name}`: stopped (its entry changed or went)"),
                );
                server.retire();
            }
        }
        // A tool refused earlier because a stopped server still held its name gets it now.
        for (_, server) in running.values() {
            let added = server.resync(&self.shared);
            if added > 0 {
                ctx.log(
                    LogLevel::Info,
                    &format!(
                        "mcp `{}`: {added} tools registered that were refused before",
                        server.name
                    ),
                );
            }
        }
        let mut started = Vec::new();
        for (name, spec) in servers {
            if running.contains_key(&name) {
                continue;
            }
            let server = Server::new(&name);
            let task = server::supervise(self.shared.clone(), spec.clone(), server.clone());
            match ctx.spawn(task) {
                Ok(()) => {
                    started.push(server.clone());
                    running.insert(name, (spec, server));
                }
                Err(error) => ctx.log(LogLevel::Error, &format!("mcp `{name}`: {error}")),
            }
        }
        started
    }

    /// [`Manager::reconcile`], then waits (at most `bound`) until each server it started made
    /// its first attempt to connect, so that a turn asked after this sees their tools.
    pub(crate) async fn reconcile_and_wait(&self, bound: Duration) {
        let started = self.reconcile().await;
        let firsts = async {
            for server in &started {
                server.first.wait().await;
            }
        };
        first_of(firsts, self.shared.ctx.sleep(bound)).await;
    }

    /// The servers running now.
    pub(crate) fn servers(&self) -> Vec<Arc<Server>> {
        lock(&self.running)
            .values()
            .map(|(_, server)| server.clone())
            .collect()
    }

    /// Stops every server: its tools go at once, and its supervisor closes the connection
    /// (stdin closed, the process ended) on its own task. No later reconcile starts one.
    /// Answers the names of the servers that were running.
    pub(crate) fn close(&self) -> Vec<String> {
        let mut running = lock(&self.running);
        self.closed.store(true, Ordering::Release);
        let servers = std::mem::take(&mut *running);
        drop(running);
        servers
            .into_iter()
            .map(|(name, (_, server))| {
                server.retire();
                name
            })
            .collect()
    }

    /// Stops every server and waits until each connection has closed (the plugin unloads: its
    /// tasks may not run again).
    pub(crate) async fn stop_all(&self) {
        let servers: Vec<Arc<Server>> = {
            let mut running = lock(&self.running);
            self.closed.store(true, Ordering::Release);
            std::mem::take(&mut *running)
                .into_values()
                .map(|(_, server)| server)
                .collect()
        };
        for server in servers {
            server.stop.fire();
            server.shutdown().await;
        }
    }
}
