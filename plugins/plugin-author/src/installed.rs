//! What this row installed, kept in a file (`installedFile`) so that the next host start mounts
//! it again: a child mount lives only as long as the host, and a plugin a session installed
//! should not be lost with it. Entries are per `scope`, so a preset's plugins come back in
//! that preset only.

use std::path::{Path, PathBuf};

use dsh_plugin_api::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One installed plugin: the library name, the layer it was installed from and its config.
#[derive(Serialize, Deserialize, Clone, PartialEq)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Entry {
    pub name: String,
    pub scope: String,
    pub config: Map<String, Value>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(crate = "dsh_plugin_api::serde")]
struct File {
    plugins: Vec<Entry>,
}

/// The list of installed plugins could not be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InstalledError {
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {source}", .path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// The entries in `path`; none when the file does not exist.
pub(crate) fn load(path: &Path) -> Result<Vec<Entry>, InstalledError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(InstalledError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    serde_json::from_str::<File>(&text)
        .map(|file| file.plugins)
        .map_err(|source| InstalledError::Json {
            path: path.to_owned(),
            source,
        })
}

/// Adds `entry` to `path`, replacing an entry of the same name and scope.
pub(crate) fn record(path: &Path, entry: Entry) -> Result<(), InstalledError> {
    let mut plugins = load(path)?;
    plugins.retain(|old| !(old.name == entry.name && old.scope == entry.scope));
    plugins.push(entry);
    let text =
        serde_json::to_string_pretty(&File { plugins }).map_err(|source| InstalledError::Json {
            path: path.to_owned(),
            source,
        })?;
    let partial = path.with_extension("json.partial");
    path.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&partial, text))
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|source| InstalledError::Io {
            path: path.to_owned(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_kept_per_name_and_scope() {
        let dir = std::env::temp_dir().join(format!("dsh-installed-{}", std::process::id()));
        let path = dir.join("installed.json");
        let entry = |name: &str, scope: &str| Entry {
            name: name.to_owned(),
            scope: scope.to_owned(),
            config: Map::new(),
        };
        assert!(load(&path).is_ok_and(|entries| entries.is_empty()));
        for (name, scope) in [("a", ""), ("a", "preset:x"), ("a", "")] {
            assert!(record(&path, entry(name, scope)).is_ok());
        }
        let names: Vec<(String, String)> = load(&path)
            .unwrap_or_default()
            .into_iter()
            .map(|entry| (entry.name, entry.scope))
            .collect();
        assert_eq!(
            names,
            vec![
                ("a".to_owned(), "preset:x".to_owned()),
                ("a".to_owned(), String::new())
            ]
        );
        std::fs::write(&path, "not json").unwrap_or_default();
        assert!(load(&path).is_err_and(|error| error.to_string().contains("installed.json")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
