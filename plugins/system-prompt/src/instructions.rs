//! Finding and reading instruction files, as the reference's agent-instructions plugin does.
//! The baseline chain is the user-wide file (`$DSH_HOME/AGENTS.md`), then, in each directory
//! from the project root (the nearest parent of the working directory holding a root marker,
//! `.git` by default; the working directory itself when none does) down to the working
//! directory, every instruction file present (`AGENTS.md`, `CLAUDE.md`) and then every local
//! overlay (`AGENTS.local.md`, `CLAUDE.local.md`). Within one directory a file whose trimmed
//! text equals an earlier one's is dropped (a `CLAUDE.md` that repeats `AGENTS.md` is shown
//! once). A file over `maxSourceBytes` is ignored, never cut; a symlink is followed to its
//! target's text.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use dsh_plugin_api::PluginError;
use sha2::{Digest, Sha256};

use crate::files::FileCache;
use crate::shapes::{Shape, ShapeCache};

/// Where and what to look for.
#[derive(Clone)]
pub(crate) struct Discovery {
    /// The user-wide file, and how the model is shown its path.
    pub(crate) user_file: Option<(PathBuf, String)>,
    pub(crate) root_markers: Vec<String>,
    pub(crate) candidates: Vec<String>,
    pub(crate) local_candidates: Vec<String>,
    pub(crate) max_source_bytes: usize,
    /// The files as last read (see [`crate::files`]).
    pub(crate) files: Arc<FileCache>,
    /// Which files each working directory's chain has, as last found (see [`crate::shapes`]).
    pub(crate) shapes: Arc<ShapeCache>,
}

/// One instruction file read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Loaded {
    /// Its path relative to the project root (or the user-wide file's shown path).
    pub(crate) display: String,
    pub(crate) content: Arc<str>,
}

impl Loaded {
    /// The directory part of its shown path: `.` at the root, `user-global` for the user's.
    pub(crate) fn scope(&self, discovery: &Discovery) -> String {
        if discovery
            .user_file
            .as_ref()
            .is_some_and(|(_, shown)| *shown == self.display)
        {
            return "user-global".to_owned();
        }
        match Path::new(&self.display).parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.display().to_string(),
            _ => ".".to_owned(),
        }
    }

    /// The key a file is tracked by: its directory and its name (`AGENTS.md` and `CLAUDE.md`
    /// of one directory are tracked apart).
    pub(crate) fn key(&self, discovery: &Discovery) -> String {
        let name = Path::new(&self.display)
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("{}\u{0}{name}", self.scope(discovery))
    }
}

/// SHA-256 of `text`, hex.
pub(crate) fn digest(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

impl Discovery {
    /// The nearest directory from `cwd` up holding a root marker; `cwd` when none does.
    pub(crate) fn project_root(&self, cwd: &Path) -> PathBuf {
        self.walk_to_root(cwd, |_| {})
    }

    /// [`Self::project_root`], calling `visit` with each directory before it is looked in.
    fn walk_to_root(&self, cwd: &Path, mut visit: impl FnMut(&Path)) -> PathBuf {
        for dir in cwd.ancestors() {
            visit(dir);
            if self
                .root_markers
                .iter()
                .any(|marker| std::fs::symlink_metadata(dir.join(marker)).is_ok())
            {
                return dir.to_path_buf();
            }
        }
        cwd.to_path_buf()
    }

    /// The baseline chain of `cwd`, broadest first, deduplicated per directory.
    pub(crate) fn baseline(&self, cwd: &Path) -> Vec<Loaded> {
        let mut files = Vec::new();
        if let Some((path, shown)) = &self.user_file
            && let Some(text) = self.files.read(path, self.max_source_bytes)
        {
            files.push(Loaded {
                display: shown.clone(),
                content: text.content,
            });
        }
        let shape = self.shapes.get(cwd).unwrap_or_else(|| self.find_shape(cwd));
        for present in &shape.present {
            files.extend(self.loaded(&shape.root, present));
        }
        files
    }

    /// Walks `cwd`'s chain name by name and keeps what it found (see [`crate::shapes`]).
    fn find_shape(&self, cwd: &Path) -> Arc<Shape> {
        let stamping = self.shapes.worth_stamping(cwd);
        let mut looked_in = Vec::new();
        let root = self.walk_to_root(cwd, |dir| {
            if stamping {
                looked_in.push((dir.to_path_buf(), std::fs::metadata(dir).ok()));
            }
        });
        let mut chain: Vec<&Path> = cwd.ancestors().take_while(|dir| *dir != root).collect();
        chain.push(&root);
        chain.reverse();
        // A link's target can appear or go in a directory nobody stamped: not kept, unless
        // it is a name in the link's own directory (`CLAUDE.md -> AGENTS.md`).
        let mut keepable = true;
        let present = chain
            .into_iter()
            .map(|dir| {
                self.candidate_paths(dir)
                    .filter(|path| match std::fs::symlink_metadata(path) {
                        Ok(metadata) if metadata.is_symlink() => {
                            keepable &= std::fs::read_link(path).is_ok_and(|target| {
                                let mut parts = target.components();
                                matches!(parts.next(), Some(Component::Normal(_)))
                                    && parts.next().is_none()
                            });
                            true
                        }
                        Ok(_) => true,
                        Err(_) => false,
                    })
                    .collect()
            })
            .collect();
        let shape = Arc::new(Shape { root, present });
        if keepable && stamping {
            self.shapes.keep(cwd, looked_in, shape.clone());
        }
        shape
    }

    /// Every candidate file of `dir`, instruction files first, then local overlays.
    fn candidate_paths<'a>(&'a self, dir: &'a Path) -> impl Iterator<Item = PathBuf> + 'a {
        self.candidates
            .iter()
            .chain(&self.local_candidates)
            .map(|name| dir.join(name))
    }

    /// The instruction files of one directory, deduplicated by trimmed text.
    pub(crate) fn in_directory(&self, root: &Path, dir: &Path) -> Vec<Loaded> {
        let paths: Vec<PathBuf> = self.candidate_paths(dir).collect();
        self.loaded(root, &paths)
    }

    /// Those of `paths` (one directory's) that read, deduplicated by trimmed text.
    fn loaded(&self, root: &Path, paths: &[PathBuf]) -> Vec<Loaded> {
        let mut seen = HashSet::new();
        let mut found = Vec::new();
        for path in paths {
            let Some(text) = self.files.read(path, self.max_source_bytes) else {
                continue;
            };
            if !seen.insert(text.trimmed_digest) {
                continue;
            }
            let display = path
                .strip_prefix(root)
                .map_or_else(|_| path.display().to_string(), |p| p.display().to_string());
            found.push(Loaded {
                display,
                content: text.content,
            });
        }
        found
    }
}

/// Where instruction files are looked for, from the config; a candidate that is not a plain
/// file name is refused by name.
pub(crate) fn discovery(config: &crate::PromptConfig) -> Result<Discovery, PluginError> {
    for (field, names) in [
        ("instructionFiles", &config.instruction_files),
        ("localInstructionFiles", &config.local_instruction_files),
        ("projectRootMarkers", &config.project_root_markers),
    ] {
        if let Some(bad) = names
            .iter()
            .find(|name| matches!(name.as_str(), "" | "." | "..") || name.contains(['/', '\\']))
        {
            return Err(PluginError::new(
                dsh_plugin_api::ErrorKind::Config,
                format!("invalid config: {field}: `{bad}` is not a file name in a directory"),
            ));
        }
    }
    if config.max_source_bytes == 0 {
        return Err(PluginError::new(
            dsh_plugin_api::ErrorKind::Config,
            "invalid config: maxSourceBytes must be at least 1",
        ));
    }
    let home = std::env::var_os("DSH_HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from);
    let user_file = match &config.user_instructions {
        Some(path) => Some(PathBuf::from(path)),
        None => home
            .clone()
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|home| !home.is_empty())
                    .map(|home| PathBuf::from(home).join(".dsh-host"))
            })
            .map(|dir| dir.join("AGENTS.md")),
    };
    let user_file = user_file.map(|path| {
        let shown = match (&home, path.file_name()) {
            (Some(home), Some(name)) if path.parent() == Some(home.as_path()) => {
                format!("$DSH_HOME/{}", name.to_string_lossy())
            }
            _ => path.display().to_string(),
        };
        (path, shown)
    });
    Ok(Discovery {
        user_file,
        root_markers: config.project_root_markers.clone(),
        candidates: config.instruction_files.clone(),
        local_candidates: config.local_instruction_files.clone(),
        max_source_bytes: config.max_source_bytes,
        files: Arc::default(),
        shapes: Arc::default(),
    })
}

/// The directories strictly below `cwd` down to the parent of `file` (`a`, `a/b` for
/// `a/b/c.txt`), as full paths; none for a file outside `cwd` or directly in it.
pub(crate) fn directories_below(cwd: &Path, file: &str) -> Vec<PathBuf> {
    let path = Path::new(file);
    let joined = match path.is_absolute() {
        true => path.to_path_buf(),
        false => cwd.join(path),
    };
    let Ok(relative) = joined.strip_prefix(cwd) else {
        return Vec::new();
    };
    // `..` could climb out; such a path adds nothing.
    if relative
        .components()
        .any(|component| !matches!(component, Component::Normal(_)))
    {
        return Vec::new();
    }
    let Some(parent) = relative.parent() else {
        return Vec::new();
    };
    let mut dirs = Vec::new();
    let mut current = cwd.to_path_buf();
    for component in parent.components() {
        current.push(component);
        dirs.push(current.clone());
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn discovery() -> Discovery {
        Discovery {
            user_file: None,
            root_markers: vec![".git".to_owned()],
            candidates: vec!["AGENTS.md".to_owned(), "CLAUDE.md".to_owned()],
            local_candidates: vec!["AGENTS.local.md".to_owned()],
            max_source_bytes: 1 << 20,
            files: Arc::default(),
            shapes: Arc::default(),
        }
    }

    #[test]
    fn only_directories_strictly_below_the_cwd_count() {
        let cwd = Path::new("/w");
        assert_eq!(
            directories_below(cwd, "a/b/c.txt"),
            [PathBuf::from("/w/a"), PathBuf::from("/w/a/b")]
        );
        assert_eq!(directories_below(cwd, "/w/a/x.rs"), [PathBuf::from("/w/a")]);
        assert!(directories_below(cwd, "top.txt").is_empty());
        assert!(directories_below(cwd, "/elsewhere/a/b.txt").is_empty());
        assert!(directories_below(cwd, "a/../../b/c.txt").is_empty());
    }

    #[test]
    fn the_chain_runs_from_the_project_root_and_drops_repeats() {
        let root = std::env::temp_dir().join(format!("dsh-instructions-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let nested = root.join("a/b");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(root.join("AGENTS.md"), "outer rule\n").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "  outer rule  ").unwrap();
        std::fs::write(nested.join("CLAUDE.md"), "inner rule").unwrap();
        std::fs::write(nested.join("AGENTS.local.md"), "mine").unwrap();
        let shown: Vec<String> = discovery()
            .baseline(&nested)
            .into_iter()
            .map(|file| file.display)
            .collect();
        assert_eq!(shown, ["AGENTS.md", "a/b/CLAUDE.md", "a/b/AGENTS.local.md"]);
        // Without a marker, only the working directory's own files.
        std::fs::remove_dir_all(root.join(".git")).unwrap();
        let alone: Vec<String> = discovery()
            .baseline(&nested)
            .into_iter()
            .map(|file| file.display)
            .collect();
        assert_eq!(alone, ["CLAUDE.md", "AGENTS.local.md"]);
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Sets a directory's modification time a minute back: settled, its shape kept. A walk
    /// that saw it changed waits out the settling time it read then (50 ms on a file system
    /// that stamps nanoseconds) before it takes stamps again, so this waits too.
    #[expect(
        clippy::disallowed_methods,
        reason = "a unit test on its own thread, not the host's plugin thread"
    )]
    fn settle(dir: &Path) {
        let minute_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::open(dir)
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(minute_ago))
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(60));
    }

    #[test]
    fn a_kept_chain_sees_files_made_removed_and_edited_and_a_new_root() {
        let root = std::env::temp_dir().join(format!("dsh-chain-kept-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let nested = root.join("a");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(&nested).unwrap();
        let discovery = discovery();
        let shown = |discovery: &Discovery| -> Vec<(String, String)> {
            discovery
                .baseline(&nested)
                .into_iter()
                .map(|file| (file.display, file.content.to_string()))
                .collect()
        };
        settle(&nested);
        settle(&root);
        assert!(shown(&discovery).is_empty());
        assert!(discovery.shapes.get(&nested).is_some(), "the shape is kept");
        std::fs::write(nested.join("AGENTS.md"), "one").unwrap();
        assert_eq!(
            shown(&discovery),
            [("a/AGENTS.md".to_owned(), "one".to_owned())]
        );
        settle(&nested);
        assert_eq!(shown(&discovery).len(), 1);
        std::fs::write(nested.join("AGENTS.md"), "two").unwrap();
        assert_eq!(
            shown(&discovery),
            [("a/AGENTS.md".to_owned(), "two".to_owned())]
        );
        // A link to a name beside it is followed, and what it points to is kept.
        std::fs::remove_file(nested.join("AGENTS.md")).unwrap();
        std::fs::write(nested.join("rules.txt"), "linked").unwrap();
        std::os::unix::fs::symlink("rules.txt", nested.join("CLAUDE.md")).unwrap();
        assert_eq!(
            shown(&discovery),
            [("a/CLAUDE.md".to_owned(), "linked".to_owned())]
        );
        settle(&nested);
        assert_eq!(shown(&discovery).len(), 1);
        assert!(
            discovery.shapes.get(&nested).is_some(),
            "kept with its link"
        );
        std::fs::remove_file(nested.join("rules.txt")).unwrap();
        assert!(shown(&discovery).is_empty(), "its target gone");
        std::fs::remove_file(nested.join("CLAUDE.md")).unwrap();
        std::fs::write(nested.join("AGENTS.md"), "two").unwrap();
        // A root marker made in the working directory moves the root there.
        std::fs::create_dir(nested.join(".git")).unwrap();
        assert_eq!(
            shown(&discovery),
            [("AGENTS.md".to_owned(), "two".to_owned())]
        );
        std::fs::remove_file(nested.join("AGENTS.md")).unwrap();
        assert!(shown(&discovery).is_empty());
        // A link out of its directory: its target's directory is not stamped, so not kept.
        std::fs::write(root.join("outside.md"), "far").unwrap();
        std::os::unix::fs::symlink("../outside.md", nested.join("CLAUDE.md")).unwrap();
        settle(&nested);
        assert_eq!(
            shown(&discovery),
            [("CLAUDE.md".to_owned(), "far".to_owned())]
        );
        assert!(discovery.shapes.get(&nested).is_none());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
