//! One skill file: a YAML front matter block between two `---` lines, then the instructions.
//! The front matter names the skill (kebab-case) and says in one line what it is for; two
//! optional flags take it off a surface: `disable-model-invocation: true` hides it from the
//! model (catalog and tool), `user-invocable: false` from the person's `/name` commands. A flag
//! that does not read as a boolean, or is spelled in camel case, refuses the whole skill rather
//! than guessing which surface it meant to open.

use std::path::{Path, PathBuf};

use dsh_doc_limits::Limits;
use serde_norway::{Mapping, Value};

use crate::error::SkillError;

/// A skill's front matter, as discovery reads it (the body is read again at each load, so an
/// edit of the instructions needs no invalidation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skill {
    pub(crate) name: String,
    pub(crate) description: String,
    /// The model may see and load it.
    pub(crate) model_invocable: bool,
    /// A person may run it as `/name`.
    pub(crate) user_invocable: bool,
    /// Its file (`<dir>/SKILL.md`, or a flat `<name>.md`).
    pub(crate) path: PathBuf,
    /// What its relative paths resolve against.
    pub(crate) directory: PathBuf,
}

/// `name` as skill names are written: lowercase letters and digits in dash-separated words.
pub(crate) fn is_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.split('-').all(|word| {
            !word.is_empty()
                && word
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// Splits `text` into its front matter and its body (trimmed).
fn split(text: &str, path: &Path) -> Result<(String, String), SkillError> {
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end_matches(['\r', '\n']) != "---" {
        return Err(SkillError::NoFrontMatter(path.to_owned()));
    }
    let mut yaml = String::new();
    let mut consumed = first.len();
    for line in lines {
        consumed += line.len();
        if line.trim_end_matches(['\r', '\n']) == "---" {
            return Ok((yaml, text[consumed..].trim().to_owned()));
        }
        yaml.push_str(line);
    }
    Err(SkillError::Unclosed(path.to_owned()))
}

fn invalid(path: &Path, field: &str, reason: impl Into<String>) -> SkillError {
    SkillError::Field {
        path: path.to_owned(),
        field: field.to_owned(),
        reason: reason.into(),
    }
}

/// A required non-empty string field.
fn text_field(map: &Mapping, field: &str, path: &Path) -> Result<String, SkillError> {
    match map.get(field) {
        None | Some(Value::Null) => Err(invalid(path, field, "is missing")),
        Some(Value::String(text)) if !text.trim().is_empty() => Ok(text.clone()),
        Some(Value::String(_)) => Err(invalid(path, field, "is empty")),
        Some(_) => Err(invalid(path, field, "is not a string")),
    }
}

/// An invocation flag: a YAML boolean, or `true/false`, `yes/no`, `on/off`, `1/0` in any case;
/// absent opens the surface.
fn flag(map: &Mapping, field: &str, path: &Path) -> Result<Option<bool>, SkillError> {
    let word = match map.get(field) {
        None => return Ok(None),
        Some(Value::Bool(value)) => return Ok(Some(*value)),
        Some(Value::Number(number)) => number.to_string(),
        Some(Value::String(text)) => text.to_ascii_lowercase(),
        Some(_) => return Err(invalid(path, field, "is not a boolean")),
    };
    match word.trim() {
        "true" | "yes" | "on" | "1" => Ok(Some(true)),
        "false" | "no" | "off" | "0" => Ok(Some(false)),
        other => Err(invalid(
            path,
            field,
            format!("is `{other}`, which is not a boolean (true or false)"),
        )),
    }
}

/// The front matter of skill file `path`, whose text is `text`, with its body.
pub(crate) fn parse(
    text: &str,
    path: &Path,
    directory: &Path,
) -> Result<(Skill, String), SkillError> {
    let (yaml, body) = split(text, path)?;
    // A project's skill is anyone's: the front matter's nesting is bounded before parsing.
    dsh_doc_limits::check_yaml(&yaml, &path.display().to_string(), Limits::DOCUMENT).map_err(
        |error| SkillError::Yaml {
            path: path.to_owned(),
            message: error.reason(),
        },
    )?;
    let value: Value = serde_norway::from_str(&yaml).map_err(|error| SkillError::Yaml {
        path: path.to_owned(),
        message: error.to_string(),
    })?;
    let Value::Mapping(map) = value else {
        return Err(SkillError::NotAMapping(path.to_owned()));
    };
    // Camel-case spellings are refused by name: read as absent, they would open a surface the
    // author meant to close.
    for (wrong, right) in [
        ("disableModelInvocation", "disable-model-invocation"),
        ("userInvocable", "user-invocable"),
    ] {
        if map.contains_key(wrong) {
            return Err(invalid(path, wrong, format!("is spelled `{right}`")));
        }
    }
    let name = text_field(&map, "name", path)?;
    if !is_skill_name(&name) {
        return Err(invalid(
            path,
            "name",
            format!(
                "is `{name}`, which is not kebab-case (lowercase words and digits joined by `-`)"
            ),
        ));
    }
    let description = text_field(&map, "description", path)?;
    let hidden = flag(&map, "disable-model-invocation", path)?.unwrap_or(false);
    let user = flag(&map, "user-invocable", path)?.unwrap_or(true);
    let skill = Skill {
        name,
        description,
        model_invocable: !hidden,
        user_invocable: user,
        path: path.to_owned(),
        directory: directory.to_owned(),
    };
    Ok((skill, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<(Skill, String), SkillError> {
        parse(text, Path::new("/r/s/SKILL.md"), Path::new("/r/s"))
    }

    #[test]
    fn a_skill_reads_its_front_matter_and_trims_its_body() {
        let (skill, body) =
            read("---\nname: fix-tests\ndescription: Fix failing tests.\n---\n\n# Steps\n\nRun them.\n\n")
                .unwrap();
        assert_eq!(skill.name, "fix-tests");
        assert_eq!(skill.description, "Fix failing tests.");
        assert!(skill.model_invocable && skill.user_invocable);
        assert_eq!(body, "# Steps\n\nRun them.");
    }

    #[test]
    fn the_flags_read_words_and_close_their_surface() {
        let (skill, _) = read(
            "---\nname: a\ndescription: d\ndisable-model-invocation: Yes\nuser-invocable: off\n---\nx",
        )
        .unwrap();
        assert!(!skill.model_invocable && !skill.user_invocable);
        let (skill, _) =
            read("---\r\nname: a\r\ndescription: d\r\nuser-invocable: 0\r\n---\r\nx").unwrap();
        assert!(skill.model_invocable && !skill.user_invocable);
    }

    #[test]
    fn a_broken_file_names_the_file_and_the_field() {
        let cases = [
            ("---\ndescription: d\n---\n", "`name` is missing"),
            (
                "---\nname: Fix Tests\ndescription: d\n---\n",
                "`name` is `Fix Tests`, which is not kebab-case",
            ),
            ("---\nname: a\n---\n", "`description` is missing"),
            (
                "---\nname: a\ndescription: [1]\n---\n",
                "`description` is not a string",
            ),
            (
                "---\nname: a\ndescription: d\nuser-invocable: maybe\n---\n",
                "`user-invocable` is `maybe`, which is not a boolean",
            ),
            (
                "---\nname: a\ndescription: d\nuserInvocable: false\n---\n",
                "`userInvocable` is spelled",
            ),
            ("# no front matter\n", "front matter"),
            ("---\nname: a\n", "never closed"),
            ("---\nname: [a\n---\n", "YAML"),
        ];
        let deep = format!("---\nname: a\ndescription: {}\n---\n", "[".repeat(100_000));
        let cases: Vec<(&str, &str)> = cases
            .into_iter()
            .chain([(deep.as_str(), "line 2 nests deeper than 64 levels")])
            .collect();
        for (text, expected) in cases {
            let error = read(text).unwrap_err().to_string();
            assert!(error.contains("/r/s/SKILL.md"), "{error}");
            assert!(error.contains(expected), "{text:?}: {error}");
        }
    }

    #[test]
    fn skill_names_are_kebab_case() {
        for good in ["a", "fix-tests", "v2-api"] {
            assert!(is_skill_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a b"] {
            assert!(!is_skill_name(bad), "{bad}");
        }
    }
}
