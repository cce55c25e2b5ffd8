//! `dsh-doc-limits`: the caps a YAML or JSON document from outside the process must pass before
//! a parser sees it: a size in bytes and a nesting depth. A document over either is refused with
//! an error naming its file and the limit, in time linear in its size.
//!
//! Why before the parser: libyaml (under `serde_norway`) spends time quadratic in the depth of
//! nested flow collections (`[[[[...`), so a 240 KB settings file held a host for most of a
//! minute before the parser's own recursion limit could refuse it; and `serde_json` and
//! `serde_norway` read a whole file however large it is. The depth of a YAML document is
//! measured by following libyaml's own tokenizer rules (which `[` opens a collection depends on
//! quotes, comments, block scalars and indentation, see `yaml`), so a document cannot hide its
//! nesting from the check and still reach the parser. It owns no parsing: callers parse with
//! their own crate after the check passes. `read_capped` reads a file without holding more than
//! the cap in memory.

mod json;
mod yaml;

use std::fmt;
use std::io::Read;
use std::path::Path;

/// What a document may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest document, in bytes.
    pub max_bytes: usize,
    /// The deepest nesting of collections (a top-level mapping is depth 1).
    pub max_depth: usize,
}

impl Limits {
    /// A configuration document (settings, profiles, bundles, patches, server and hook files,
    /// front matter): far above any real one, low enough that parsing it costs milliseconds.
    pub const DOCUMENT: Limits = Limits {
        max_bytes: 1 << 20,
        max_depth: 64,
    };
}

/// Which syntax a document is in (named in errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Yaml,
    Json,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Yaml => "YAML",
            Format::Json => "JSON",
        })
    }
}

/// Why a document is refused before parsing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error("{file}: {size} bytes is over the limit of {limit} bytes for a {format} document")]
    TooLarge {
        file: String,
        format: Format,
        size: usize,
        limit: usize,
    },
    #[error("{file}:{line}: nested deeper than {limit} levels, the limit for a {format} document")]
    TooDeep {
        file: String,
        format: Format,
        /// 1-based line where the nesting passes the limit.
        line: usize,
        limit: usize,
    },
}

impl LimitError {
    /// What is wrong without the file's name, for a caller that names the file itself.
    pub fn reason(&self) -> String {
        match self {
            LimitError::TooLarge {
                format,
                size,
                limit,
                ..
            } => format!("{size} bytes is over the limit of {limit} bytes for a {format} document"),
            LimitError::TooDeep {
                format,
                line,
                limit,
                ..
            } => format!(
                "line {line} nests deeper than {limit} levels, the limit for a {format} document"
            ),
        }
    }
}

fn check_size(text: &str, file: &str, format: Format, limits: Limits) -> Result<(), LimitError> {
    if text.len() > limits.max_bytes {
        return Err(LimitError::TooLarge {
            file: file.to_owned(),
            format,
            size: text.len(),
            limit: limits.max_bytes,
        });
    }
    Ok(())
}

/// Refuses a YAML document (`file` names it) over the size or depth of `limits`.
pub fn check_yaml(text: &str, file: &str, limits: Limits) -> Result<(), LimitError> {
    check_size(text, file, Format::Yaml, limits)?;
    match yaml::too_deep(text, limits.max_depth) {
        None => Ok(()),
        Some(line) => Err(LimitError::TooDeep {
            file: file.to_owned(),
            format: Format::Yaml,
            line,
            limit: limits.max_depth,
        }),
    }
}

/// Refuses a JSON document (`file` names it) over the size or depth of `limits`.
pub fn check_json(text: &str, file: &str, limits: Limits) -> Result<(), LimitError> {
    check_size(text, file, Format::Json, limits)?;
    match json::too_deep(text, limits.max_depth) {
        None => Ok(()),
        Some(line) => Err(LimitError::TooDeep {
            file: file.to_owned(),
            format: Format::Json,
            line,
            limit: limits.max_depth,
        }),
    }
}

/// Reads the UTF-8 text of `path`, refusing a file over `max_bytes` (an error of kind
/// `FileTooLarge`) without reading more than one byte past the cap.
pub fn read_capped(path: &Path, max_bytes: usize) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let cap = u64::try_from(max_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes)?;
    if bytes.len() > max_bytes {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("larger than the limit of {max_bytes} bytes for a document"),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn errors_name_the_file_and_the_limit() {
        let limits = Limits {
            max_bytes: 10,
            max_depth: 2,
        };
        let large = check_yaml("a: 0123456789", "/p/settings.yaml", limits).unwrap_err();
        assert_eq!(
            large.to_string(),
            "/p/settings.yaml: 13 bytes is over the limit of 10 bytes for a YAML document"
        );
        let deep = check_json("[\n[[1]]]", "/p/mcp.json", limits).unwrap_err();
        assert_eq!(
            deep.to_string(),
            "/p/mcp.json:2: nested deeper than 2 levels, the limit for a JSON document"
        );
        assert_eq!(
            deep.reason(),
            "line 2 nests deeper than 2 levels, the limit for a JSON document"
        );
        assert!(check_yaml("a: [b]", "f", limits).is_ok());
    }

    #[test]
    fn read_capped_stops_past_the_cap() {
        let path = std::env::temp_dir().join(format!("dsh-doc-limits-{}", std::process::id()));
        std::fs::write(&path, "x".repeat(100)).unwrap();
        assert_eq!(read_capped(&path, 100).unwrap().len(), 100);
        let error = read_capped(&path, 99).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::FileTooLarge);
        assert!(error.to_string().contains("99 bytes"), "{error}");
        std::fs::remove_file(&path).unwrap();
    }
}
