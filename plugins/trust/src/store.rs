//! The remembered answers: one JSON file (`{"trusted": ["/abs/root", ...]}`), read at start
//! and rewritten whole through a temporary file and a rename when a person trusts a project.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh_plugin_api::lock;

/// Why the file cannot be read or written, naming it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not {{\"trusted\": [folders]}}: {source}", path.display())]
    Format {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

#[derive(dsh_plugin_api::Serialize, dsh_plugin_api::Deserialize, Default)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Document {
    trusted: Vec<PathBuf>,
}

/// The file and what it holds.
#[derive(Clone)]
pub(crate) struct Store {
    file: Option<PathBuf>,
    roots: Arc<Mutex<Vec<PathBuf>>>,
}

impl Store {
    pub(crate) fn new(file: Option<PathBuf>) -> Self {
        Self {
            file,
            roots: Arc::default(),
        }
    }

    pub(crate) fn roots(&self) -> Vec<PathBuf> {
        lock(&self.roots).clone()
    }

    /// Reads the file (none yet: nothing remembered).
    pub(crate) fn load(&self) -> Result<(), StoreError> {
        let Some(path) = &self.file else {
            return Ok(());
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => {
                return Err(StoreError::Io {
                    path: path.clone(),
                    source,
                });
            }
        };
        let document: Document =
            serde_json::from_str(&text).map_err(|source| StoreError::Format {
                path: path.clone(),
                source,
            })?;
        *lock(&self.roots) = document
            .trusted
            .into_iter()
            .filter(|root| root.is_absolute())
            .collect();
        Ok(())
    }

    /// Remembers `root` (written before it answers).
    pub(crate) fn add(&self, root: &Path) -> Result<(), StoreError> {
        let mut roots = lock(&self.roots);
        if !roots.iter().any(|known| known == root) {
            roots.push(root.to_path_buf());
        }
        let Some(path) = &self.file else {
            return Ok(());
        };
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let document = Document {
            trusted: roots.clone(),
        };
        let text = serde_json::to_string_pretty(&document).unwrap_or_default();
        let scratch = path.with_extension("json.part");
        std::fs::write(&scratch, text).map_err(io)?;
        std::fs::rename(&scratch, path).map_err(io)
    }
}
