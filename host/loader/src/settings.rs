//! The settings document (`$DSH_HOME/settings.yaml`), applied over a composed profile last: a
//! mapping of namespaces, each named as the id of the row it tunes, whose keys are laid over
//! that row's `config` (a shallow merge: a key replaces the config's key of that name, `null`
//! removes it). It is what a person changes from the web settings; the layers stay what
//! integrators write. A namespace no row of the tree has is kept for a profile that has it.

use std::path::Path;

use serde_norway::{Mapping, Value};

use crate::error::{ComposeError, SourcePos};
use crate::patch::Composed;
use crate::row::ComposedRow;
use crate::source::parse_yaml;

/// The file name under the home.
pub const SETTINGS_FILE: &str = "settings.yaml";

fn find_mut<'a>(rows: &'a mut [ComposedRow], id: &str) -> Option<&'a mut ComposedRow> {
    for row in rows {
        if row.id == id {
            return Some(row);
        }
        if let Some(found) = find_mut(&mut row.children, id) {
            return Some(found);
        }
    }
    None
}

/// Lays the document `text` (read from `path`) over `composed`; answers the ids of the rows it
/// changed. An empty document changes nothing; anything but a mapping of mappings is an error
/// naming the file and the namespace.
pub fn apply_settings(
    composed: &mut Composed,
    text: &str,
    path: &Path,
) -> Result<Vec<String>, ComposeError> {
    let file = path.display().to_string();
    let document = parse_yaml(text, &file)?;
    let namespaces = match document {
        Value::Null => return Ok(Vec::new()),
        Value::Mapping(namespaces) => namespaces,
        _ => {
            return Err(ComposeError::Invalid {
                at: SourcePos::file(&file),
                message: "settings are a mapping of namespaces (row ids) to mappings of values"
                    .to_owned(),
            });
        }
    };
    let mut changed = Vec::new();
    for (namespace, values) in namespaces {
        let Value::String(id) = namespace else {
            return Err(ComposeError::Invalid {
                at: SourcePos::file(&file),
                message: "a settings namespace is a row id (a string)".to_owned(),
            });
        };
        let values = match values {
            Value::Mapping(values) => values,
            Value::Null => continue,
            _ => {
                return Err(ComposeError::Invalid {
                    at: SourcePos::file(&file),
                    message: format!("settings `{id}`: a mapping of config keys to values"),
                });
            }
        };
        let Some(row) = find_mut(&mut composed.rows, &id) else {
            continue;
        };
        let mut config = match row.config.take() {
            Some(Value::Mapping(config)) => config,
            None | Some(Value::Null) => Mapping::new(),
            Some(other) => {
                row.config = Some(other);
                return Err(ComposeError::Invalid {
                    at: SourcePos::file(&file),
                    message: format!("settings `{id}`: row `{id}`'s config is not a mapping"),
                });
            }
        };
        for (key, value) in values {
            match value {
                Value::Null => {
                    config.remove(&key);
                }
                value => {
                    config.insert(key, value);
                }
            }
        }
        row.config = Some(Value::Mapping(config));
        row.layer = "settings".to_owned();
        row.file = file.clone();
        changed.push(id);
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::patch::compose_row_list;

    fn tree() -> Composed {
        compose_row_list(
            "t",
            "- id: llm-deepseek\n  name: llm-deepseek\n  config:\n    thinking: enabled\n- id: other\n  name: other\n",
            Path::new("t.yml"),
        )
        .unwrap()
    }

    #[test]
    fn a_namespace_is_laid_over_its_rows_config() {
        let mut composed = tree();
        let changed = apply_settings(
            &mut composed,
            "llm-deepseek:\n  baseURL: http://127.0.0.1:9\n  thinking: null\nabsent-row:\n  x: 1\n",
            Path::new("/h/settings.yaml"),
        )
        .unwrap();
        assert_eq!(changed, ["llm-deepseek"]);
        let row = composed.find("llm-deepseek").unwrap();
        let config = serde_norway::to_string(row.config.as_ref().unwrap()).unwrap();
        assert_eq!(config.trim(), "baseURL: http://127.0.0.1:9");
        assert_eq!(row.layer, "settings");
        assert!(composed.find("other").unwrap().config.is_none());
    }

    #[test]
    fn a_malformed_document_names_the_file_and_the_namespace() {
        for (text, needle) in [
            ("- a\n- b\n", "mapping of namespaces"),
            ("llm-deepseek: 3\n", "settings `llm-deepseek`"),
            ("llm-deepseek: [\n", "malformed YAML"),
            (&"[".repeat(240_000), "nested deeper than 64 levels"),
        ] {
            let error = apply_settings(&mut tree(), text, Path::new("/h/settings.yaml"))
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("/h/settings.yaml") && error.contains(needle),
                "{error}"
            );
        }
        assert!(
            apply_settings(&mut tree(), "", Path::new("s"))
                .unwrap()
                .is_empty()
        );
    }
}
