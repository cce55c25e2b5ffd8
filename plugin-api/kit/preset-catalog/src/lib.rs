//! `dsh-preset-catalog`: the agent presets there are, the shipped ones (compiled in from the
//! repository's `presets/`, read-only) and the user's folders under the preset root, each `preset.yml` (name, description, order, the tools it inherits,
//! an optional fixed prompt file) and `agent.yml` (the rows mounted for it). A preset that
//! does not read is listed with its problem, naming the file and the field; the others work.

use std::path::{Path, PathBuf};

use dsh_protocol::Restriction;
use dsh_protocol::{PresetFiles, PresetSource, PresetSummary};
use serde::Deserialize;
use serde_json::Value;

/// One shipped preset's files.
struct Shipped {
    id: &'static str,
    preset: &'static str,
    agent: &'static str,
    prompt: Option<&'static str>,
}

const SHIPPED: &[Shipped] = &[
    Shipped {
        id: "standard",
        preset: include_str!("../../../../presets/standard/preset.yml"),
        agent: include_str!("../../../../presets/standard/agent.yml"),
        prompt: None,
    },
    Shipped {
        id: "code",
        preset: include_str!("../../../../presets/code/preset.yml"),
        agent: include_str!("../../../../presets/code/agent.yml"),
        prompt: None,
    },
    Shipped {
        id: "minimal",
        preset: include_str!("../../../../presets/minimal/preset.yml"),
        agent: include_str!("../../../../presets/minimal/agent.yml"),
        prompt: Some(include_str!("../../../../presets/minimal/prompt.md")),
    },
    Shipped {
        id: "plugin-author",
        preset: include_str!("../../../../presets/plugin-author/preset.yml"),
        agent: include_str!("../../../../presets/plugin-author/agent.yml"),
        prompt: None,
    },
];

/// `preset.yml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PresetFile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub order: i64,
    /// What its sessions inherit of the tools outside it (absent: all of them).
    #[serde(default)]
    pub tools: Option<Restriction>,
    /// A file beside `preset.yml` whose text replaces the assembled system prompt.
    #[serde(default)]
    pub prompt: Option<String>,
}

/// One row of `agent.yml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowFile {
    pub id: String,
    /// The plugin: `library` or `library/export`.
    pub name: String,
    #[serde(default)]
    pub config: Option<Value>,
    #[serde(default)]
    pub disabled: bool,
}

/// Why a preset cannot be used: a sentence naming the file and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Problem(pub String);

/// A preset that reads.
#[derive(Debug, Clone)]
pub struct Preset {
    pub id: String,
    pub source: PresetSource,
    pub file: PresetFile,
    pub rows: Vec<RowFile>,
    /// The fixed prompt's text.
    pub prompt: Option<String>,
    pub texts: Texts,
}

/// The files as written.
#[derive(Debug, Clone, Default)]
pub struct Texts {
    pub preset: String,
    pub agent: String,
    pub prompt: Option<String>,
}

/// What a lookup finds.
#[derive(Debug)]
pub enum Found {
    Preset(Box<Preset>),
    /// It exists and does not read: why, naming the file and the field.
    Broken {
        source: PresetSource,
        problem: String,
    },
    Missing,
}

/// Whether `id` may name a preset (and so a folder).
pub fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_lowercase() || first.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && id.len() <= 64
}

/// Parses YAML `text` of `file` into `T`, naming the field that does not read.
fn parse<T: for<'de> Deserialize<'de>>(file: &str, text: &str) -> Result<T, Problem> {
    let deserializer = serde_norway::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        match path.as_str() {
            "." | "" => Problem(format!("{file}: {inner}")),
            field => Problem(format!("{file}: {field}: {inner}")),
        }
    })
}

/// Reads one preset from its texts; `label` is how its files are named in problems. A prompt
/// file preset.yml names and `texts` lacks is asked of `load_prompt` (the user's folder).
fn read(
    id: &str,
    source: PresetSource,
    label: &str,
    mut texts: Texts,
    load_prompt: impl FnOnce(&str) -> Option<String>,
) -> Result<Preset, Problem> {
    let file: PresetFile = parse(&format!("{label}/preset.yml"), &texts.preset)?;
    if file.name.trim().is_empty() {
        return Err(Problem(format!("{label}/preset.yml: name: empty")));
    }
    let rows: Vec<RowFile> = if texts.agent.trim().is_empty() {
        Vec::new()
    } else {
        parse::<Option<Vec<RowFile>>>(&format!("{label}/agent.yml"), &texts.agent)?
            .unwrap_or_default()
    };
    let mut ids = std::collections::HashSet::new();
    for (index, row) in rows.iter().enumerate() {
        if row.id.trim().is_empty() || !ids.insert(row.id.as_str()) {
            return Err(Problem(format!(
                "{label}/agent.yml: [{index}].id: `{}` is empty or named twice",
                row.id
            )));
        }
        if let Some(config) = &row.config
            && !(config.is_object() || config.is_null())
        {
            return Err(Problem(format!(
                "{label}/agent.yml: [{index}].config: a map is expected (row `{}`)",
                row.id
            )));
        }
    }
    if texts.prompt.is_none() {
        texts.prompt = file.prompt.as_deref().and_then(load_prompt);
    }
    let prompt = match (&file.prompt, &texts.prompt) {
        (None, _) => None,
        (Some(_), Some(text)) => Some(text.clone()),
        (Some(name), None) => {
            return Err(Problem(format!(
                "{label}/preset.yml: prompt: `{name}` is not beside it"
            )));
        }
    };
    Ok(Preset {
        id: id.to_owned(),
        source,
        file,
        rows,
        prompt,
        texts,
    })
}

fn shipped(id: &str) -> Option<&'static Shipped> {
    SHIPPED.iter().find(|shipped| shipped.id == id)
}

fn shipped_preset(shipped: &Shipped) -> Result<Preset, Problem> {
    let texts = Texts {
        preset: shipped.preset.to_owned(),
        agent: shipped.agent.to_owned(),
        prompt: shipped.prompt.map(str::to_owned),
    };
    read(
        shipped.id,
        PresetSource::Shipped,
        &format!("shipped preset {}", shipped.id),
        texts,
        |_| None,
    )
}

/// The presets: shipped ones and the user's folders under `root`.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub root: Option<PathBuf>,
}

impl Catalog {
    /// The folder of user preset `id`.
    pub fn folder(&self, id: &str) -> Option<PathBuf> {
        self.root.as_ref().map(|root| root.join(id))
    }

    fn user_texts(folder: &Path, label: &str) -> Result<Texts, Problem> {
        let preset = std::fs::read_to_string(folder.join("preset.yml"))
            .map_err(|error| Problem(format!("{label}/preset.yml: {error}")))?;
        let agent = match std::fs::read_to_string(folder.join("agent.yml")) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => return Err(Problem(format!("{label}/agent.yml: {error}"))),
        };
        Ok(Texts {
            preset,
            agent,
            prompt: None,
        })
    }

    /// The prompt file `name` beside a user preset's preset.yml (a plain file name only).
    fn user_prompt(folder: &Path, name: &str) -> Option<String> {
        (!name.contains('/') && !name.starts_with('.'))
            .then(|| std::fs::read_to_string(folder.join(name)).ok())
            .flatten()
    }

    /// Preset `id`: the shipped one of that id, else the user's folder (a shipped id is never
    /// a user folder's: copies cannot take one, and one made by hand is not listed).
    pub fn find(&self, id: &str) -> Found {
        if !valid_id(id) {
            return Found::Missing;
        }
        if let Some(shipped) = shipped(id) {
            return match shipped_preset(shipped) {
                Ok(preset) => Found::Preset(Box::new(preset)),
                Err(problem) => Found::Broken {
                    source: PresetSource::Shipped,
                    problem: problem.0,
                },
            };
        }
        let Some(folder) = self.folder(id) else {
            return Found::Missing;
        };
        if !folder.join("preset.yml").is_file() {
            return Found::Missing;
        }
        let label = format!("agent-presets/{id}");
        let read = Self::user_texts(&folder, &label).and_then(|texts| {
            read(id, PresetSource::User, &label, texts, |name| {
                Self::user_prompt(&folder, name)
            })
        });
        match read {
            Ok(preset) => Found::Preset(Box::new(preset)),
            Err(problem) => Found::Broken {
                source: PresetSource::User,
                problem: problem.0,
            },
        }
    }

    /// Every preset id: shipped ones, then the user's folders holding a `preset.yml`.
    fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = SHIPPED.iter().map(|s| s.id.to_owned()).collect();
        if let Some(root) = &self.root
            && let Ok(entries) = std::fs::read_dir(root)
        {
            let mut user: Vec<String> = entries
                .filter_map(Result::ok)
                .filter(|entry| entry.path().join("preset.yml").is_file())
                .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
                .filter(|id| valid_id(id) && shipped(id).is_none())
                .collect();
            user.sort();
            ids.extend(user);
        }
        ids
    }

    /// Every preset's summary, by order then id.
    pub fn list(&self, default: &str) -> Vec<PresetSummary> {
        let mut list: Vec<PresetSummary> = self
            .ids()
            .into_iter()
            .filter_map(|id| match self.find(&id) {
                Found::Preset(preset) => Some(preset.summary(default)),
                Found::Broken { source, problem } => Some(PresetSummary {
                    name: id.clone(),
                    default: id == default,
                    id,
                    description: String::new(),
                    order: i64::MAX,
                    source,
                    problem: Some(problem),
                }),
                Found::Missing => None,
            })
            .collect();
        list.sort_by(|a, b| a.order.cmp(&b.order).then_with(|| a.id.cmp(&b.id)));
        list
    }
}

/// Config `config` of a preset's row as it is mounted: with the preset's tool scope, unless
/// it names its own.
pub fn scoped_config(config: Option<&Value>, scope: &str) -> Value {
    let mut config = match config {
        Some(Value::Object(map)) => map.clone(),
        _ => serde_json::Map::new(),
    };
    config
        .entry("scope")
        .or_insert_with(|| Value::String(scope.to_owned()));
    Value::Object(config)
}

/// A row as `dump` writes it.
#[derive(serde::Serialize)]
struct DumpedRow<'a> {
    id: &'a str,
    name: &'a str,
    config: Value,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    disabled: bool,
}

impl Catalog {
    /// Preset `id` as `dsh-host --dump-config --preset ID` shows it: what it is, what its
    /// sessions inherit of the profile's tools and whether a prompt of its own replaces the
    /// assembled one, then its rows as they are mounted (each with the preset's scope).
    pub fn dump(&self, id: &str) -> Result<String, Problem> {
        let preset = match self.find(id) {
            Found::Preset(preset) => preset,
            Found::Broken { problem, .. } => return Err(Problem(problem)),
            Found::Missing => return Err(Problem(format!("no agent preset `{id}`"))),
        };
        let scope = dsh_protocol::preset_scope(id);
        let source = match preset.source {
            PresetSource::Shipped => "shipped",
            PresetSource::User => "the user's",
        };
        let mut out = format!(
            "# == agent preset `{id}` ({}, {source}): mounted under row `agent-presets` when a session chooses it, its tools in scope `{scope}`\n",
            preset.file.name
        );
        out.push_str(&match &preset.file.tools {
            None => "# tools: the profile's, and its rows'\n".to_owned(),
            Some(restriction) => format!(
                "# tools: its rows', and of the profile's {}\n",
                match (&restriction.allow, &restriction.deny) {
                    (Some(allow), _) if allow.is_empty() => "none".to_owned(),
                    (Some(allow), _) => format!("only {}", allow.join(", ")),
                    (None, Some(deny)) => format!("all but {}", deny.join(", ")),
                    (None, None) => "all".to_owned(),
                }
            ),
        });
        if let Some(file) = &preset.file.prompt {
            out.push_str(&format!(
                "# prompt: {file} replaces the assembled system prompt\n"
            ));
        }
        let rows: Vec<DumpedRow<'_>> = preset
            .rows
            .iter()
            .map(|row| DumpedRow {
                id: &row.id,
                name: &row.name,
                config: scoped_config(row.config.as_ref(), &scope),
                disabled: row.disabled,
            })
            .collect();
        if rows.is_empty() {
            out.push_str("# (no rows of its own)\n");
        } else {
            let text = serde_norway::to_string(&rows)
                .map_err(|error| Problem(format!("agent preset `{id}`: {error}")))?;
            out.push_str(&text);
        }
        Ok(out)
    }
}

impl Preset {
    pub fn summary(&self, default: &str) -> PresetSummary {
        PresetSummary {
            id: self.id.clone(),
            name: self.file.name.clone(),
            description: self.file.description.clone(),
            order: self.file.order,
            source: self.source,
            problem: None,
            default: self.id == default,
        }
    }

    pub fn files(&self, default: &str) -> PresetFiles {
        PresetFiles {
            summary: self.summary(default),
            preset: self.texts.preset.clone(),
            agent: self.texts.agent.clone(),
            prompt: self.texts.prompt.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_preset_reads() {
        for shipped in SHIPPED {
            let preset = shipped_preset(shipped).expect(shipped.id);
            assert!(!preset.file.name.is_empty(), "{}", shipped.id);
        }
    }

    #[test]
    fn a_broken_preset_names_its_file_and_field() {
        let texts = Texts {
            preset: "name: X\norder: first\n".to_owned(),
            ..Texts::default()
        };
        let problem = read("x", PresetSource::User, "agent-presets/x", texts, |_| None)
            .unwrap_err()
            .0;
        assert!(
            problem.starts_with("agent-presets/x/preset.yml: order:"),
            "{problem}"
        );
        let texts = Texts {
            preset: "name: X\n".to_owned(),
            agent: "- id: a\n  name: tool-x\n  config: 3\n".to_owned(),
            prompt: None,
        };
        let problem = read("x", PresetSource::User, "agent-presets/x", texts, |_| None)
            .unwrap_err()
            .0;
        assert!(problem.contains("agent.yml: [0].config"), "{problem}");
        let texts = Texts {
            preset: "name: X\nprompt: prompt.md\n".to_owned(),
            ..Texts::default()
        };
        let problem = read("x", PresetSource::User, "agent-presets/x", texts, |_| None)
            .unwrap_err()
            .0;
        assert!(problem.contains("preset.yml: prompt:"), "{problem}");
    }

    #[test]
    fn ids_are_folder_safe() {
        assert!(valid_id("my-preset2"));
        assert!(!valid_id(""));
        assert!(!valid_id("../x"));
        assert!(!valid_id("-x"));
        assert!(!valid_id("Big"));
    }
}

#[cfg(test)]
mod dump_tests {
    use super::*;

    #[test]
    fn a_row_is_told_the_preset_scope_unless_it_names_one() {
        let given = serde_json::json!({"mode": "code"});
        assert_eq!(
            scoped_config(Some(&given), "preset:code"),
            serde_json::json!({"mode": "code", "scope": "preset:code"})
        );
        let own = serde_json::json!({"scope": ""});
        assert_eq!(scoped_config(Some(&own), "preset:code"), own);
        assert_eq!(
            scoped_config(None, "preset:x"),
            serde_json::json!({"scope": "preset:x"})
        );
    }

    #[test]
    fn a_dump_shows_the_rows_with_the_preset_scope() {
        let catalog = Catalog { root: None };
        let text = catalog.dump("minimal").unwrap();
        assert!(text.contains("scope `preset:minimal`"), "{text}");
        assert!(
            text.contains("# tools: its rows', and of the profile's none"),
            "{text}"
        );
        assert!(text.contains("# prompt: prompt.md"), "{text}");
        assert!(text.contains("scope: preset:minimal"), "{text}");
        assert_eq!(
            catalog.dump("nope").unwrap_err().0,
            "no agent preset `nope`"
        );
    }
}
