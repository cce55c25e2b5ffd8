//! `{{name}}` references in prompt sections: strict, so a typo fails loudly instead of sending
//! the model a literal brace group. Names match `[a-z][a-z0-9_]*`, with no spaces and no
//! escape syntax; a `{{` with no later `}}` is plain text; values are not scanned again.

use std::collections::BTreeMap;

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// A reference that cannot be replaced, or a name that cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum VariableError {
    #[error(
        "malformed prompt variable reference \"{{{{{name}}}}}\" in section \"{section}\" (variable names match [a-z][a-z0-9_]*)"
    )]
    Malformed { name: String, section: String },
    #[error(
        "unknown prompt variable \"{{{{{name}}}}}\" in section \"{section}\"; registered variables: {known}"
    )]
    Unknown {
        name: String,
        section: String,
        known: String,
    },
    #[error(
        "prompt variable \"{{{{{name}}}}}\" has no value for this assembly (section \"{section}\")"
    )]
    Empty { name: String, section: String },
    #[error("prompt variable name `{0}` does not match [a-z][a-z0-9_]*")]
    BadName(String),
}

/// `text` with every reference replaced by its value; the error names the reference and the
/// section (`section`).
pub(crate) fn interpolate(
    text: &str,
    section: &str,
    variables: &BTreeMap<String, String>,
) -> Result<String, VariableError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let Some(close) = rest[open + 2..].find("}}") else {
            break;
        };
        let name = &rest[open + 2..open + 2 + close];
        if !valid_name(name) {
            return Err(VariableError::Malformed {
                name: name.to_owned(),
                section: section.to_owned(),
            });
        }
        let Some(value) = variables.get(name) else {
            let known: Vec<&str> = variables.keys().map(String::as_str).collect();
            let known = match known.is_empty() {
                true => "(none)".to_owned(),
                false => known.join(", "),
            };
            return Err(VariableError::Unknown {
                name: name.to_owned(),
                section: section.to_owned(),
                known,
            });
        };
        if value.is_empty() {
            return Err(VariableError::Empty {
                name: name.to_owned(),
                section: section.to_owned(),
            });
        }
        out.push_str(&rest[..open]);
        out.push_str(value);
        rest = &rest[open + 2 + close + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether `name` may be registered.
pub(crate) fn check_name(name: &str) -> Result<(), VariableError> {
    match valid_name(name) {
        true => Ok(()),
        false => Err(VariableError::BadName(name.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        [("model", "deepseek-v4"), ("cwd", "/work"), ("provider", "")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    #[test]
    fn references_are_replaced_and_values_not_rescanned() {
        let mut variables = vars();
        variables.insert("odd".to_owned(), "{{model}}".to_owned());
        assert_eq!(
            interpolate("on {{model}} in {{cwd}}: {{odd}}", "persona", &variables).unwrap(),
            "on deepseek-v4 in /work: {{model}}"
        );
        assert_eq!(
            interpolate("a {{ lone brace", "persona", &variables).unwrap(),
            "a {{ lone brace"
        );
    }

    #[test]
    fn unknown_malformed_and_valueless_references_fail_naming_the_section() {
        let unknown = interpolate("{{modle}}", "persona", &vars())
            .unwrap_err()
            .to_string();
        assert_eq!(
            unknown,
            "unknown prompt variable \"{{modle}}\" in section \"persona\"; registered variables: cwd, model, provider"
        );
        let malformed = interpolate("{{ model }}", "tool:bash", &vars())
            .unwrap_err()
            .to_string();
        assert!(
            malformed.starts_with(
                "malformed prompt variable reference \"{{ model }}\" in section \"tool:bash\""
            ),
            "{malformed}"
        );
        let empty = interpolate("{{provider}}", "persona", &vars())
            .unwrap_err()
            .to_string();
        assert_eq!(
            empty,
            "prompt variable \"{{provider}}\" has no value for this assembly (section \"persona\")"
        );
        assert!(check_name("Model").is_err());
        assert!(check_name("run_2").is_ok());
    }
}
