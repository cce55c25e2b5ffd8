//! One file being read: its text, its display name, positions and YAML-level errors.

use std::collections::HashMap;

use dsh_doc_limits::Limits;
use serde_norway::Value;

use crate::error::{ComposeError, SourcePos};
use crate::locate::{self, Step, locate};

/// Core-schema tags (`!!str`, ...) that `serde_norway` understands; other `!!` tags are errors.
const CORE_TAGS: &[&str] = &[
    "str",
    "int",
    "float",
    "bool",
    "null",
    "seq",
    "map",
    "binary",
    "timestamp",
    "merge",
];

/// Prefix a secondary tag is rewritten to when checking whether it is a real tag.
const SECONDARY_MARK: &str = "dsh-secondary-tag-";

/// A file being read.
pub(crate) struct Source<'a> {
    pub(crate) text: &'a str,
    pub(crate) file: String,
}

impl<'a> Source<'a> {
    pub(crate) fn new(text: &'a str, file: impl Into<String>) -> Self {
        Self {
            text,
            file: file.into(),
        }
    }

    /// The position of the node at `path` (just the file when it cannot be found).
    pub(crate) fn pos(&self, path: &[Step]) -> SourcePos {
        match locate(self.text, path) {
            Some((line, column)) => SourcePos::at(self.file.clone(), line, column),
            None => SourcePos::file(self.file.clone()),
        }
    }

    pub(crate) fn invalid(&self, path: &[Step], message: impl Into<String>) -> ComposeError {
        ComposeError::Invalid {
            at: self.pos(path),
            message: message.into(),
        }
    }

    /// The file name without directories and extension, used in generated ids.
    pub(crate) fn stem(&self) -> String {
        let base = self
            .file
            .rsplit(['/', '\\', ':'])
            .next()
            .unwrap_or(&self.file);
        let stem = base.split('.').next().unwrap_or(base);
        if stem.is_empty() {
            base.to_owned()
        } else {
            stem.to_owned()
        }
    }

    /// Parses the text as one YAML document holding a sequence; `<<` merge keys are applied.
    pub(crate) fn parse_list(&self, what: &str) -> Result<Vec<Value>, ComposeError> {
        let mut value = parse_yaml(self.text, &self.file)?;
        value.apply_merge().map_err(|err| {
            let (at, message) = yaml_error(&self.file, &err);
            ComposeError::Syntax { at, message }
        })?;
        match value {
            Value::Null => Err(ComposeError::Empty {
                file: self.file.clone(),
            }),
            Value::Sequence(items) => {
                self.check_secondary_tags()?;
                Ok(items)
            }
            _ => Err(self.invalid(&[], format!("expected a list of {what}"))),
        }
    }

    /// `!!js` and other non-core secondary tags are resolved by the parser to plain strings;
    /// find them in the text and prove each is a tag by re-parsing with a local tag in its place.
    fn check_secondary_tags(&self) -> Result<(), ComposeError> {
        let text = self.text;
        let bytes = text.as_bytes();
        let mut from = 0;
        while let Some(found) = text[from..].find("!!") {
            let at = from + found;
            from = at + 2;
            let before_ok =
                at == 0 || matches!(bytes[at - 1], b' ' | b'\t' | b'\n' | b'[' | b'{' | b',');
            let name: String = text[at + 2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                .collect();
            if !before_ok || name.is_empty() || CORE_TAGS.contains(&name.as_str()) {
                continue;
            }
            let probe = format!("{}!{SECONDARY_MARK}{}", &text[..at], &text[at + 2..]);
            let Ok(value) = serde_norway::from_str::<Value>(&probe) else {
                continue;
            };
            if has_marked_tag(&value) {
                let line = text[..at].matches('\n').count() + 1;
                let column = text[..at].rfind('\n').map_or(at, |nl| at - nl - 1) + 1;
                return Err(ComposeError::Invalid {
                    at: SourcePos::at(self.file.clone(), line, column),
                    message: format!(
                        "unknown tag `!!{name}` (known tags: !env, !home, !platform; \
                         JavaScript expressions are not supported)"
                    ),
                });
            }
        }
        Ok(())
    }
}

fn has_marked_tag(value: &Value) -> bool {
    match value {
        Value::Tagged(t) => {
            crate::tags::tag_name(t).starts_with(SECONDARY_MARK) || has_marked_tag(&t.value)
        }
        Value::Sequence(items) => items.iter().any(has_marked_tag),
        Value::Mapping(map) => map
            .iter()
            .any(|(k, v)| has_marked_tag(k) || has_marked_tag(v)),
        _ => false,
    }
}

/// Parses YAML text, turning parser errors into [`ComposeError::Syntax`] with a position. A
/// text over the size or nesting of a config document is refused before the parser sees it:
/// libyaml takes time quadratic in the nesting of `[[[...`.
pub(crate) fn parse_yaml(text: &str, file: &str) -> Result<Value, ComposeError> {
    dsh_doc_limits::check_yaml(text, file, Limits::DOCUMENT)?;
    serde_norway::from_str::<Value>(text).map_err(|err| {
        let (at, message) = yaml_error(file, &err);
        ComposeError::Syntax { at, message }
    })
}

/// The position and message of a `serde_norway` error (without its ` at line N column M` tail).
pub(crate) fn yaml_error(file: &str, err: &serde_norway::Error) -> (SourcePos, String) {
    let at = match err.location() {
        Some(loc) => SourcePos::at(file, loc.line(), loc.column()),
        None => SourcePos::file(file),
    };
    let mut message = err.to_string();
    if let Some(cut) = message.rfind(" at line ") {
        let tail = &message[cut + " at line ".len()..];
        let mut parts = tail.splitn(3, ' ');
        let is_mark = parts.next().is_some_and(|n| n.parse::<usize>().is_ok())
            && parts.next() == Some("column")
            && parts.next().is_some_and(|n| n.parse::<usize>().is_ok());
        if is_mark {
            message.truncate(cut);
        }
    }
    (at, message)
}

/// Row ids defined by one layer, with the path of each definition, to catch duplicates.
#[derive(Default)]
pub(crate) struct Defined {
    paths: HashMap<String, locate::Path>,
}

impl Defined {
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.paths.contains_key(id)
    }

    /// Records a definition; a second definition of an id in the same layer is an error.
    pub(crate) fn define(
        &mut self,
        src: &Source<'_>,
        id: &str,
        path: &[Step],
    ) -> Result<(), ComposeError> {
        if let Some(first) = self.paths.get(id) {
            return Err(ComposeError::DuplicateId {
                at: src.pos(path),
                id: id.to_owned(),
                first: Box::new(src.pos(first)),
            });
        }
        self.paths.insert(id.to_owned(), path.to_vec());
        Ok(())
    }
}
