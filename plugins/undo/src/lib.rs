//! Plugin `undo`: every change a turn makes to its workspace is recorded as it happens, so
//! `/undo` can revert the last turn and `/rewind TURN` (a client's "rewind to here",
//! `session.rewind`) every turn from TURN on, without git.
//!
//! How: the plugin wraps `tools/execute`, the one path every tool body runs through (`write`,
//! `edit`, `bash`, Code Mode, MCP tools, subagent tools, ...). Around each call that may
//! change files (every tool but the read-only ones the row names) it records the call's
//! working directory (see `scan`, `recorder`): the first call in a workspace copies the content
//! of every path into a content-addressed store under the dsh home (`store`) and watches its
//! directories (inotify, `watch`); each call's end lists again only the directories the kernel
//! says changed (the whole workspace when it cannot say), reading content only where the
//! `lstat` fields moved; it finds each path the call created, changed, removed or re-moded (the inode change time
//! tells the call's changes from a person's made between calls), stores the new content, and
//! logs one `undo/change` event for the call with its turn and each path's before and after
//! (kind, content hash, permission bits). The log is the truth: `/undo` reads which turns
//! changed what and which were already reverted (`undo/revert`), checks everything first
//! (`revert`), then puts the paths back, and logs `undo/revert`. A path changed since by
//! someone else is a conflict and a content with no object in the store is a missing
//! snapshot: either refuses the undo whole, naming the paths, before anything is touched.
//!
//! Why this rather than hooks in the sandbox and the file tools: the tools pipeline already
//! brackets every call, whatever starts the process, so no tool or sandbox backend needs to
//! know about undo, and a tool added tomorrow is covered. An overlay per command (its upper
//! layer committed at the end of the call) was the other way, but the bubblewrap here (0.8)
//! has no `--overlay`, Landlock has no mounts at all, and an overlay hides a background job's
//! writes from everyone until it ends.
//!
//! Limits, said plainly:
//! - Only the call's working directory is recorded (not `/tmp`, not extra writable roots);
//!   directories named `.git` are never entered nor touched; the excluded paths (the dsh
//!   home) neither; names that are not UTF-8 are skipped. What git ignores there (a build
//!   folder, `node_modules`: `.git/info/exclude` and the `.gitignore` files from the
//!   repository's top down to the workspace) is not recorded unless `recordIgnored` (the first
//!   call would copy a whole `target/` into the store); the `.gitignore` files of subfolders
//!   of the workspace are not read.
//! - A file over `maxFileBytes` has no snapshot: a turn that changed it cannot be undone (the
//!   undo says so, naming it). A workspace over `maxEntries` is not recorded at all: its calls
//!   log `undo/change` with the reason, and their turns cannot be undone.
//! - What changes in the workspace while a call runs is the call's: a person's edit made during
//!   a call (or up to 20 ms before it, the kernel's timestamps being coarse), or another
//!   session's call in the same directory, is recorded with it. Writes a background job or a
//!   hook makes between calls are not recorded (they become the baseline).
//! - Each recorded call costs what changed (about 1 ms in release here, whatever the size of
//!   the workspace); the first call in a workspace since the host started reads and stores
//!   every file (objects already there are not written again), and so does a call after the
//!   kernel's event queue overflowed (a whole walk). A write through a shared `mmap` raises no
//!   event and is seen only at the next whole walk. The store is never pruned: remove
//!   `$DSH_HOME/undo` to reclaim it, which makes older turns refuse to undo.
//! - There is no redo; an undo is itself an ordinary change for the next call's baseline.

mod clock;
mod command;
mod events;
mod recorder;
mod revert;
mod scan;
mod store;
#[cfg(test)]
mod tests;
mod watch;

use std::path::PathBuf;
use std::sync::Arc;

use dsh_plugin_api::LogLevel;
use dsh_plugin_api::prelude::*;
use dsh_sessions_seam::{NewEventRecord, SESSIONS_SERVICE, SessionsService, append_or_report};
use dsh_tools_seam::TOOLS_EXECUTE;

use crate::events::ChangeEvent;
use crate::recorder::{Limits, Recorder};
use crate::store::Store;

/// The tools that never change files: their calls are not scanned.
const READ_ONLY_TOOLS: [&str; 8] = [
    "read",
    "glob",
    "grep",
    "todo_write",
    "job_output",
    "job_list",
    "ask_user_question",
    "list_agents",
];

/// Config of `undo`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct UndoConfig {
    /// The store's directory (default `$DSH_HOME/undo`).
    pub store: Option<String>,
    /// Absolute paths never recorded nor touched (the dsh home).
    pub exclude: Vec<String>,
    /// Files larger than this have no snapshot (default 16 MiB).
    pub max_file_bytes: Option<u64>,
    /// A workspace with more entries is not recorded (default 200,000).
    pub max_entries: Option<usize>,
    /// Record the paths git ignores in the workspace too (default false: a build
    /// folder or `node_modules` is neither copied nor watched, and a change in it cannot be
    /// undone).
    #[serde(default)]
    pub record_ignored: bool,
    /// Tools whose calls are not scanned (default: read, glob, grep, todo_write, job_output,
    /// job_list, ask_user_question, list_agents).
    pub read_only_tools: Option<Vec<String>>,
}

fn default_store() -> PathBuf {
    match std::env::var_os("DSH_HOME") {
        Some(home) => PathBuf::from(home).join("undo"),
        None => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir)
            .join(".dsh-host")
            .join("undo"),
    }
}

fn config_error(path: &str, message: String) -> PluginError {
    PluginError {
        kind: dsh_plugin_api::ErrorKind::Config,
        message: format!("invalid config: {message}").into(),
        path: abi_stable::std_types::RSome(path.into()),
    }
}

/// Records one call (when it may change files) around its body.
fn record(
    ctx: &Context,
    recorder: Arc<Recorder>,
    read_only: Arc<Vec<String>>,
) -> Result<(), PluginError> {
    let owner = ctx.clone();
    ctx.on_waterfall(&TOOLS_EXECUTE, move |next| {
        let (ctx, recorder, read_only) = (owner.clone(), recorder.clone(), read_only.clone());
        let call = next.payload().clone();
        async move {
            let name = call.name.to_string();
            if call.session.is_empty() || call.cwd.is_empty() || read_only.contains(&name) {
                return next.run().await;
            }
            // Absolute, as the excluded paths are: an agent's calls always carry an absolute
            // one, but a caller driving the loop directly (`bench-model` gives `.`) would
            // otherwise never match the dsh home's path, and the home's own files, the session
            // logs being written, would be scanned and recorded at every call.
            let root = std::path::absolute(call.cwd.as_str())
                .unwrap_or_else(|_| PathBuf::from(call.cwd.as_str()));
            let root_text = root.display().to_string();
            // A workspace scanned before needs no reading to begin, and a call after which
            // nothing moved (the kernel says so) none to end: two trips to the blocking pool
            // saved on most calls (a no-op step of the instant model: 3,000 steps 2.07 s with
            // the recorder, 1.31 s without, before this).
            let began = match recorder.begin_known(&root) {
                Some(recording) => Ok(Ok(recording)),
                None => {
                    let worker = recorder.clone();
                    ctx.blocking(move || worker.begin(&root)).await
                }
            };
            let reply = next.run().await;
            let (changes, unrecorded) = match began {
                Ok(Ok(recording)) => match recorder.end_if_quiet(recording) {
                    Ok(changes) => (changes, None),
                    Err(recording) => {
                        let worker = recorder.clone();
                        match ctx.blocking(move || worker.end(recording)).await {
                            Ok(Ok(changes)) => (changes, None),
                            Ok(Err(error)) => (Vec::new(), Some(error.to_string())),
                            Err(error) => (Vec::new(), Some(error.to_string())),
                        }
                    }
                },
                Ok(Err(error)) => (Vec::new(), Some(error.to_string())),
                Err(error) => (Vec::new(), Some(error.to_string())),
            };
            if let Some(why) = &unrecorded {
                ctx.log(
                    LogLevel::Warn,
                    &format!("`{name}` call not recorded for undo: {why}"),
                );
            }
            if !changes.is_empty() || unrecorded.is_some() {
                let event = ChangeEvent {
                    turn: call.turn,
                    call_id: call.call_id.to_string(),
                    tool: name,
                    root: root_text,
                    changes,
                    unrecorded,
                };
                append_or_report(&ctx, "undo", &call.session, NewEventRecord::of(&event)).await;
            }
            reply
        }
    })
}

pub struct UndoPlugin;

impl Plugin for UndoPlugin {
    const NAME: &'static str = "undo";
    const INJECT: &'static [&'static str] = &[SESSIONS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[dsh_agents_seam::AGENTS_SERVICE];
    type Config = UndoConfig;

    async fn apply(ctx: Context, config: UndoConfig) -> Result<(), PluginError> {
        let sessions = ctx.inject::<SessionsService>(SESSIONS_SERVICE)?;
        for kind in events::kinds() {
            sessions
                .register_type(kind.clone(), false)
                .into_result()
                .map_err(|error| PluginError::plugin(format!("`{kind}`: {error}")))?;
        }
        let mut exclude = Vec::new();
        for (index, path) in config.exclude.iter().enumerate() {
            if !path.starts_with('/') {
                return Err(config_error(
                    &format!("$.exclude[{index}]"),
                    format!("`{path}` is not an absolute path"),
                ));
            }
            exclude.push(PathBuf::from(path));
        }
        let store = config.store.map_or_else(default_store, PathBuf::from);
        let limits = Limits {
            exclude,
            record_ignored: config.record_ignored,
            max_file_bytes: config.max_file_bytes.unwrap_or(16 << 20),
            max_entries: config.max_entries.unwrap_or(200_000),
        };
        let recorder = Arc::new(Recorder::new(Store::new(store), limits));
        let read_only = Arc::new(config.read_only_tools.unwrap_or_else(|| {
            READ_ONLY_TOOLS
                .iter()
                .map(|tool| (*tool).to_owned())
                .collect()
        }));
        record(&ctx, recorder.clone(), read_only)?;
        command::answer(&ctx, recorder)?;
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(UndoPlugin);
