//! A chain of identical calls and the reminders' texts: what counts as the same call (the
//! tool's name and its arguments in canonical form), which tools are tracked, and what the
//! model is told.

use serde_json::Value;

/// The reminder at the first threshold.
pub(crate) const GENTLE: &str = "You are repeating the exact same tool call with identical \
    arguments. Carefully analyze the previous result before calling again: if the task is not \
    complete, try a different approach or different arguments instead of repeating the call.";

/// The reminder at a later threshold: the tool, how many calls in a row, the arguments.
pub(crate) fn detailed(tool: &str, count: u64, arguments: &str) -> String {
    format!(
        "Repeated tool call detected:\n- tool: {tool}\n- consecutive_calls: {count}\n- arguments: \
         {arguments}\nThe repeated calls are not making progress. Do not call this tool with \
         these exact arguments again. Inspect the latest result and choose a different action, \
         different arguments, or finish the task if enough evidence has been gathered."
    )
}

/// The last tracked call of a session and how many times in a row it came.
#[derive(Default)]
pub(crate) struct Chain {
    key: Option<(String, String)>,
    count: u64,
}

impl Chain {
    /// Counts one more call: the chain's new length.
    pub(crate) fn advance(&mut self, tool: &str, arguments: String) -> u64 {
        let key = (tool.to_owned(), arguments);
        match self.key.as_ref() == Some(&key) {
            true => self.count += 1,
            false => {
                self.key = Some(key);
                self.count = 1;
            }
        }
        self.count
    }
}

/// Arguments with every object's keys sorted, as compact JSON; arguments that are not JSON
/// stay as they came (two identical malformed calls still repeat).
pub(crate) fn canonical(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => sorted(value).to_string(),
        Err(_) => arguments.to_owned(),
    }
}

fn sorted(value: Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key, sorted(value)))
                    .collect(),
            )
        }
        other => other,
    }
}

/// `canonical` cut at `cap` characters, saying how many were left out.
pub(crate) fn preview(canonical: &str, cap: usize) -> String {
    let total = canonical.chars().count();
    if total <= cap {
        return canonical.to_owned();
    }
    let head: String = canonical.chars().take(cap).collect();
    format!("{head}… (+{} more chars)", total - cap)
}

/// Which tools take part in chains.
pub(crate) struct Patterns {
    include: Vec<String>,
    exclude: Vec<String>,
}

impl Patterns {
    pub(crate) fn new(include: &[String], exclude: &[String]) -> Self {
        Self {
            include: include.to_vec(),
            exclude: exclude.to_vec(),
        }
    }

    pub(crate) fn tracked(&self, tool: &str) -> bool {
        if !self.include.is_empty() && !self.include.iter().any(|p| wildcard(p, tool)) {
            return false;
        }
        !self.exclude.iter().any(|p| wildcard(p, tool))
    }
}

/// Whether `name` matches `pattern`, where `*` stands for any run of characters.
fn wildcard(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == name;
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_does_not_make_another_call() {
        assert_eq!(
            canonical(r#"{"b": 1, "a": {"d": 2, "c": [ {"y":1,"x":2} ]}}"#),
            r#"{"a":{"c":[{"x":2,"y":1}],"d":2},"b":1}"#
        );
        assert_eq!(canonical("not json"), "not json");
        let mut chain = Chain::default();
        assert_eq!(chain.advance("t", canonical(r#"{"a":1,"b":2}"#)), 1);
        assert_eq!(chain.advance("t", canonical(r#"{"b":2,"a":1}"#)), 2);
        assert_eq!(chain.advance("u", canonical(r#"{"b":2,"a":1}"#)), 1);
    }

    #[test]
    fn wildcards_and_previews() {
        assert!(wildcard("mcp__*", "mcp__git__log"));
        assert!(wildcard("*_write", "todo_write"));
        assert!(wildcard("a*c*e", "abcde"));
        assert!(!wildcard("a*c*e", "abcd"));
        assert!(!wildcard("read", "reader"));
        let patterns = Patterns::new(&[], &["mcp__*".to_owned()]);
        assert!(patterns.tracked("read") && !patterns.tracked("mcp__x__y"));
        assert_eq!(preview("abcdef", 4), "abcd… (+2 more chars)");
        assert_eq!(preview("abc", 4), "abc");
    }
}
