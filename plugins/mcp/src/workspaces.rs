//! A project's servers follow the sessions that work in it. Each working directory that has a
//! live agent (a session of the web page, the headless runner, ACP or the SDK, or one of their
//! subagents) gets its own set, read from that directory's `.mcp.json` when the project is
//! trusted: started when the first agent in the directory is created, followed (the file is
//! watched, a trust given later takes it up), and stopped when the last agent there is
//! disposed. The set's tools are registered in the directory's tool scope
//! (`dsh_agents_seam::workspace_scope`), which the agents registry puts first in the scope chain of every
//! agent working there, so only that directory's sessions (and their children) are offered
//! them; a server of the same name in the user's files is shadowed there and nowhere else.
//!
//! Who works where is read from the `agents` service's list whenever an agent is created or
//! disposed, not counted from the notifications, so an agent this plugin never heard of (one
//! created before it loaded) counts, and one that vanished with its registry does not linger.
//! A turn's first step waits, bounded by the startup timeout, until its directory's servers
//! made their first attempt, so the first model request already lists their tools.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_agents_seam::{AGENTS_SERVICE, AgentsService, workspace_scope};
use dsh_plugin_api::cancel::{CancelFlag, first_of};
use dsh_plugin_api::{Context, LogLevel, lock};

use crate::config::Sources;
use crate::manager::Manager;
use crate::server::Shared;

/// One working directory's servers.
struct Group {
    manager: Arc<Manager>,
    /// Fired once the first reading of its file ended and what it started made a first
    /// attempt (or the bound passed).
    ready: Arc<CancelFlag>,
    /// Fired when the directory's last session went: its file is no longer followed.
    stop: Arc<CancelFlag>,
}

#[derive(Default)]
struct State {
    /// The working directory of every live agent, by agent (session) id.
    agents: HashMap<String, String>,
    groups: BTreeMap<String, Arc<Group>>,
}

/// The sets of every working directory that has sessions.
pub(crate) struct Workspaces {
    /// What each directory's set is made from: the global set's services and settings.
    base: Shared,
    /// The project's file, relative to the working directory.
    project_file: String,
    project_http: bool,
    /// How long a turn waits for a directory's servers' first attempt.
    bound: Duration,
    /// Fired once the row's and the user's servers made their first attempt.
    global_ready: Arc<CancelFlag>,
    state: Mutex<State>,
}

impl Workspaces {
    pub(crate) fn new(
        base: Shared,
        project_file: String,
        project_http: bool,
        bound: Duration,
        global_ready: Arc<CancelFlag>,
    ) -> Arc<Self> {
        Arc::new(Self {
            base,
            project_file,
            project_http,
            bound,
            global_ready,
            state: Mutex::default(),
        })
    }

    fn ctx(&self) -> &Context {
        &self.base.ctx
    }

    /// Reads who works where from the `agents` service and starts or stops sets to match:
    /// a directory with a live agent has one, a directory without none.
    pub(crate) fn sync(self: &Arc<Self>) {
        let Ok(Some(agents)) = self.ctx().get::<AgentsService>(AGENTS_SERVICE) else {
            return;
        };
        // Under the lock from the reading to its use: two syncs at once must not apply an
        // older list after a newer one (stopping a directory that has a session again).
        let mut state = lock(&self.state);
        let listed = match agents.list().decode() {
            Ok(listed) => listed,
            Err(error) => {
                drop(state);
                self.ctx().log(
                    LogLevel::Warn,
                    &format!("mcp: the agents list does not read: {error}"),
                );
                return;
            }
        };
        let live: HashMap<String, String> = listed
            .into_iter()
            .filter(|agent| !agent.cwd.is_empty())
            .map(|agent| (agent.id, agent.cwd))
            .collect();
        let mut started = Vec::new();
        for cwd in live.values() {
            if !state.groups.contains_key(cwd) {
                let group = self.group(cwd);
                state.groups.insert(cwd.clone(), group.clone());
                started.push((cwd.clone(), group));
            }
        }
        let wanted: HashSet<&String> = live.values().collect();
        let gone: Vec<String> = state
            .groups
            .keys()
            .filter(|cwd| !wanted.contains(cwd))
            .cloned()
            .collect();
        let stopped: Vec<(String, Arc<Group>)> = gone
            .into_iter()
            .filter_map(|cwd| state.groups.remove(&cwd).map(|group| (cwd, group)))
            .collect();
        state.agents = live;
        drop(state);
        for (cwd, group) in stopped {
            group.stop.fire();
            // Its tools go now; each server's supervisor ends its process on its own task.
            let names = group.manager.close();
            if !names.is_empty() {
                self.ctx().log(
                    LogLevel::Info,
                    &format!(
                        "mcp: no session works in {cwd} any more: stopped its servers `{}`",
                        names.join("`, `")
                    ),
                );
            }
        }
        for (cwd, group) in started {
            self.start(cwd, group);
        }
    }

    /// A new, empty set for `cwd`.
    fn group(&self, cwd: &str) -> Arc<Group> {
        let mut shared = self.base.clone();
        shared.workspace = cwd.to_owned();
        shared.scope = workspace_scope(cwd);
        let sources = Sources {
            row: BTreeMap::new(),
            row_label: "the row".to_owned(),
            files: Vec::new(),
            project: Some(PathBuf::from(cwd).join(&self.project_file)),
            project_http: self.project_http,
        };
        Arc::new(Group {
            manager: Manager::new(Arc::new(shared), sources),
            ready: CancelFlag::new(),
            stop: CancelFlag::new(),
        })
    }

    /// Reads `group`'s file and starts its servers, then follows the file until the group
    /// stops.
    fn start(&self, cwd: String, group: Arc<Group>) {
        let (ctx, bound, place) = (self.ctx().clone(), self.bound, cwd.clone());
        let task = async move {
            group.manager.reconcile_and_wait(bound).await;
            group.ready.fire();
            if let Err(error) =
                crate::reload::follow(&ctx, group.manager.clone(), group.stop.clone())
            {
                ctx.log(
                    LogLevel::Warn,
                    &format!("mcp: not following the servers file of {cwd}: {error}"),
                );
            }
        };
        if let Err(error) = self.ctx().spawn(task) {
            self.ctx().log(
                LogLevel::Error,
                &format!("mcp: the servers of {place} did not start: {error}"),
            );
        }
    }

    /// Waits, at most the startup bound, until the row's and the user's servers and those of
    /// the directory `session` works in made their first attempt. An agent not seen yet is
    /// looked up first.
    pub(crate) async fn settled(self: &Arc<Self>, session: &str) {
        let mut ready = self.ready_of(session);
        if ready.is_none() {
            self.sync();
            ready = self.ready_of(session);
        }
        let flags: Vec<Arc<CancelFlag>> = [Some(self.global_ready.clone()), ready]
            .into_iter()
            .flatten()
            .filter(|flag| !flag.is_fired())
            .collect();
        if flags.is_empty() {
            return;
        }
        let all = async {
            for flag in &flags {
                flag.wait().await;
            }
        };
        first_of(all, self.ctx().sleep(self.bound)).await;
    }

    fn ready_of(&self, session: &str) -> Option<Arc<CancelFlag>> {
        let state = lock(&self.state);
        let cwd = state.agents.get(session)?;
        state.groups.get(cwd).map(|group| group.ready.clone())
    }

    /// Reads every directory's file again (a project became trusted), and waits until what
    /// that started made its first attempt.
    pub(crate) async fn reconcile_all(&self) {
        let groups: Vec<Arc<Group>> = lock(&self.state).groups.values().cloned().collect();
        for group in groups {
            group.manager.reconcile_and_wait(self.bound).await;
        }
    }

    /// Stops every directory's servers and waits until their connections closed.
    pub(crate) async fn stop_all(&self) {
        let groups: Vec<Arc<Group>> = std::mem::take(&mut lock(&self.state).groups)
            .into_values()
            .collect();
        for group in groups {
            group.stop.fire();
            group.manager.stop_all().await;
        }
    }
}
