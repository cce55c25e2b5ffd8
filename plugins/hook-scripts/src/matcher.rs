//! Which hooks of a group a subject (a tool name, a session source) selects. Both formats
//! treat a missing, empty or `*` matcher as "everything". Claude Code reads a pattern made only
//! of letters, digits, `_` and `|` as a list of exact names; anything else, and every Codex
//! pattern, is an unanchored regular expression. A pattern that does not compile is refused
//! when the file is read, so a file never half-applies.

use regex_automata::meta::Regex;

use crate::config::Format;

/// A compiled matcher.
#[derive(Debug)]
pub(crate) enum Matcher {
    All,
    /// Exact names (Claude Code's `Edit|Write`).
    Names(Vec<String>),
    Pattern(Box<Regex>),
}

/// Why a matcher cannot be used: the message names the pattern and the format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {format} regex matcher {pattern:?}: {reason}")]
pub(crate) struct MatcherError {
    pub(crate) format: &'static str,
    pub(crate) pattern: String,
    pub(crate) reason: String,
}

impl Matcher {
    pub(crate) fn compile(pattern: Option<&str>, format: Format) -> Result<Self, MatcherError> {
        let Some(pattern) = pattern.filter(|pattern| !pattern.is_empty() && *pattern != "*") else {
            return Ok(Self::All);
        };
        let literal = pattern
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|');
        if format == Format::ClaudeCode && literal {
            return Ok(Self::Names(pattern.split('|').map(str::to_owned).collect()));
        }
        Regex::new(pattern)
            .map(|regex| Self::Pattern(Box::new(regex)))
            .map_err(|error| MatcherError {
                format: format.as_str(),
                pattern: pattern.to_owned(),
                reason: error.to_string(),
            })
    }

    pub(crate) fn selects(&self, subject: &str) -> bool {
        match self {
            Self::All => true,
            Self::Names(names) => names.iter().any(|name| name == subject),
            Self::Pattern(regex) => regex.is_match(subject),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_reads_plain_names_literally_and_the_rest_as_a_regex() {
        let names = Matcher::compile(Some("Edit|Write"), Format::ClaudeCode).unwrap();
        assert!(names.selects("Write") && !names.selects("WriteFile"));
        let regex = Matcher::compile(Some("^b.sh$"), Format::ClaudeCode).unwrap();
        assert!(regex.selects("bash") && !regex.selects("bashx"));
        // Codex has no literal path: `bash` also selects `run_bash`.
        let codex = Matcher::compile(Some("bash"), Format::Codex).unwrap();
        assert!(codex.selects("run_bash"));
    }

    #[test]
    fn missing_empty_and_star_select_everything() {
        for pattern in [None, Some(""), Some("*")] {
            for format in [Format::ClaudeCode, Format::Codex] {
                assert!(
                    Matcher::compile(pattern, format)
                        .unwrap()
                        .selects("anything")
                );
            }
        }
    }

    #[test]
    fn a_pattern_that_does_not_compile_is_named() {
        let error = Matcher::compile(Some("["), Format::Codex).unwrap_err();
        assert_eq!(error.pattern, "[");
        assert!(
            error
                .to_string()
                .starts_with("invalid codex regex matcher \"[\"")
        );
    }
}
