//! Plugin `skills`: skills as the reference has them (REFERENCE §1.11). A skill is a folder
//! with a `SKILL.md` (front matter: `name`, `description`, and the `disable-model-invocation`
//! and `user-invocable` flags; then the instructions) in one of the roots: the workspace's
//! `.dsh/skills` and `.agents/skills`, the folders other plugins add for the session's tool
//! scope (`skills/roots`: a preset's plugin brings its own skills to that preset's sessions
//! only), the configured ones, `$DSH_HOME/skills` and `~/.agents/skills` (see `discover`). The model is told which skills it may load by a catalog
//! message appended to the session (`catalog`: logged, so what the model saw can be rebuilt
//! from the log, and appended, so the cached request prefix stays the same); it loads one with
//! the `skill` tool (`tool`); a person runs one as `/name` (`command`). The roots are followed
//! through the host's `fs_watch` service, so a skill added, changed or removed while the host
//! runs shows at the next step; a file that is not a skill is reported with its path and field
//! while the others load.
//!
//! It does not own where a catalog goes in the request (the loop appends what
//! `system-prompt/contexts` answers) nor how a `/name` line becomes a command (`commands`).

mod catalog;
mod command;
mod discover;
mod error;
mod library;
mod skill;
mod tool;
mod view;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_plugin_api::io::watch::FS_WATCH_SERVICE;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{PromptContext, PromptRequest};
use dsh_sessions_seam::{SESSION_DISPOSED, open_live};
use dsh_system_prompt_seam::SYSTEM_PROMPT_CONTEXTS;
use dsh_tools_seam::{ResultView, TOOLS_RESULT, TOOLS_SERVICE, ToolsService, tool_box};

use crate::catalog::{Catalogs, entries};
use crate::discover::SharedRoots;
use crate::library::Library;
use crate::view::ToolView;

/// Config of `skills`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct SkillsConfig {
    /// The dsh home, whose `skills` folder is a root (default: `$DSH_HOME`, else `~/.dsh-host`).
    pub dsh_home: Option<String>,
    /// The shared agents' home, whose `skills` folder is a root (default: `$DSH_AGENTS_HOME`,
    /// else `~/.agents`).
    pub agents_home: Option<String>,
    /// More roots, looked in after the workspace's and before the two homes'.
    pub custom_skill_dirs: Vec<String>,
    /// Follow the roots for changes (through the host's `fs_watch`).
    pub watch: bool,
    /// Characters of a description the catalog shows at most (at least 3).
    pub catalog_description_max_length: usize,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        Self {
            dsh_home: None,
            agents_home: None,
            custom_skill_dirs: Vec::new(),
            watch: true,
            catalog_description_max_length: 500,
        }
    }
}

/// `name` of the environment, when set and not empty.
fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

impl SkillsConfig {
    fn roots(&self) -> SharedRoots {
        let home = env_path("HOME");
        let pick = |configured: &Option<String>, env: &str, fallback: &str| {
            configured
                .as_ref()
                .filter(|path| !path.is_empty())
                .map(PathBuf::from)
                .or_else(|| env_path(env))
                .or_else(|| home.as_ref().map(|home| home.join(fallback)))
                .map(|dir| dir.join("skills"))
        };
        SharedRoots {
            custom: self.custom_skill_dirs.iter().map(PathBuf::from).collect(),
            home: pick(&self.dsh_home, "DSH_HOME", ".dsh-host"),
            agents: pick(&self.agents_home, "DSH_AGENTS_HOME", ".agents"),
        }
    }
}

/// The part of a `write`/`edit` call this plugin reads.
#[derive(dsh_plugin_api::serde::Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct FileArgs {
    file_path: String,
}

/// The file a successful `write` or `edit` changed, when `result` is one.
fn changed_file(result: &ResultView) -> Option<PathBuf> {
    if !matches!(result.call.name.as_str(), "write" | "edit") {
        return None;
    }
    let args: FileArgs = serde_json::from_str(&result.call.arguments).ok()?;
    Some(Path::new(result.call.cwd.as_str()).join(args.file_path))
}

/// What the catalog of a request is made from.
struct Sources {
    ctx: Context,
    tools: Service<ToolsService>,
    library: Arc<Library>,
    catalogs: Arc<Catalogs>,
    view: ToolView,
    max: usize,
}

impl Sources {
    /// The catalog `request`'s session needs now, if any.
    async fn catalog_due(&self, request: &PromptRequest) -> Option<PromptContext> {
        let session = open_live(&self.ctx, &request.session).ok()?;
        // The catalog is for a model that can load: without the tool in its view, it lists none.
        let current = match self.view.sees_skill(&self.tools, &request.scope) {
            false => Some(Vec::new()),
            true => match self.library.for_session(&request.cwd, &request.scope).await {
                Ok(found) if found.complete => Some(entries(&found, self.max)),
                // An incomplete look keeps the last catalog rather than retire what it missed.
                _ => None,
            },
        };
        self.catalogs.due(request, &session, current)
    }
}

pub struct SkillsPlugin;

impl Plugin for SkillsPlugin {
    const NAME: &'static str = "skills";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        FS_WATCH_SERVICE,
        dsh_sessions_seam::SESSIONS_SERVICE,
        dsh_agents_seam::AGENTS_SERVICE,
        dsh_trust_seam::TRUST_SERVICE,
    ];
    type Config = SkillsConfig;

    async fn apply(ctx: Context, config: SkillsConfig) -> Result<(), PluginError> {
        if config.catalog_description_max_length < 3 {
            return Err(PluginError {
                kind: dsh_plugin_api::ErrorKind::Config,
                message: "invalid config: catalogDescriptionMaxLength must be at least 3".into(),
                path: abi_stable::std_types::RSome("$.catalogDescriptionMaxLength".into()),
            });
        }
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let followed = config.watch
            && matches!(
                ctx.get::<dsh_plugin_api::io::watch::FsWatchService>(FS_WATCH_SERVICE),
                Ok(Some(_))
            );
        let library = Library::new(ctx.clone(), config.roots(), followed)?;
        if followed {
            library.follow(&library.shared_roots());
        }
        let catalogs = Arc::new(Catalogs::default());
        let forget = catalogs.clone();
        // A project trusted meanwhile: its skills count from the next look on.
        let trusted = library.clone();
        ctx.on_parallel(&dsh_trust_seam::TRUST_CHANGED, move |_root| {
            trusted.invalidate();
            std::future::ready(())
        })?;
        ctx.on_emit(&SESSION_DISPOSED, move |id: &RString| {
            forget.forget(id.as_str())
        })?;
        // The agent's own edits are seen at its next step, before the watch reports them.
        let edited = Arc::downgrade(&library);
        ctx.on_emit(&TOOLS_RESULT, move |result: &ResultView| {
            if let Some(library) = edited.upgrade()
                && let Some(path) = changed_file(result)
                && library.concerns(&path)
            {
                library.invalidate();
            }
        })?;
        let sources = Arc::new(Sources {
            ctx: ctx.clone(),
            tools: tools.clone(),
            library: library.clone(),
            catalogs,
            view: ToolView::default(),
            max: config.catalog_description_max_length,
        });
        ctx.on_waterfall(&SYSTEM_PROMPT_CONTEXTS, move |next| {
            let sources = sources.clone();
            let request = next.payload().decode();
            async move {
                let downstream = next.run().await?;
                let Ok(request) = request else {
                    return Ok(downstream);
                };
                let Some(catalog) = sources.catalog_due(&request).await else {
                    // Nothing to add: the contexts pass on as they came, never decoded.
                    return Ok(downstream);
                };
                let mut contexts: Vec<PromptContext> = downstream
                    .decode()
                    .map_err(|error| PluginError::plugin(error.to_string()))?;
                contexts.push(catalog);
                Ok(Json::encode(&contexts))
            }
        })?;
        command::answer(&ctx, library.clone())?;
        let registration = tools
            .register(
                RString::from(ctx.row_id()),
                RString::new(),
                tool_box(tool::SkillTool { library }),
            )
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?;
        ctx.on_dispose(move || drop(registration))
    }
}

dsh_plugin_api::export_plugins!(SkillsPlugin);
