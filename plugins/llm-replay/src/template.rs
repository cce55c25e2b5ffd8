//! `{{fromRequest:<regex>}}` placeholders in scripted strings: at stream time each is replaced
//! by the first capture group (or the whole match) of the pattern's last match in the live
//! request's string leaves, joined by newlines. No match, a bad pattern or an unterminated
//! placeholder fail loud.

use regex_automata::meta::Regex;
use serde_json::Value;

const OPEN: &str = "{{fromRequest:";
const CLOSE: &str = "}}";

/// Why a placeholder could not be filled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TemplateError {
    #[error("an unterminated {{{{fromRequest:..}}}} placeholder in `{0}`")]
    Unterminated(String),
    #[error("{{{{fromRequest:{pattern}}}}}: not a regular expression: {error}")]
    Pattern { pattern: String, error: String },
    #[error("{{{{fromRequest:{0}}}}}: nothing in the request matches")]
    NoMatch(String),
}

/// Whether any string leaf of `chunks` holds a placeholder.
pub(crate) fn has_placeholders(chunks: &[Value]) -> bool {
    chunks
        .iter()
        .any(|chunk| any_leaf(chunk, &|text| text.contains(OPEN)))
}

fn any_leaf(value: &Value, test: &dyn Fn(&str) -> bool) -> bool {
    match value {
        Value::String(text) => test(text),
        Value::Array(items) => items.iter().any(|item| any_leaf(item, test)),
        Value::Object(map) => map.values().any(|item| any_leaf(item, test)),
        _ => false,
    }
}

/// Every string leaf of `value`, in document order, joined by newlines.
pub(crate) fn string_leaves(value: &Value) -> String {
    fn walk(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(text) => out.push(text.clone()),
            Value::Array(items) => items.iter().for_each(|item| walk(item, out)),
            Value::Object(map) => map.values().for_each(|item| walk(item, out)),
            _ => {}
        }
    }
    let mut leaves = Vec::new();
    walk(value, &mut leaves);
    leaves.join("\n")
}

/// `chunks` with every placeholder filled from `request` (the request's string leaves).
pub(crate) fn fill(chunks: &[Value], request: &str) -> Result<Vec<Value>, TemplateError> {
    chunks
        .iter()
        .map(|chunk| fill_value(chunk, request))
        .collect()
}

fn fill_value(value: &Value, request: &str) -> Result<Value, TemplateError> {
    Ok(match value {
        Value::String(text) => Value::String(fill_text(text, request)?),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| fill_value(item, request))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| Ok((key.clone(), fill_value(item, request)?)))
                .collect::<Result<_, TemplateError>>()?,
        ),
        other => other.clone(),
    })
}

fn fill_text(text: &str, request: &str) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + OPEN.len()..];
        let end = after
            .find(CLOSE)
            .ok_or_else(|| TemplateError::Unterminated(text.to_owned()))?;
        let pattern = &after[..end];
        out.push_str(&last_match(pattern, request)?);
        rest = &after[end + CLOSE.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The first group (or the whole match) of `pattern`'s last match in `haystack`.
fn last_match(pattern: &str, haystack: &str) -> Result<String, TemplateError> {
    let regex = Regex::new(pattern).map_err(|error| TemplateError::Pattern {
        pattern: pattern.to_owned(),
        error: error.to_string(),
    })?;
    let last = regex
        .captures_iter(haystack)
        .last()
        .ok_or_else(|| TemplateError::NoMatch(pattern.to_owned()))?;
    let span = last
        .get_group(1)
        .or_else(|| last.get_match().map(|found| found.span()))
        .ok_or_else(|| TemplateError::NoMatch(pattern.to_owned()))?;
    Ok(haystack[span.start..span.end].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_take_the_last_match_and_its_first_group() {
        let request = "id=1\nid=22\nnone";
        let chunks = vec![
            json!({"type": "text-delta", "index": 0, "text": "seen {{fromRequest:id=(\\d+)}}!"}),
        ];
        assert!(has_placeholders(&chunks));
        let filled = fill(&chunks, request).unwrap();
        assert_eq!(filled[0]["text"], "seen 22!");
        let whole = fill(&[json!("{{fromRequest:none}}")], request).unwrap();
        assert_eq!(whole[0], "none");
    }

    #[test]
    fn a_missing_match_a_bad_pattern_and_an_open_placeholder_fail() {
        assert_eq!(
            fill(&[json!("{{fromRequest:zzz}}")], "abc"),
            Err(TemplateError::NoMatch("zzz".into()))
        );
        assert!(matches!(
            fill(&[json!("{{fromRequest:(}}")], "abc"),
            Err(TemplateError::Pattern { .. })
        ));
        assert!(matches!(
            fill(&[json!("x {{fromRequest:a")], "abc"),
            Err(TemplateError::Unterminated(_))
        ));
    }

    #[test]
    fn leaves_are_the_strings_in_document_order() {
        let value = json!({"a": "x", "b": [1, "y", {"c": "z"}], "d": true});
        assert_eq!(string_leaves(&value), "x\ny\nz");
    }
}
