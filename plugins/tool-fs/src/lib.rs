//! Plugin `tool-fs`: registers `read`, `write`, `edit`, `glob`, `grep` and `todo_write` with
//! the `tools` service. Bodies are `dsh-tool-fs-core`'s; every file operation of `read`,
//! `write` and `edit` goes through the host's `fs` service (so a sandbox that replaces that row
//! confines them), and each body runs on the host's blocking pool, walks and searches too.
//! Where a `client_files` row serves a full-access session (an editor over ACP), `read`,
//! `write` and `edit` read and write the text of its files through its client
//! (`dsh_fs_local::session_files`); a sandboxed session's files are always `fs`'s.
//! Paths resolve against the call's working directory. `write` and `edit` obey the session's
//! sandbox policy (the `sandbox` service's mode and writable roots, the ones the shell runs
//! under; without that service, `DSH_PERMISSION_MODE` over the working directory and the temp
//! dirs): `workspace-write` refuses a target whose real path (symlinks and `..` resolved) lies
//! outside the roots, `read-only` refuses every mutation.
//! Reads are remembered per session, so an `edit` of a file never read, or changed since, fails
//! with `FS_NOT_OBSERVED` / `FS_STALE_VERSION`. `todo_write` logs `todo/write` in the session.
//! The row sets how many paths one `glob` shows inline and whether a longer result shows its
//! modification-time head or a sample across the search root's top-level entries.

mod specs;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RNone, ROption, RSome, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_fs_local::{FileSystem, Remote, WithStrict, session_files};
use dsh_plugin_api::cancel::{CancelBox, Either, first_of};
use dsh_plugin_api::io::client_files::CLIENT_FILES_SERVICE;
use dsh_plugin_api::io::fs::{FS_SERVICE, FS_STRICT_SERVICE, FsService, FsStrictService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{Serialize, lock};
use dsh_protocol::{
    ContentBlock, OutcomeSummary, TodoWriteEvent, ToolDecl, ToolError as ToolFailureReply,
    ToolReply, ToolSuccess,
};
use dsh_sandbox_seam::{SANDBOX_SERVICE, call_policy};
use dsh_sessions_seam::NewEventRecord;
use dsh_sessions_seam::{SESSION_DISPOSED, append_or_report};
use dsh_tool_fs_core::{
    EditArgs, FileLine, GlobArgs, GrepArgs, Observations, ReadArgs, SandboxMode, SearchOptions,
    TodoWriteArgs, ToolError, Workspace, WriteArgs, edit, format_read_output, glob, grep,
    parse_args, read, todo_write, write,
};
use dsh_tools_seam::{CallView, TOOLS_SERVICE, Tool, ToolsService, tool_box};
use serde_json::Value;

/// Which tool an object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Write,
    Edit,
    Glob,
    Grep,
    TodoWrite,
}

const KINDS: [Kind; 6] = [
    Kind::Read,
    Kind::Write,
    Kind::Edit,
    Kind::Glob,
    Kind::Grep,
    Kind::TodoWrite,
];

/// Config of `tool-fs`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct FsConfig {
    /// Tools not to register (by name).
    pub disable: Vec<String>,
    /// Whether `todo_write` accepts several items `in_progress` (the reference ships it on).
    pub allow_parallel_in_progress: bool,
    /// Paths one `glob` call shows inline (at least 1; default 100).
    pub glob_max_results: usize,
    /// Whether a `glob` result over `globMaxResults` shows paths taken in turn from each
    /// top-level entry of the search root (so the page spans the tree) instead of the
    /// modification-time head (the default, as the reference's shipped presets say).
    pub sample_over_cap_glob_results: bool,
}

impl Default for FsConfig {
    fn default() -> Self {
        let search = SearchOptions::default();
        Self {
            disable: Vec::new(),
            allow_parallel_in_progress: true,
            glob_max_results: search.glob_max_results,
            sample_over_cap_glob_results: search.sample_over_cap_glob_results,
        }
    }
}

/// The `glob` caps a row's config sets: the tool's description and every call follow them.
#[derive(Clone, Copy)]
pub(crate) struct GlobCaps {
    pub(crate) max_results: usize,
    pub(crate) sample: bool,
}

/// State shared by the six tools of one row.
struct Shared {
    ctx: Context,
    mode: SandboxMode,
    /// The host's `fs` service: every file operation goes through it.
    fs: Arc<dyn FileSystem>,
    /// What each session has read, for the read-before-edit policy.
    observations: Mutex<HashMap<String, Arc<Observations>>>,
    allow_parallel_in_progress: bool,
    glob: GlobCaps,
}

impl Shared {
    /// The workspace of `call`: the session's sandbox policy (its mode and writable roots)
    /// when the `sandbox` service runs, so the file tools and the shell obey one policy; else
    /// `DSH_PERMISSION_MODE` over the working directory and the temp dirs.
    fn workspace(&self, call: &CallView, kind: Kind) -> Workspace {
        let base = Workspace::new(call.cwd.as_str()).with_fs(self.fs.clone());
        let policy = call_policy(&self.ctx, &call.session, &call.cwd, &call.call_id);
        let workspace = match policy {
            None => base.with_mode(self.mode).with_temp_roots(),
            // A refusal says the call may ask for a wider mode (`sandbox_permissions`).
            Some(policy) => base
                .with_escalation_available(policy.mode != SandboxMode::DangerFullAccess)
                .with_policy(policy),
        };
        // The text of the files it reads and changes through the session's client, where one
        // serves it; searches walk the disk.
        if matches!(kind, Kind::Glob | Kind::Grep) {
            return workspace;
        }
        let unconfined = workspace.mode() == SandboxMode::DangerFullAccess;
        let files = session_files(&self.ctx, &self.fs, &call.session, unconfined);
        workspace.with_fs(files)
    }

    fn observations(&self, session: &str) -> Arc<Observations> {
        lock(&self.observations)
            .entry(session.to_owned())
            .or_insert_with(|| Arc::new(Observations::new()))
            .clone()
    }
}

fn permission_mode() -> SandboxMode {
    std::env::var("DSH_PERMISSION_MODE")
        .ok()
        .and_then(|name| SandboxMode::parse(&name))
        .unwrap_or(SandboxMode::WorkspaceWrite)
}

struct FsTool {
    kind: Kind,
    shared: Arc<Shared>,
}

fn error_reply(error: &ToolError) -> ToolReply {
    let info = error.info();
    ToolReply::Error(ToolFailureReply {
        message: error.message().to_owned(),
        name: info.as_ref().map(|info| info.name.clone()),
        code: info.map(|info| info.code),
        content: None,
        meta: None,
    })
}

/// The value of every file tool's result: its text, which is also its content.
#[derive(Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct TextValue {
    text: String,
}

/// The value of a `read`: its structured window (the `meta`, as the reference's read value),
/// which a Code Mode program reads and `render` turns back into the text.
#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
struct ReadValue {
    path: String,
    offset: usize,
    lines: Vec<FileLine>,
    total_lines: usize,
}

impl ReadValue {
    fn text(&self) -> String {
        let shown = self.lines.len();
        format_read_output(
            &self.path,
            self.offset,
            shown,
            &self.lines,
            self.total_lines,
        )
    }
}

fn ok_reply(text: String, meta: Option<Value>) -> ToolReply {
    ToolReply::Ok(ToolSuccess {
        value: serde_json::to_value(TextValue { text: text.clone() }).unwrap_or_default(),
        content: vec![ContentBlock::text(text)],
        meta,
        concludes_turn: false,
    })
}

/// The blocking body of one call: the reply, and for `todo_write` the event to log.
fn run(
    kind: Kind,
    arguments: &Value,
    workspace: &Workspace,
    observations: &Observations,
    stop: Arc<AtomicBool>,
    allow_parallel_in_progress: bool,
    glob_caps: GlobCaps,
) -> Result<(ToolReply, Option<TodoWriteEvent>), ToolError> {
    let options = SearchOptions {
        cancel: Some(stop),
        glob_max_results: glob_caps.max_results,
        sample_over_cap_glob_results: glob_caps.sample,
        ..SearchOptions::default()
    };
    Ok(match kind {
        Kind::Read => {
            let output = read(
                &parse_args::<ReadArgs>(arguments)?,
                workspace,
                Some(observations),
            )?;
            let reply = ToolReply::Ok(ToolSuccess {
                value: output.meta.clone(),
                content: vec![ContentBlock::text(output.text)],
                meta: Some(output.meta),
                concludes_turn: false,
            });
            (reply, None)
        }
        Kind::Write => {
            let output = write(
                &parse_args::<WriteArgs>(arguments)?,
                workspace,
                Some(observations),
            )?;
            (ok_reply(output.text, Some(output.meta)), None)
        }
        Kind::Edit => {
            let output = edit(
                &parse_args::<EditArgs>(arguments)?,
                workspace,
                Some(observations),
            )?;
            (ok_reply(output.text, Some(output.meta)), None)
        }
        Kind::Glob => {
            let output = glob(&parse_args::<GlobArgs>(arguments)?, workspace, &options)?;
            (ok_reply(output.text, Some(output.meta)), None)
        }
        Kind::Grep => {
            let output = grep(&parse_args::<GrepArgs>(arguments)?, workspace, &options)?;
            (ok_reply(output.text, Some(output.meta)), None)
        }
        Kind::TodoWrite => {
            let output = todo_write(
                &parse_args::<TodoWriteArgs>(arguments)?,
                allow_parallel_in_progress,
            )?;
            (ok_reply(output.text, None), Some(output.event))
        }
    })
}

impl Tool for FsTool {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&specs::spec(self.kind, self.shared.glob))
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let (kind, shared) = (self.kind, self.shared.clone());
        async move {
            let arguments: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
            let workspace = shared.workspace(&call, kind);
            let observations = shared.observations(&call.session);
            let stop = Arc::new(AtomicBool::new(false));
            let job_stop = stop.clone();
            let (parallel, glob_caps) = (shared.allow_parallel_in_progress, shared.glob);
            let job = shared.ctx.blocking(move || {
                run(
                    kind,
                    &arguments,
                    &workspace,
                    &observations,
                    job_stop,
                    parallel,
                    glob_caps,
                )
            });
            // A search stops at its next entry when the call is cancelled (a walk can be long);
            // a file operation is short and always finishes, so its result stays truthful.
            let ran = match kind {
                Kind::Glob | Kind::Grep => match first_of(job, cancel.cancelled()).await {
                    Either::Left(ran) => ran,
                    Either::Right(()) => {
                        stop.store(true, Ordering::Relaxed);
                        let reply =
                            ToolReply::error(format!("{} was cancelled", specs::name(kind)));
                        return Json::encode(&reply);
                    }
                },
                _ => job.await,
            };
            let reply = match ran {
                Ok(Ok((reply, event))) => {
                    if let Some(event) = event {
                        // A call outside a session logs nothing.
                        append_or_report(
                            &shared.ctx,
                            "tool-fs",
                            &call.session,
                            NewEventRecord::of(&event),
                        )
                        .await;
                    }
                    reply
                }
                Ok(Err(error)) => error_reply(&error),
                Err(error) => ToolReply::error(error.to_string()),
            };
            Json::encode(&reply)
        }
        .into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }

    /// A result's value is `{"text"}` (a read's, its window): the content is that text.
    fn render(&self, value: Json<Value>) -> ROption<Json<Vec<ContentBlock>>> {
        let text = value.decode().ok().and_then(|value| match self.kind {
            Kind::Read => serde_json::from_value::<ReadValue>(value)
                .ok()
                .map(|read| read.text()),
            _ => serde_json::from_value::<TextValue>(value)
                .ok()
                .map(|value| value.text),
        });
        match text {
            Some(text) => RSome(Json::encode(&vec![ContentBlock::text(text)])),
            None => RNone,
        }
    }
}

pub struct FsPlugin;

impl Plugin for FsPlugin {
    const NAME: &'static str = "tool-fs";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE, FS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        SANDBOX_SERVICE,
        dsh_plugin_api::io::fs::FS_STRICT_SERVICE,
        dsh_sessions_seam::SESSIONS_SERVICE,
        CLIENT_FILES_SERVICE,
    ];
    type Config = FsConfig;

    async fn apply(ctx: Context, config: FsConfig) -> Result<(), PluginError> {
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        for name in &config.disable {
            if !KINDS.iter().any(|kind| specs::name(*kind) == name) {
                return Err(PluginError::new(
                    dsh_plugin_api::ErrorKind::Config,
                    format!(
                        "disable: `{name}` is not one of read, write, edit, glob, grep, todo_write"
                    ),
                ));
            }
        }
        if config.glob_max_results == 0 {
            return Err(PluginError::new(
                dsh_plugin_api::ErrorKind::Config,
                "globMaxResults: must be at least 1 (the paths one glob call shows inline)",
            ));
        }
        // The strict reads and writes come with the host's `fs` row; a provider that replaces
        // it without them confines the paths itself.
        let strict = ctx.get::<FsStrictService>(FS_STRICT_SERVICE).ok().flatten();
        let fs: Arc<dyn FileSystem> = Arc::new(WithStrict {
            fs: Remote(ctx.inject::<FsService>(FS_SERVICE)?),
            strict,
        });
        let shared = Arc::new(Shared {
            ctx: ctx.clone(),
            mode: permission_mode(),
            fs,
            observations: Mutex::new(HashMap::new()),
            allow_parallel_in_progress: config.allow_parallel_in_progress,
            glob: GlobCaps {
                max_results: config.glob_max_results,
                sample: config.sample_over_cap_glob_results,
            },
        });
        // A session's reads stop mattering once it is disposed.
        let forget = Arc::downgrade(&shared);
        ctx.on_emit(&SESSION_DISPOSED, move |id: &RString| {
            if let Some(shared) = forget.upgrade() {
                lock(&shared.observations).remove(id.as_str());
            }
        })?;
        let mut held = Vec::new();
        for kind in KINDS {
            if config.disable.iter().any(|name| name == specs::name(kind)) {
                continue;
            }
            let tool = FsTool {
                kind,
                shared: shared.clone(),
            };
            let registration = tools
                .register(RString::from(ctx.row_id()), RString::new(), tool_box(tool))
                .into_result()
                .map_err(|error| PluginError::plugin(error.to_string()))?;
            held.push(registration);
        }
        ctx.on_dispose(move || drop(held))
    }
}

dsh_plugin_api::export_plugins!(FsPlugin);
