//! The settings document (`$DSH_HOME/settings.yaml`), applied over a composed profile last: a
//! mapping of namespaces, each named as the id of the row it tunes, whose keys are laid over
//! that row's `config` (a shallow merge: a key replaces the config's key of that name, `null`
//! removes it). It is what a person changes from the web settings; the layers stay what
//! integrators write. A namespace no row of the tree has is kept for a profile that has it.
//! The key [`ENABLED_KEY`] (`$enabled: false` or `true`) is not config: it turns the row off or
//! on over what the layers say (the page's Settings › Plugins writes it).

use std::path::Path;

use serde_norway::{Mapping, Value};

use crate::error::{ComposeError, SourcePos};
use crate::patch::Composed;
use crate::row::ComposedRow;
use crate::source::parse_yaml;

/// The file name under the home.
pub const SETTINGS_FILE: &str = "settings.yaml";

/// The key of a namespace that turns its row off (`false`) or on (`true`) instead of tuning
/// its config; `$` keeps it apart from any config key. The page writes it under the name
/// `dsh_protocol::ROW_ENABLED_KEY` (the same text: the settings test turns a row off and on
/// through the page and the host).
pub const ENABLED_KEY: &str = "$enabled";

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
        let mut values = match values {
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
        match values.remove(ENABLED_KEY) {
            None => {}
            Some(Value::Bool(enabled)) => row.disabled = Some(Value::Bool(!enabled)),
            Some(_) => {
                return Err(ComposeError::Invalid {
                    at: SourcePos::file(&file),
                    message: format!("settings `{id}`: `{ENABLED_KEY}` is true or false"),
                });
            }
        }
        if values.is_empty() {
            // Only turned on or off: its config stays as the layers made it.
            row.layer = "settings".to_owned();
            row.file = file.clone();
            changed.push(id);
            continue;
        }
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
    fn enabled_turns_a_row_off_and_on_without_touching_its_config() {
        let mut composed = tree();
        apply_settings(
            &mut composed,
            "other:\n  $enabled: false\nllm-deepseek:\n  $enabled: true\n  baseURL: x\n",
            Path::new("/h/settings.yaml"),
        )
        .unwrap();
        let other = composed.find("other").unwrap();
        assert_eq!(other.disabled, Some(Value::Bool(true)));
        assert!(other.config.is_none(), "{:?}", other.config);
        let llm = composed.find("llm-deepseek").unwrap();
        assert_eq!(llm.disabled, Some(Value::Bool(false)));
        let config = serde_norway::to_string(llm.config.as_ref().unwrap()).unwrap();
        assert!(!config.contains("$enabled"), "{config}");
    }

    #[test]
    fn a_malformed_document_names_the_file_and_the_namespace() {
        for (text, needle) in [
            ("other:\n  $enabled: maybe\n", "`$enabled` is true or false"),
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
