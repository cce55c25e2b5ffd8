//! Plugin `tool-str-replace-editor`: the `str_replace_editor` tool of the `minimal` preset
//! (the reference's `dsh-tool-str-replace-editor`), one tool with five commands: `view` (a
//! file's numbered lines, or a directory two levels deep without hidden entries), `create`,
//! `str_replace` (one exact, unique match), `insert` (after a line) and `undo_edit` (the last
//! change this tool made to a file). Its bodies are `dsh-tool-fs-core`'s, so it obeys what
//! `write` and `edit` obey: the session's sandbox policy, every file operation through the
//! host's `fs` service (the text through the client of a full-access session where a
//! `client_files` row serves it), and read-before-write: a file is changed only after a `view` of it (or
//! this tool's own last change) and only if it did not change since. `scope` is the tool layer
//! it registers in ("" the global one, `preset:<id>` a preset's).

mod commands;
mod view;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RNone, ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_fs_local::{FileSystem, Remote, WithStrict, session_files};
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::io::client_files::CLIENT_FILES_SERVICE;
use dsh_plugin_api::io::fs::{FS_SERVICE, FS_STRICT_SERVICE, FsService, FsStrictService};
use dsh_plugin_api::lock;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{ContentBlock, OutcomeSummary, ToolDecl, ToolReply};
use dsh_sandbox_seam::{SANDBOX_SERVICE, call_policy};
use dsh_sessions_seam::SESSION_DISPOSED;
use dsh_tool_fs_core::{Observations, SandboxMode, Workspace};
use dsh_tools_seam::{CallView, TOOLS_SERVICE, Tool, ToolsService, tool_box};

use crate::commands::History;

/// Config of `tool-str-replace-editor`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct EditorConfig {
    /// The tool layer the tool registers in ("" the global one, `preset:<id>` a preset's).
    pub scope: String,
}

/// What each session's calls share.
pub(crate) struct Shared {
    ctx: Context,
    fs: Arc<dyn FileSystem>,
    /// What each session has viewed, for read-before-write.
    observations: Mutex<HashMap<String, Arc<Observations>>>,
    /// Each session's undo history.
    histories: Mutex<HashMap<String, Arc<History>>>,
}

impl Shared {
    /// The workspace of `call` under the session's sandbox policy, as `tool-fs` makes it.
    fn workspace(&self, call: &CallView) -> Workspace {
        let policy = call_policy(&self.ctx, &call.session, &call.cwd, &call.call_id);
        let workspace = Workspace::new(call.cwd.as_str())
            .with_fs(self.fs.clone())
            .with_policy_or_env(policy);
        // The text of its files through the session's client, where one serves it.
        let unconfined = workspace.mode() == SandboxMode::DangerFullAccess;
        let files = session_files(&self.ctx, &self.fs, &call.session, unconfined);
        workspace.with_fs(files)
    }

    fn of<T: Default>(map: &Mutex<HashMap<String, Arc<T>>>, session: &str) -> Arc<T> {
        lock(map).entry(session.to_owned()).or_default().clone()
    }
}

struct Editor {
    shared: Arc<Shared>,
}

impl Tool for Editor {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&ToolDecl::new(
            "str_replace_editor",
            commands::DESCRIPTION,
            commands::parameters(),
        ))
    }

    fn execute(&self, call: CallView, _cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let shared = self.shared.clone();
        async move {
            let workspace = shared.workspace(&call);
            let observations = Shared::of(&shared.observations, &call.session);
            let history = Shared::of(&shared.histories, &call.session);
            let arguments = call.arguments.to_string();
            // File operations block: they run on the host's blocking pool, and always finish
            // (a half-done change would be worse than a late one).
            let job = shared
                .ctx
                .blocking(move || commands::run(&arguments, &workspace, &observations, &history));
            let reply = match job.await {
                Ok(reply) => reply,
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
}

pub struct EditorPlugin;

impl Plugin for EditorPlugin {
    const NAME: &'static str = "tool-str-replace-editor";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE, FS_SERVICE];
    const OPTIONAL: &'static [&'static str] =
        &[SANDBOX_SERVICE, FS_STRICT_SERVICE, CLIENT_FILES_SERVICE];
    type Config = EditorConfig;

    async fn apply(ctx: Context, config: EditorConfig) -> Result<(), PluginError> {
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let strict = ctx.get::<FsStrictService>(FS_STRICT_SERVICE).ok().flatten();
        let fs: Arc<dyn FileSystem> = Arc::new(WithStrict {
            fs: Remote(ctx.inject::<FsService>(FS_SERVICE)?),
            strict,
        });
        let shared = Arc::new(Shared {
            ctx: ctx.clone(),
            fs,
            observations: Mutex::new(HashMap::new()),
            histories: Mutex::new(HashMap::new()),
        });
        let forget = Arc::downgrade(&shared);
        ctx.on_emit(&SESSION_DISPOSED, move |id: &RString| {
            if let Some(shared) = forget.upgrade() {
                lock(&shared.observations).remove(id.as_str());
                lock(&shared.histories).remove(id.as_str());
            }
        })?;
        let registration = tools
            .register(
                RString::from(ctx.row_id()),
                RString::from(config.scope.as_str()),
                tool_box(Editor { shared }),
            )
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?;
        ctx.on_dispose(move || drop(registration))
    }
}

dsh_plugin_api::export_plugins!(EditorPlugin);
