//! Layered `.env` files, as the reference's launcher loads them: the environment the host
//! inherited wins, then the invoking directory's `./.env`, then `$DSH_HOME/.env` (read once
//! when both are the same directory). Both files are read and checked before either is
//! applied, and a value only fills a name no higher layer set, so plugins (credentials, the
//! providers) and the commands the sandbox runs see them as inherited variables; the sandbox
//! still strips secrets from commands' environment.
//!
//! Names that decide how the process starts, where code and instructions load from or how it
//! reaches the network (`PATH`, `HOME`, `LD_PRELOAD`, `GIT_SSH_COMMAND`, `HTTPS_PROXY`,
//! `DEEPSEEK_BASE_URL`, every `DSH_*`, `XDG_*`...) may come from the inherited environment only:
//! a file setting one stops the boot, naming the file and the variable. A line that does not
//! read as `NAME=VALUE` is skipped with a warning naming the file and the line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Exact names no file may set.
const BOOTSTRAP_NAMES: &[&str] = &[
    "PATH",
    "HOME",
    "USERPROFILE",
    "SHELL",
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_EXTRA_CA_CERTS",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PERL5OPT",
    "PERL5LIB",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "PYTHONHOME",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_COUNT",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "BROWSER",
    "DEEPSEEK_BASE_URL",
    "DEEPSEEK_SEARCH_BASE_URL",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_TLS_REJECT_UNAUTHORIZED",
];

/// Name prefixes no file may set.
const BOOTSTRAP_PREFIXES: &[&str] = &["DSH_", "XDG_", "DYLD_", "BASH_FUNC_"];

/// Why the layers were refused.
#[derive(Debug, thiserror::Error)]
pub enum EnvFileError {
    #[error(
        "{path} sets \"{name}\", which only the launching environment may set (it decides how \
         this process starts, where its code and instructions load from, or how it reaches the \
         network); export {name} instead of putting it in a .env file"
    )]
    Bootstrap { path: String, name: String },
    #[error("cannot read {path}: {error}")]
    Unreadable { path: String, error: std::io::Error },
}

/// One file's values, in the order written (a later line of the same name wins).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Layer {
    pub path: PathBuf,
    pub values: BTreeMap<String, String>,
}

fn bootstrap_only(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    BOOTSTRAP_NAMES.contains(&upper.as_str())
        || BOOTSTRAP_PREFIXES
            .iter()
            .any(|prefix| upper.starts_with(prefix))
}

/// `dir/.env` parsed and checked; `None` when there is none. Warnings go to `warn`.
pub fn read_layer(dir: &Path, warn: &mut dyn FnMut(String)) -> Result<Option<Layer>, EnvFileError> {
    let path = dir.join(".env");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(EnvFileError::Unreadable {
                path: path.display().to_string(),
                error,
            });
        }
    };
    let mut values = BTreeMap::new();
    for (index, line) in text.lines().enumerate() {
        match parse_line(line) {
            Ok(Some((name, value))) => {
                if bootstrap_only(&name) {
                    return Err(EnvFileError::Bootstrap {
                        path: path.display().to_string(),
                        name,
                    });
                }
                values.insert(name, value);
            }
            Ok(None) => {}
            Err(problem) => warn(format!(
                "{}:{}: {problem}; the line is skipped",
                path.display(),
                index + 1
            )),
        }
    }
    Ok(Some(Layer { path, values }))
}

/// Why a line of a `.env` file is skipped.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum LineError {
    #[error("not NAME=VALUE")]
    NotAPair,
    #[error("`{0}` is not a variable name")]
    BadName(String),
    #[error("the value of {0} has no closing {1}")]
    Unclosed(String, char),
}

/// One line: `None` for a blank line or a comment.
fn parse_line(line: &str) -> Result<Option<(String, String)>, LineError> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let line = line.strip_prefix("export ").map_or(line, str::trim_start);
    let Some((name, value)) = line.split_once('=') else {
        return Err(LineError::NotAPair);
    };
    let name = name.trim();
    let valid = name
        .chars()
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if !valid {
        return Err(LineError::BadName(name.to_owned()));
    }
    let value = value.trim();
    let quoted = |quote: char| -> Result<String, LineError> {
        let inner = &value[1..];
        let end = inner
            .find(quote)
            .ok_or_else(|| LineError::Unclosed(name.to_owned(), quote))?;
        Ok(inner[..end].to_owned())
    };
    let value = match value.chars().next() {
        Some('"') => quoted('"')?.replace("\\n", "\n"),
        Some(quote @ ('\'' | '`')) => quoted(quote)?,
        // An unquoted value ends at a ` #` comment.
        _ => value
            .split_once(" #")
            .map_or(value, |(value, _)| value)
            .trim_end()
            .to_owned(),
    };
    Ok(Some((name.to_owned(), value)))
}

/// The layers of an invocation from `cwd` with home `home`, most trusted file first.
pub fn layers(
    cwd: &Path,
    home: &Path,
    warn: &mut dyn FnMut(String),
) -> Result<Vec<Layer>, EnvFileError> {
    let project = read_layer(cwd, warn)?;
    let same = std::fs::canonicalize(cwd).ok() == std::fs::canonicalize(home).ok();
    let user = match same {
        true => None,
        false => read_layer(home, warn)?,
    };
    Ok(project.into_iter().chain(user).collect())
}

/// The values to set: each name no inherited variable and no earlier layer holds.
pub fn missing(layers: &[Layer], inherited: impl Fn(&str) -> bool) -> Vec<(String, String)> {
    let mut chosen: BTreeMap<String, String> = BTreeMap::new();
    for layer in layers {
        for (name, value) in &layer.values {
            if !inherited(name) && !chosen.contains_key(name) {
                chosen.insert(name.clone(), value.clone());
            }
        }
    }
    chosen.into_iter().collect()
}

/// Reads both layers and sets what they add to this process's environment. Runs first
/// thing in `main`, before any thread exists (setting a variable races with readers on
/// other threads).
pub fn apply(cwd: &Path, home: &Path) -> Result<(), EnvFileError> {
    let mut warnings = Vec::new();
    let layers = layers(cwd, home, &mut |line| warnings.push(line))?;
    for line in warnings {
        eprintln!("warning: {line}");
    }
    for (name, value) in missing(&layers, |name| std::env::var_os(name).is_some()) {
        #[allow(
            unsafe_code,
            reason = "setting the environment before any thread exists"
        )]
        // SAFETY: called from `main_with_args` before the logger, the runtime or any other
        // thread starts, so nothing reads the environment concurrently.
        unsafe {
            std::env::set_var(name, value);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_dotenv_files_write_them() {
        let read = |line: &str| parse_line(line).unwrap();
        assert_eq!(read("A=1"), Some(("A".into(), "1".into())));
        assert_eq!(
            read("export B = two words # note"),
            Some(("B".into(), "two words".into()))
        );
        assert_eq!(read(r#"C="x\ny" # c"#), Some(("C".into(), "x\ny".into())));
        assert_eq!(
            read("D='#not a comment'"),
            Some(("D".into(), "#not a comment".into()))
        );
        assert_eq!(read("# comment"), None);
        assert_eq!(read("   "), None);
        assert!(parse_line("no equals").is_err());
        assert!(parse_line("1X=1").is_err());
        assert!(parse_line("E=\"open").is_err());
    }

    #[test]
    fn the_nearer_layer_wins_and_inherited_beats_both() {
        let layer = |pairs: &[(&str, &str)]| Layer {
            path: PathBuf::new(),
            values: pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        };
        let set = missing(
            &[
                layer(&[("A", "project"), ("B", "project")]),
                layer(&[("A", "user"), ("C", "user")]),
            ],
            |name| name == "B",
        );
        assert_eq!(
            set,
            [("A".into(), "project".into()), ("C".into(), "user".into())]
        );
        assert!(
            bootstrap_only("dsh_home") && bootstrap_only("PATH") && !bootstrap_only("MY_TOKEN")
        );
    }
}
