//! What the runtime mounts: a loaded copy of a plugin library (its declarations and where it
//! came from) and one plugin of it. Finding and loading libraries is the `library` module's;
//! these are its results, which fibers hold.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_plugin_api::PluginDecl;

/// A loaded copy of a plugin library.
pub struct LoadedLibrary {
    /// The library name (`greeter` for `libgreeter.so`).
    pub name: String,
    /// The path rows resolve to (the file in a plugin directory).
    pub path: PathBuf,
    /// Where this copy was loaded from (`path` itself, or a unique copy after a reload).
    pub loaded_from: PathBuf,
    /// The file's identity when it was loaded, to notice changes.
    pub identity: FileIdentity,
    /// The `plugin-api` version the library was built against.
    pub api_version: String,
    pub decls: Vec<PluginDecl>,
}

/// One plugin of a loaded library.
#[derive(Clone)]
pub struct PluginRef {
    pub library: Arc<LoadedLibrary>,
    pub index: usize,
}

impl PluginRef {
    pub fn decl(&self) -> &PluginDecl {
        &self.library.decls[self.index]
    }

    /// The services the plugin declares as required.
    pub fn inject(&self) -> Vec<String> {
        self.decl()
            .inject
            .iter()
            .map(|name| name.to_string())
            .collect()
    }

    /// The services the plugin declares it may probe.
    pub fn optional(&self) -> Vec<String> {
        self.decl()
            .optional
            .iter()
            .map(|name| name.to_string())
            .collect()
    }

    /// What the plugin declares about services, with a row's extra `inject` added to the
    /// needed ones.
    pub fn services(&self, row_inject: &[String]) -> Services {
        let mut needs = self.inject();
        for extra in row_inject {
            if !needs.contains(extra) {
                needs.push(extra.clone());
            }
        }
        Services {
            needs,
            optional: self.optional(),
            provides: self
                .decl()
                .provides
                .iter()
                .map(|name| name.to_string())
                .collect(),
        }
    }
}

/// The services a row's plugin needs to start, uses when present and provides: what
/// `dsh-host check --json` and `--dump-config` show for each row.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Services {
    pub needs: Vec<String>,
    pub optional: Vec<String>,
    pub provides: Vec<String>,
}

impl Services {
    /// One line for a comment: `services: needs tools, sandbox; optional sessions; provides x`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (label, names) in [
            ("needs", &self.needs),
            ("optional", &self.optional),
            ("provides", &self.provides),
        ] {
            if !names.is_empty() {
                parts.push(format!("{label} {}", names.join(", ")));
            }
        }
        if parts.is_empty() {
            "services: none".to_owned()
        } else {
            format!("services: {}", parts.join("; "))
        }
    }
}

/// Size, modification time and inode: enough to tell that a file was replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileIdentity {
    pub len: u64,
    pub modified_ns: i128,
    pub inode: u64,
}

impl FileIdentity {
    pub fn of(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::MetadataExt;
        let metadata = std::fs::metadata(path)?;
        Ok(Self {
            len: metadata.len(),
            modified_ns: i128::from(metadata.mtime()) * 1_000_000_000
                + i128::from(metadata.mtime_nsec()),
            inode: metadata.ino(),
        })
    }
}
