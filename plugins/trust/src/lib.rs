//! Plugin `trust`: provides `trust`, which says whether the person trusts a project, so that a
//! cloned repository's own configuration (its MCP servers, hooks, settings and skills) does
//! nothing until they do. A project is the nearest folder above the working directory that
//! holds `.git`, else the working directory; it is trusted when it lies under a root the row's
//! `roots` list (which `settings.yaml` tunes as `trust: {roots: [...]}`), one remembered in the
//! row's `file` (a person answered the page or the terminal), or one trusted for this run
//! (`--trust-project`). What waits is the project configuration files present in the working
//! directory. Trusting emits `trust/changed`, which the readers of those files follow.

mod store;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, RResult, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{LogLevel, SeamError, lock};
use dsh_protocol::ProjectTrust;
use dsh_trust_seam::{TRUST_CHANGED, TRUST_SERVICE, Trust, Trust_TO};

use crate::store::Store;

/// The files and folders of a project's own configuration, relative to its working directory.
const PROJECT_FILES: [&str; 8] = [
    ".mcp.json",
    ".dsh/settings.yaml",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".codex/hooks.json",
    ".dsh/skills",
    ".agents/skills",
    ".claude/skills",
];

/// Config of `trust`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct TrustConfig {
    /// Where remembered answers are kept (`!home trusted-projects.json` in the agent bundle);
    /// unset: nothing is remembered.
    pub file: Option<String>,
    /// Absolute folders whose projects are trusted (everything below them).
    pub roots: Vec<String>,
}

/// The project of a session working in `cwd`.
fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

struct TrustImpl {
    ctx: Context,
    settings: Vec<PathBuf>,
    store: Store,
    /// Trusted for this run only.
    run: Mutex<Vec<PathBuf>>,
}

impl TrustImpl {
    /// What trusts the project `root`, if anything does.
    fn trusted_by(&self, root: &Path) -> Option<&'static str> {
        let under = |roots: &[PathBuf]| roots.iter().any(|trusted| root.starts_with(trusted));
        if under(&self.settings) {
            Some("settings")
        } else if under(&self.store.roots()) {
            Some("home")
        } else if under(&lock(&self.run)) {
            Some("run")
        } else {
            None
        }
    }

    fn describe_path(&self, cwd: &Path) -> ProjectTrust {
        let root = project_root(cwd);
        let by = self.trusted_by(&root);
        let waiting = match by {
            Some(_) => Vec::new(),
            None => PROJECT_FILES
                .iter()
                .filter(|name| cwd.join(name).exists())
                .map(|name| (*name).to_owned())
                .collect(),
        };
        ProjectTrust {
            root: root.display().to_string(),
            trusted: by.is_some(),
            by: by.map(str::to_owned),
            waiting,
        }
    }
}

struct Handle(Arc<TrustImpl>);

impl Trust for Handle {
    fn describe(&self, cwd: RString) -> Json<ProjectTrust> {
        Json::encode(&self.0.describe_path(Path::new(cwd.as_str())))
    }

    fn is_trusted(&self, cwd: RString) -> bool {
        let cwd = Path::new(cwd.as_str());
        // The project lies at or above `cwd`: a folder that trusts it holds `cwd` too, and
        // when none does (nothing trusted yet, most of the time) no folder need be looked at.
        if self.0.trusted_by(cwd).is_none() {
            return false;
        }
        self.0.trusted_by(&project_root(cwd)).is_some()
    }

    fn trust(
        &self,
        cwd: RString,
        remember: bool,
    ) -> FfiFuture<RResult<Json<ProjectTrust>, SeamError>> {
        let this = self.0.clone();
        async move {
            let cwd = PathBuf::from(cwd.as_str());
            if !cwd.is_absolute() {
                return RErr(SeamError::invalid(format!(
                    "`{}` is not an absolute folder",
                    cwd.display()
                )));
            }
            let root = project_root(&cwd);
            if remember {
                let store = this.store.clone();
                let adding = root.clone();
                let written = this.ctx.blocking(move || store.add(&adding)).await;
                match written {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => return RErr(SeamError::failed(error.to_string())),
                    // The blocking pool is gone (the host is stopping): nothing was written.
                    Err(error) => return RErr(SeamError::failed(error.to_string())),
                }
            } else {
                lock(&this.run).push(root.clone());
            }
            this.ctx.log(
                LogLevel::Info,
                &format!(
                    "trusted the project {} ({})",
                    root.display(),
                    if remember {
                        "remembered"
                    } else {
                        "for this run"
                    }
                ),
            );
            let root_text = RString::from(root.display().to_string());
            if let Err(error) = this
                .ctx
                .parallel(&TRUST_CHANGED, abi_stable::std_types::RArc::new(root_text))
                .await
            {
                this.ctx.log(
                    LogLevel::Warn,
                    &format!("a reader of the project's configuration failed: {error}"),
                );
            }
            ROk(Json::encode(&this.describe_path(&cwd)))
        }
        .into_ffi()
    }
}

pub struct TrustPlugin;

impl Plugin for TrustPlugin {
    const NAME: &'static str = "trust";
    const PROVIDES: &'static [&'static str] = &[TRUST_SERVICE];
    type Config = TrustConfig;

    async fn apply(ctx: Context, config: TrustConfig) -> Result<(), PluginError> {
        for (index, root) in config.roots.iter().enumerate() {
            if !Path::new(root).is_absolute() {
                return Err(PluginError {
                    kind: dsh_plugin_api::ErrorKind::Config,
                    message: format!("invalid config: roots: `{root}` is not an absolute folder")
                        .into(),
                    path: abi_stable::std_types::RSome(format!("$.roots[{index}]").into()),
                });
            }
        }
        let store = Store::new(config.file.map(PathBuf::from));
        let loading = store.clone();
        if let Err(error) = ctx.blocking(move || loading.load()).await? {
            ctx.log(
                LogLevel::Warn,
                &format!("remembered trust not read, nothing of it is trusted: {error}"),
            );
        }
        let service = TrustImpl {
            ctx: ctx.clone(),
            settings: config.roots.iter().map(PathBuf::from).collect(),
            store,
            run: Mutex::default(),
        };
        ctx.provide(
            TRUST_SERVICE,
            Trust_TO::from_value(Handle(Arc::new(service)), TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(TrustPlugin);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_is_its_repository_or_its_folder() {
        let dir = std::env::temp_dir().join(format!("dsh-trust-root-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("repo/.git")).unwrap();
        std::fs::create_dir_all(dir.join("repo/src/deep")).unwrap();
        std::fs::create_dir_all(dir.join("loose")).unwrap();
        assert_eq!(project_root(&dir.join("repo/src/deep")), dir.join("repo"));
        assert_eq!(project_root(&dir.join("loose")), dir.join("loose"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
