//! What can go wrong with a skill: a file that does not read as one (named with the field at
//! fault, so its author can fix it while the other skills keep loading), and a load or a run
//! that cannot be served.

use std::path::PathBuf;

/// A skill file that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SkillError {
    #[error("skill file {}: no front matter (the first line must be `---`)", .0.display())]
    NoFrontMatter(PathBuf),
    #[error("skill file {}: the front matter is never closed by a `---` line", .0.display())]
    Unclosed(PathBuf),
    #[error("skill file {}: the front matter is not YAML: {message}", path.display())]
    Yaml { path: PathBuf, message: String },
    #[error("skill file {}: the front matter is not a mapping of fields", .0.display())]
    NotAMapping(PathBuf),
    #[error("skill file {}: field `{field}` {reason}", path.display())]
    Field {
        path: PathBuf,
        field: String,
        reason: String,
    },
    #[error("skill file {}: {message}", path.display())]
    Read { path: PathBuf, message: String },
}

/// Why a skill cannot be loaded for the model or run for a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LoadError {
    #[error("`{0}` is not a skill name (lowercase words and digits joined by `-`)")]
    BadName(String),
    #[error("there is no skill `{0}` (or it is gone): use a name from the available skills")]
    Unknown(String),
    #[error("skill `{0}` is not available to the model")]
    NotForModel(String),
    #[error("skill `{0}` cannot be run as a command")]
    NotForUser(String),
    #[error("{0}")]
    Broken(#[from] SkillError),
    #[error("the skill roots could not be read: {0}")]
    Host(String),
}
