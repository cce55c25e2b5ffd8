//! Where things are: `$DSH_HOME`, the plugin directories, the built-in bundles, and how the tree
//! of a `--config` file or a profile is composed and resolved.

use std::path::{Path, PathBuf};

use dsh_loader::{ComposeError, Composed, Home, Layer, ProfileError, ResolveError, ResolvedRow};

use crate::library::Libraries;
use crate::runtime::Source;

/// The bundles compiled into the binary (overridable from `$DSH_HOME/bundles/<name>.yml`).
const BUILTIN_BUNDLES: [(&str, &str); 7] = [
    ("base", include_str!("../../../bundles/base.yml")),
    ("agent", include_str!("../../../bundles/agent.yml")),
    ("headless", include_str!("../../../bundles/headless.yml")),
    ("web", include_str!("../../../bundles/web.yml")),
    ("sdk", include_str!("../../../bundles/sdk.yml")),
    ("acp", include_str!("../../../bundles/acp.yml")),
    ("examples", include_str!("../../../bundles/examples.yml")),
];

/// Profiles created from a template on first use, with their bundles.
const PROFILE_TEMPLATES: [(&str, &[&str]); 5] = [
    ("web", &["base", "agent", "web"]),
    ("headless", &["base", "agent", "headless"]),
    ("sdk", &["base", "agent", "sdk"]),
    ("acp", &["base", "agent", "acp"]),
    ("demo", &["examples"]),
];

/// Templates an earlier version wrote (before the agent core became a bundle of its own): a
/// profile file still exactly as they wrote it is rewritten to the current template.
const RETIRED_TEMPLATES: [(&str, &[&str]); 2] = [
    ("web", &["base", "web"]),
    ("headless", &["base", "headless"]),
];

fn builtin_bundle(name: &str) -> Option<&'static str> {
    BUILTIN_BUNDLES
        .iter()
        .find(|(bundle, _)| *bundle == name)
        .map(|(_, text)| *text)
}

/// What tree to run: one row list (`config`), or a profile with patch layers after its own
/// and the home's, and the folders searched for plugins before the home's and the host's.
#[derive(Debug, Clone, Default)]
pub struct TreeSpec {
    pub config: Option<PathBuf>,
    pub profile: Option<String>,
    pub patches: Vec<PathBuf>,
    pub plugin_dirs: Vec<PathBuf>,
}

/// Why the tree to run could not be composed or resolved. Every message names the file, row or
/// field at fault.
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    #[error("{}: {source}", path.display())]
    ReadConfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("give a tree to run: --config FILE or --profile NAME (see dsh-host --help)")]
    NoTree,
    #[error("cannot create profile `{profile}` under {}: {source}", home.display())]
    CreateProfile {
        profile: String,
        home: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error(transparent)]
    Compose(#[from] ComposeError),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// `--dump-config --preset ID` names a preset that is not there or does not read.
    #[error("--preset: {0}")]
    Preset(String),
}

/// `$DSH_HOME`, default `~/.dsh-host`.
pub fn home_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("DSH_HOME").filter(|home| !home.is_empty()) {
        return PathBuf::from(home);
    }
    let user_home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    user_home.join(".dsh-host")
}

/// The inputs of one boot: home, tree arguments, plugin directories.
pub struct Boot {
    pub home: PathBuf,
    pub tree: TreeSpec,
}

impl Boot {
    pub fn new(tree: TreeSpec) -> Self {
        Self {
            home: home_dir(),
            tree,
        }
    }

    /// Lookup order: each `--plugin-dir`, `$DSH_HOME/plugins`, the directory of `dsh-host`.
    pub fn plugin_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self
            .tree
            .plugin_dirs
            .iter()
            .map(|dir| absolute(dir))
            .collect();
        dirs.push(self.home.join("plugins"));
        if let Some(exe_dir) = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_path_buf))
        {
            dirs.push(exe_dir);
        }
        // A directory named twice (a `--plugin-dir` that is the executable's own) is searched
        // once, where it first appears: otherwise each of its libraries shadows itself.
        let mut seen = std::collections::HashSet::new();
        dirs.retain(|dir| seen.insert(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone())));
        dirs
    }

    pub fn libraries(&self) -> Libraries {
        let _ = std::fs::create_dir_all(self.home.join("plugins"));
        Libraries::new(
            self.plugin_dirs(),
            self.home.join(".loaded"),
            self.home.join("logs"),
            crate::builtin::library(),
        )
    }

    /// The layers of the tree, in application order.
    pub fn layers(&self) -> Result<Vec<Layer>, BootError> {
        if let Some(config) = &self.tree.config {
            let text = read_document(config).map_err(|source| BootError::ReadConfig {
                path: config.clone(),
                source,
            })?;
            return Ok(vec![Layer::row_list(
                format!("--config {}", config.display()),
                text,
                config.clone(),
            )]);
        }
        let Some(profile) = &self.tree.profile else {
            return Err(BootError::NoTree);
        };
        let home = Home {
            root: self.home.clone(),
        };
        if let Some((_, bundles)) = PROFILE_TEMPLATES.iter().find(|(name, _)| name == profile) {
            if let Some((_, retired)) = RETIRED_TEMPLATES.iter().find(|(name, _)| name == profile) {
                let upgraded =
                    home.upgrade_profile(profile, retired, bundles)
                        .map_err(|source| BootError::CreateProfile {
                            profile: profile.clone(),
                            home: self.home.clone(),
                            source,
                        })?;
                if upgraded {
                    tracing::warn!(
                        "profile `{profile}` was written by an earlier template: its bundles are now {}",
                        bundles.join(", ")
                    );
                }
            }
            let created = home.ensure_profile(profile, bundles).map_err(|source| {
                BootError::CreateProfile {
                    profile: profile.clone(),
                    home: self.home.clone(),
                    source,
                }
            })?;
            if created {
                tracing::info!(
                    "created profile `{profile}` from its template (bundles: {})",
                    bundles.join(", ")
                );
            }
        }
        Ok(home.profile_layers(profile, &builtin_bundle, &self.tree.patches)?)
    }

    /// Composes the layers, then lays the home's settings document over a profile's tree;
    /// warnings go to the log.
    pub fn compose(&self) -> Result<Composed, BootError> {
        let layers = self.layers()?;
        let mut composed = dsh_loader::compose(&layers)?;
        if self.tree.profile.is_some() {
            let path = self.home.join(dsh_loader::SETTINGS_FILE);
            match read_document(&path) {
                Ok(text) => {
                    dsh_loader::apply_settings(&mut composed, &text, &path)?;
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(BootError::ReadConfig { path, source }),
            }
        }
        for warning in &composed.warnings {
            tracing::warn!("{warning}");
        }
        Ok(composed)
    }

    /// The files whose edits change the tree (watched for reload), including patch layers
    /// that do not exist yet, so creating one takes effect too.
    pub fn config_files(&self) -> Vec<PathBuf> {
        if let Some(config) = &self.tree.config {
            return vec![absolute(config)];
        }
        let Some(profile) = &self.tree.profile else {
            return Vec::new();
        };
        let home = Home {
            root: self.home.clone(),
        };
        let bundles = home.profile_bundles(profile).unwrap_or_default();
        let mut files: Vec<PathBuf> = home
            .watched_files(profile, &bundles, &self.tree.patches)
            .iter()
            .map(|path| absolute(path))
            .collect();
        files.push(absolute(&self.home.join(dsh_loader::SETTINGS_FILE)));
        files
    }

    /// Composes and resolves the tree against the process environment.
    /// The values under the rows' `env` and `headers` are remembered for `secret_values`.
    pub fn load(&self) -> Result<Vec<ResolvedRow>, BootError> {
        let composed = self.compose()?;
        let rows = composed.resolve(&env_lookup, &self.home)?;
        crate::builtin::secret_values::remember(&rows);
        Ok(rows)
    }

    /// The composed tree as YAML with provenance comments, and under each plugin row the
    /// services its plugin needs, may use and provides (read from the library's declarations,
    /// which loads it but runs none of its code).
    pub fn dump(&self) -> Result<String, BootError> {
        let composed = self.compose()?;
        let libraries = self.libraries();
        let annotate = |row: &dsh_loader::ComposedRow| -> Option<String> {
            if row.group {
                return None;
            }
            let name = row.name.as_deref()?;
            let row_inject = row.inject.clone().unwrap_or_default();
            Some(match libraries.resolve_spec(name) {
                Source::Plugin(plugin) => plugin.services(&row_inject).describe(),
                Source::Missing(reason) | Source::Broken(reason) => {
                    format!("services: unknown ({reason})")
                }
                Source::Group | Source::Host => return None,
            })
        };
        let ctx = dsh_loader::TagContext::new(&env_lookup, &self.home);
        Ok(composed.dump_annotated(&ctx, &annotate))
    }

    /// Agent preset `id`'s rows as the presets row mounts them when a session chooses it
    /// (the user's presets read from `$DSH_HOME/agent-presets`, the row's default root).
    pub fn dump_preset(&self, id: &str) -> Result<String, BootError> {
        let catalog = dsh_preset_catalog::Catalog {
            root: Some(self.home.join("agent-presets")),
        };
        catalog
            .dump(id)
            .map_err(|problem| BootError::Preset(problem.0))
    }
}

/// A config file's text, refused unread past the size of a config document.
fn read_document(path: &Path) -> std::io::Result<String> {
    dsh_doc_limits::read_capped(path, dsh_doc_limits::Limits::DOCUMENT.max_bytes)
}

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
