//! Why a call of one of the three tools did not do what it was asked: each is the text of an
//! error result for the model, prefixed with the tool's name, naming the argument, file or
//! crate at fault.

use std::path::PathBuf;

use crate::installed::InstalledError;
use crate::run::RunError;

#[derive(Debug, thiserror::Error)]
pub(crate) enum AuthorError {
    #[error("arguments are not valid: {0}")]
    Arguments(#[from] serde_json::Error),
    #[error("{} is outside the directories this session may write", .0.display())]
    NotWritable(PathBuf),
    #[error(transparent)]
    Template(#[from] dsh_plugin_template::TemplateError),
    #[error("{} holds no Cargo.toml", .0.display())]
    NoManifest(PathBuf),
    #[error("{doing}: {source}")]
    Io {
        doing: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("cargo build failed ({exit}, {seconds:.1} s){note}:\n{messages}")]
    BuildFailed {
        exit: String,
        seconds: f64,
        note: String,
        messages: String,
    },
    #[error(
        "cargo built {} but no cdylib: its Cargo.toml needs `crate-type = [\"cdylib\", \"rlib\"]` under [lib]",
        .0.display()
    )]
    NoCdylib(PathBuf),
    #[error(
        "{} has no successful build in this session; run plugin_build {{\"path\": \"{path}\"}} first",
        .dir.display()
    )]
    NotBuilt { dir: PathBuf, path: String },
    #[error(
        "{} changed since {} was built (another crate of the same name builds into the shared target directory); run plugin_build {{\"path\": \"{path}\"}} again",
        .library.display(),
        .dir.display()
    )]
    Stale {
        library: PathBuf,
        dir: PathBuf,
        path: String,
    },
    #[error("`{name}` is the name of a plugin the host ships ({}); rename the crate", .shipped.display())]
    Shipped { name: String, shipped: PathBuf },
    #[error(
        "refused: {} failed the host's library check, so nothing was installed and what runs keeps running:\n{report}",
        .library.display()
    )]
    Refused { library: PathBuf, report: String },
    #[error("copied to {} but the host did not mount it: {message}", .installed.display())]
    Mount { installed: PathBuf, message: String },
    #[error("{header}, but it FAILED: {message}.{restored} Fix it, build and install it again.")]
    Failed {
        header: String,
        message: String,
        /// What became of the version it replaced (empty when it replaced none).
        restored: String,
    },
    #[error(transparent)]
    Installed(#[from] InstalledError),
}

impl AuthorError {
    /// An I/O failure while `doing` something (a sentence naming the path).
    pub(crate) fn io(doing: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            doing: doing.into(),
            source,
        }
    }
}
