//! A project's rules: `permissions: {allow, deny, ask}` in `<workspace>/.dsh/settings.yaml`,
//! read again whenever the file changes (its size or modification time). A file that does not
//! read is an error naming the file, the line and the rule; the caller then refuses the call
//! rather than run it without the rules the project meant to apply.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use dsh_doc_limits::{LimitError, Limits};
use dsh_plugin_api::lock;

use crate::policy::Rules;
use crate::rules::{Rule, RuleError};

/// Where a project keeps its rules, under its working directory.
pub(crate) const PROJECT_FILE: &str = ".dsh/settings.yaml";

#[derive(dsh_plugin_api::Deserialize, Default)]
#[serde(crate = "dsh_plugin_api::serde", default)]
struct Document {
    permissions: Lists,
}

#[derive(dsh_plugin_api::Deserialize, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
pub(crate) struct Lists {
    pub(crate) allow: Vec<String>,
    pub(crate) deny: Vec<String>,
    pub(crate) ask: Vec<String>,
}

/// Why permission rules do not read, naming where: the file and line, or the row.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RulesError {
    #[error("{place}: {error}")]
    Rule { place: String, error: RuleError },
    #[error("{file}: {error}")]
    Io { file: String, error: std::io::Error },
    #[error("{0}")]
    Limits(LimitError),
    /// `place` is the file, and the line when the parser knows it.
    #[error("{place}: {error}")]
    Yaml {
        place: String,
        error: serde_norway::Error,
    },
}

impl Lists {
    /// The parsed rules; the first that does not read, with `locate` naming where it is.
    pub(crate) fn parse(&self, locate: impl Fn(&str) -> String) -> Result<Rules, RulesError> {
        let parse = |list: &[String]| -> Result<Vec<Rule>, RulesError> {
            list.iter()
                .map(|text| {
                    Rule::parse(text).map_err(|error| RulesError::Rule {
                        place: locate(text),
                        error,
                    })
                })
                .collect()
        };
        Ok(Rules {
            allow: parse(&self.allow)?,
            deny: parse(&self.deny)?,
            ask: parse(&self.ask)?,
        })
    }
}

type Stamp = (SystemTime, u64);

/// A project file as last read: its rules, or why they do not read.
type Read = Arc<Result<Rules, RulesError>>;

/// Project files read so far, by path, with the stamp they were read at.
#[derive(Default)]
pub(crate) struct ProjectRules {
    read: Mutex<HashMap<PathBuf, (Stamp, Read)>>,
}

impl ProjectRules {
    /// The rules of the project working in `cwd` (none when it has no file).
    pub(crate) fn of(&self, cwd: &Path) -> Option<Read> {
        let path = cwd.join(PROJECT_FILE);
        let meta = std::fs::metadata(&path).ok()?;
        let stamp = (
            meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            meta.len(),
        );
        if let Some((seen, rules)) = lock(&self.read).get(&path)
            && *seen == stamp
        {
            return Some(rules.clone());
        }
        let rules = Arc::new(read(&path));
        lock(&self.read).insert(path, (stamp, rules.clone()));
        Some(rules)
    }
}

/// Reads and parses the file: a project's file is anyone's, so it is refused over the size or
/// nesting of a config document before it is parsed (the caller runs this off the runtime).
fn read(path: &Path) -> Result<Rules, RulesError> {
    let shown = path.display();
    let limits = Limits::DOCUMENT;
    let text =
        dsh_doc_limits::read_capped(path, limits.max_bytes).map_err(|error| RulesError::Io {
            file: shown.to_string(),
            error,
        })?;
    dsh_doc_limits::check_yaml(&text, &shown.to_string(), limits).map_err(RulesError::Limits)?;
    let document: Document = serde_norway::from_str(&text).map_err(|error| RulesError::Yaml {
        place: match error.location() {
            Some(at) => format!("{shown}:{}", at.line()),
            None => shown.to_string(),
        },
        error,
    })?;
    document.permissions.parse(|rule| {
        let line = text
            .lines()
            .position(|line| line.contains(rule))
            .map_or_else(String::new, |index| format!(":{}", index + 1));
        format!("{shown}{line}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_rule_is_named_with_its_file_and_line() {
        let dir = std::env::temp_dir().join(format!("dsh-permissions-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".dsh")).unwrap();
        std::fs::write(
            dir.join(PROJECT_FILE),
            "permissions:\n  allow:\n    - bash(npm test*)\n    - bash(git status\n",
        )
        .unwrap();
        let rules = ProjectRules::default();
        let read = rules.of(&dir).unwrap();
        let error = read.as_ref().as_ref().err().unwrap().to_string();
        assert!(
            error.contains("settings.yaml:4") && error.contains("bash(git status"),
            "{error}"
        );
        std::fs::write(
            dir.join(PROJECT_FILE),
            "permissions:\n  deny: [bash(rm *)]\n",
        )
        .unwrap();
        let again = rules.of(&dir).unwrap();
        assert_eq!(
            again.as_ref().as_ref().map(|rules| rules.deny.len()).ok(),
            Some(1)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
