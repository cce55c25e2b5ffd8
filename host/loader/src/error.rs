//! Error types of the loader and the source positions they carry.

use std::fmt;
use std::path::PathBuf;

use dsh_doc_limits::LimitError;
use thiserror::Error;

/// A place in a config file: the file as given, and a 1-based line and column when known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourcePos {
    /// The file name or path as the caller gave it (built-in bundles use `builtin:<name>.yml`).
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
}

impl SourcePos {
    /// A position naming only a file.
    pub fn file(file: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            line: None,
            column: None,
        }
    }

    /// A position with line and column.
    pub fn at(file: impl Into<String>, line: usize, column: usize) -> Self {
        Self {
            file: file.into(),
            line: Some(line),
            column: Some(column),
        }
    }
}

impl fmt::Display for SourcePos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        Ok(())
    }
}

/// Why a row list or patch list could not be read or composed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ComposeError {
    /// The text is not YAML (or not a single YAML document).
    #[error("{at}: malformed YAML: {message}")]
    Syntax {
        /// Where the parser stopped.
        at: SourcePos,
        /// The parser's message.
        message: String,
    },
    /// The YAML is well formed but does not describe rows or patches.
    #[error("{at}: {message}")]
    Invalid {
        /// The offending node.
        at: SourcePos,
        /// What is wrong.
        message: String,
    },
    /// The file holds no YAML document at all (empty or comments only).
    #[error("{file}: the file is empty or has only comments; write `[]` for an empty list")]
    Empty {
        /// The file.
        file: String,
    },
    /// The file is larger or nests deeper than a config document may (found before parsing).
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// Two rows of one layer (file) define the same id.
    #[error("{at}: duplicate row id `{id}` (first defined at {first})")]
    DuplicateId {
        /// The second definition.
        at: SourcePos,
        /// The id.
        id: String,
        /// The first definition.
        first: Box<SourcePos>,
    },
}

impl ComposeError {
    /// The position the error points at.
    pub fn position(&self) -> SourcePos {
        match self {
            Self::Syntax { at, .. } | Self::Invalid { at, .. } | Self::DuplicateId { at, .. } => {
                at.clone()
            }
            Self::Empty { file } => SourcePos::file(file.clone()),
            Self::Limit(error) => limit_position(error),
        }
    }
}

/// Where a limit was passed: the line that nests too deep, or the whole file.
fn limit_position(error: &LimitError) -> SourcePos {
    match error {
        LimitError::TooDeep { file, line, .. } => SourcePos {
            file: file.clone(),
            line: Some(*line),
            column: None,
        },
        LimitError::TooLarge { file, .. } => SourcePos::file(file.clone()),
    }
}

/// A tag (`!env`, `!home`, `!platform`) that cannot be resolved, or a value that cannot become
/// JSON. `field` is the dotted path of the value inside its row, e.g. `config.greeting`.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum TagError {
    /// `!env NAME` without a default and `NAME` is not set.
    #[error(
        "`{field}`: environment variable `{var}` is not set (write `!env [{var}, default]` to give a default)"
    )]
    MissingEnv {
        /// Dotted field path.
        field: String,
        /// The variable.
        var: String,
    },
    /// A tag this loader does not know.
    #[error("`{field}`: unknown tag `{tag}` (known tags: !env, !home, !platform)")]
    UnknownTag {
        /// Dotted field path.
        field: String,
        /// The tag as written, e.g. `!js`.
        tag: String,
    },
    /// A known tag with a bad argument, or a value that has no JSON form.
    #[error("`{field}`: {message}")]
    Invalid {
        /// Dotted field path.
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// A row whose `config` or `disabled` could not be resolved.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("row `{row}`: {error}")]
pub struct ResolveError {
    /// The row id.
    pub row: String,
    /// What failed, naming the field.
    #[source]
    pub error: TagError,
}

/// Why the layers of a profile could not be collected.
#[derive(Debug, Error)]
pub enum ProfileError {
    /// A file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `profile.yml` is larger or nests deeper than a config document may.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// `profile.yml` is not valid.
    #[error("{at}: {message}")]
    Invalid {
        /// Where.
        at: SourcePos,
        /// What is wrong.
        message: String,
    },
    /// The profile directory or its `profile.yml` does not exist.
    #[error(
        "profile `{name}` does not exist (available: {})",
        list_or_none(available)
    )]
    MissingProfile {
        /// The requested profile.
        name: String,
        /// Profiles that do exist.
        available: Vec<String>,
    },
    /// A bundle named by the profile is neither in `$DSH_HOME/bundles/` nor built in.
    #[error(
        "{}: bundle `{bundle}` not found (no {} and no built-in bundle of that name)",
        profile_file.display(),
        override_path.display()
    )]
    MissingBundle {
        /// The `profile.yml` naming it.
        profile_file: PathBuf,
        /// The bundle name.
        bundle: String,
        /// The override file that was looked for.
        override_path: PathBuf,
    },
    /// A `--patch` file does not exist.
    #[error("patch file {} does not exist", path.display())]
    MissingPatch {
        /// The file as given.
        path: PathBuf,
    },
    /// The profile name is not a plain directory name.
    #[error("invalid profile name `{0}` (use letters, digits, `-`, `_`, `.`)")]
    BadName(String),
}

pub(crate) fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}
