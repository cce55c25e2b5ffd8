//! Plugin `plugin-author`: the tools with which an agent extends the harness it runs in.
//! `plugin_new` writes a plugin crate from the template `cargo xtask new-plugin` writes
//! (`dsh-plugin-template`) into the session's workspace; `plugin_build` runs `cargo build` on
//! it through the `sandbox` service, confined like any `bash` command, and answers with the
//! compiler's messages when it fails; `plugin_install` has the host's own check (`dsh-host
//! check`, in the sandbox too) load the library, copies it into the plugins folder only when
//! that passes, and mounts it as a child of this row, so the tools it registers are offered from
//! the model's next step on. A plugin that fails in `apply` is reported in the install's result.
//!
//! Builds share one cargo target directory (`targetDir`, under the dsh home by default), so a
//! second plugin links against the dependencies the first one compiled; where the session's
//! sandbox does not let commands write there, the crate's own `target` is used and the result
//! says so. The tools register into `scope` (an agent preset's layer, or the global one).
//! What a row installed is listed in `installedFile` and mounted again when the row next
//! applies. The skill under `skills/plugin-author` teaches the plugin API; this row answers
//! `skills/roots` with its folder for the sessions of its scope, so the skill is in their
//! catalog (and no one else's).

mod build;
mod error;
mod install;
mod installed;
mod new;
mod replace;
mod run;
mod tools;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use abi_stable::std_types::RString;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{SandboxMode, SandboxPolicy};
use dsh_sandbox_seam::{SANDBOX_SERVICE, SandboxService};
use dsh_skills_seam::SKILLS_ROOTS;
use dsh_tools_seam::{CallView, TOOLS_SERVICE, ToolsService, tool_box};

use crate::tools::{AuthorTool, Kind};

/// Config of `plugin-author`.
#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct AuthorConfig {
    /// The tool layer the three tools register into: empty for the global one, or an agent
    /// preset's (`preset:plugin-author`). An installed plugin gets it as its `scope` config.
    pub scope: String,
    /// Where `plugin_install` puts libraries (default `$DSH_HOME/plugins`).
    pub plugins_dir: Option<String>,
    /// The cargo target directory all plugin builds share (default `$DSH_HOME/plugin-target`).
    /// Used where the session's sandbox lets commands write it; else each crate's own.
    pub target_dir: Option<String>,
    /// The `plugin-api` crate new plugins depend on (default: the one this plugin was built
    /// from).
    pub api_path: Option<String>,
    /// Where the plugins this row installed are listed, to be mounted again at the next start
    /// (default `$DSH_HOME/plugin-author/installed.json`).
    pub installed_file: Option<String>,
    /// The cargo program.
    pub cargo: String,
    /// The `dsh-host` program that checks a library before it is installed (default: this
    /// host's own executable).
    pub host_program: Option<String>,
    /// How long one build may take (ms).
    pub build_timeout_ms: u64,
    /// How long the library check may take (ms).
    pub check_timeout_ms: u64,
    /// How long an installed plugin may take to become active before the result says it is
    /// still waiting (ms).
    pub settle_timeout_ms: u64,
    /// The most bytes of compiler or check messages a result carries.
    pub max_message_bytes: usize,
}

impl Default for AuthorConfig {
    fn default() -> Self {
        Self {
            scope: String::new(),
            plugins_dir: None,
            target_dir: None,
            api_path: None,
            installed_file: None,
            cargo: "cargo".to_owned(),
            host_program: None,
            build_timeout_ms: 600_000,
            check_timeout_ms: 60_000,
            settle_timeout_ms: 10_000,
            max_message_bytes: 8_000,
        }
    }
}

/// The settled configuration and what the tools remember between calls.
pub(crate) struct State {
    pub ctx: Context,
    pub sandbox: Service<SandboxService>,
    pub tools: Service<ToolsService>,
    pub scope: String,
    pub plugins_dir: PathBuf,
    pub installed_file: PathBuf,
    pub target_dir: PathBuf,
    pub api_path: PathBuf,
    /// The skill's folder: its guide and the example tool plugin.
    pub guide: PathBuf,
    pub cargo: String,
    pub host_program: PathBuf,
    pub build_timeout_ms: u64,
    pub check_timeout_ms: u64,
    pub settle_timeout_ms: u64,
    pub max_message_bytes: usize,
    /// The library each crate's last successful build produced, by crate directory.
    pub built: Mutex<HashMap<PathBuf, build::Built>>,
    /// The plugins this row mounted, by library name: the child fiber.
    pub mounted: Mutex<HashMap<String, u64>>,
}

impl State {
    /// `path` (an argument) against the call's working directory.
    pub(crate) fn resolve(call: &CallView, path: &str) -> PathBuf {
        let joined = Path::new(call.cwd.as_str()).join(path);
        std::path::absolute(&joined).unwrap_or(joined)
    }

    /// The sandbox policy of `call`.
    pub(crate) fn policy(&self, call: &CallView) -> Option<SandboxPolicy> {
        self.sandbox
            .policy(call.session.clone(), call.cwd.clone(), call.call_id.clone())
            .decode()
            .ok()
    }

    /// Whether `call`'s confined commands may write `path` (inside a writable root, or the
    /// session runs with full access).
    pub(crate) fn writable(&self, call: &CallView, path: &Path) -> bool {
        match self.policy(call) {
            Some(policy) => match policy.mode {
                SandboxMode::DangerFullAccess => true,
                SandboxMode::ReadOnly => false,
                _ => policy
                    .writable_roots
                    .iter()
                    .any(|root| path.starts_with(root)),
            },
            None => false,
        }
    }
}

/// `$DSH_HOME` as the host finds it: the variable, else `~/.dsh-host`.
fn dsh_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("DSH_HOME").filter(|home| !home.is_empty()) {
        return Some(PathBuf::from(home));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".dsh-host"))
}

fn config_error(field: &str, message: &str) -> PluginError {
    PluginError::plugin(format!("plugin-author config `{field}`: {message}"))
}

pub struct PluginAuthor;

impl Plugin for PluginAuthor {
    const NAME: &'static str = "plugin-author";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE, SANDBOX_SERVICE];
    type Config = AuthorConfig;

    async fn apply(ctx: Context, config: AuthorConfig) -> Result<(), PluginError> {
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let sandbox = ctx.inject::<SandboxService>(SANDBOX_SERVICE)?;
        let home = dsh_home();
        let under_home = |field: &str, value: Option<String>, sub: &str| match (value, &home) {
            (Some(value), _) => Ok(PathBuf::from(value)),
            (None, Some(home)) => Ok(home.join(sub)),
            (None, None) => Err(config_error(
                field,
                "not set, and neither DSH_HOME nor HOME is",
            )),
        };
        let plugins_dir = under_home("pluginsDir", config.plugins_dir, "plugins")?;
        let target_dir = under_home("targetDir", config.target_dir, "plugin-target")?;
        let installed_file = under_home(
            "installedFile",
            config.installed_file,
            "plugin-author/installed.json",
        )?;
        for (field, path) in [
            ("pluginsDir", &plugins_dir),
            ("targetDir", &target_dir),
            ("installedFile", &installed_file),
        ] {
            if !path.is_absolute() {
                return Err(config_error(field, "must be an absolute path"));
            }
        }
        let api_path = match config.api_path {
            Some(path) => PathBuf::from(path),
            // The source tree this plugin was built from: the plugin-api the host speaks.
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugin-api"),
        };
        let api_path = std::fs::canonicalize(&api_path).unwrap_or(api_path);
        if !api_path.join("Cargo.toml").is_file() {
            return Err(config_error(
                "apiPath",
                &format!("{} holds no Cargo.toml", api_path.display()),
            ));
        }
        // Named in plugin_new's result, so a session whose skills row does not list the
        // skill's folder still finds the example.
        let guide = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills/plugin-author");
        let guide = std::fs::canonicalize(&guide).unwrap_or(guide);
        let host_program = match config.host_program {
            Some(program) => PathBuf::from(program),
            None => std::env::current_exe()
                .map_err(|error| config_error("hostProgram", &error.to_string()))?,
        };
        let state = Arc::new(State {
            ctx: ctx.clone(),
            sandbox,
            tools: tools.clone(),
            scope: config.scope.clone(),
            plugins_dir,
            installed_file,
            target_dir,
            api_path,
            guide,
            cargo: config.cargo,
            host_program,
            build_timeout_ms: config.build_timeout_ms,
            check_timeout_ms: config.check_timeout_ms,
            settle_timeout_ms: config.settle_timeout_ms,
            max_message_bytes: config.max_message_bytes,
            built: Mutex::new(HashMap::new()),
            mounted: Mutex::new(HashMap::new()),
        });
        let mut registrations = Vec::new();
        for kind in [Kind::New, Kind::Build, Kind::Install] {
            let tool = AuthorTool {
                kind,
                state: state.clone(),
            };
            registrations.push(
                tools
                    .register(
                        RString::from(ctx.row_id()),
                        RString::from(config.scope.as_str()),
                        tool_box(tool),
                    )
                    .into_result()
                    .map_err(|error| PluginError::plugin(error.to_string()))?,
            );
        }
        offer_skill(&ctx, &config.scope, &state.guide)?;
        remount(&state);
        ctx.on_dispose(move || drop(registrations))
    }
}

/// Adds the folder holding skill `guide` to the skills of the sessions that see this row's
/// tools: those whose tool scope chain holds `scope` (every session when it is global).
fn offer_skill(ctx: &Context, scope: &str, guide: &Path) -> Result<(), PluginError> {
    let Some(root) = guide
        .parent()
        .map(|root| root.to_string_lossy().into_owned())
    else {
        return Ok(());
    };
    let scope = scope.to_owned();
    ctx.on_waterfall(&SKILLS_ROOTS, move |next| {
        let chain = next.payload().decode();
        let root = root.clone();
        let scope = scope.clone();
        async move {
            let mut roots = next.run().await?;
            let serves = chain.is_ok_and(|chain: Vec<String>| {
                scope.is_empty() || chain.iter().any(|key| *key == scope)
            });
            if serves {
                let mut folders: Vec<String> = roots.decode().unwrap_or_default();
                folders.push(root);
                roots = Json::encode(&folders);
            }
            Ok(roots)
        }
    })
}

/// Mounts again what this row's scope installed before (a child lives only as long as the
/// host). A plugin whose library is gone is left out; one that fails says so in the log and
/// in the host's fiber table, like any row.
fn remount(state: &State) {
    let entries = match installed::load(&state.installed_file) {
        Ok(entries) => entries,
        Err(error) => {
            dsh_plugin_api::tracing::warn!(
                "plugin-author: not mounting installed plugins: {error}"
            );
            return;
        }
    };
    for entry in entries
        .into_iter()
        .filter(|entry| entry.scope == state.scope)
    {
        if !state
            .plugins_dir
            .join(format!("lib{}.so", entry.name))
            .is_file()
        {
            continue;
        }
        match state
            .ctx
            .mount(&entry.name, &serde_json::Value::Object(entry.config))
        {
            Ok(fiber) => {
                dsh_plugin_api::lock(&state.mounted).insert(entry.name, fiber);
            }
            Err(error) => dsh_plugin_api::tracing::warn!(
                "plugin-author: installed plugin `{}` not mounted: {error}",
                entry.name
            ),
        }
    }
}

dsh_plugin_api::export_plugins!(PluginAuthor);
