//! Permission rules: `tool` or `tool(pattern)`. For `bash` the pattern is the command, where
//! `*` stands for any text (`bash(npm test*)`, `bash(git status)`); for the file tools it is a
//! path glob (`write(src/**)`, `read(~/.ssh/**)`), relative to the working directory unless it
//! starts with `/` or `~/`; for any other tool it is matched against the call's arguments as
//! JSON text. A tool name may use `*` too (`mcp__*`). For `web_fetch` the pattern is the URL
//! (`web_fetch(https://example.com/*)`), or `domain:HOST`, which matches a URL whose host is
//! HOST or a name under it (`web_fetch(domain:example.com)` also holds for `www.example.com`;
//! `domain:*.example.com` only for the names under it).

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

/// A rule that does not read, with the reason.
#[derive(Debug, thiserror::Error)]
#[error("rule `{rule}`: {reason}")]
pub(crate) struct RuleError {
    pub(crate) rule: String,
    pub(crate) reason: String,
}

/// The tools whose pattern is a path, and the argument that holds it.
const PATH_TOOLS: [(&str, &str); 5] = [
    ("read", "file_path"),
    ("write", "file_path"),
    ("edit", "file_path"),
    ("glob", "path"),
    ("grep", "path"),
];

/// One parsed rule.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    /// As written, to name it in a decision.
    pub(crate) text: String,
    tool: String,
    pattern: Option<String>,
}

impl Rule {
    pub(crate) fn parse(text: &str) -> Result<Self, RuleError> {
        let error = |reason: &str| RuleError {
            rule: text.to_owned(),
            reason: reason.to_owned(),
        };
        let trimmed = text.trim();
        let (tool, pattern) = match trimmed.split_once('(') {
            None => (trimmed, None),
            Some((tool, rest)) => {
                let inner = rest
                    .strip_suffix(')')
                    .ok_or_else(|| error("a pattern must end with `)`"))?;
                (tool.trim(), Some(inner.to_owned()))
            }
        };
        if tool.is_empty()
            || !tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*' | '.'))
        {
            return Err(error(
                "the tool name must be letters, digits, `_`, `-`, `.` or `*`",
            ));
        }
        if pattern
            .as_deref()
            .is_some_and(|pattern| pattern.trim().is_empty())
        {
            return Err(error(
                "the pattern is empty: write the tool alone to match every call",
            ));
        }
        if pattern
            .as_deref()
            .and_then(|pattern| pattern.strip_prefix("domain:"))
            .is_some_and(|domain| domain.trim().is_empty())
        {
            return Err(error("`domain:` needs a host name after it"));
        }
        if let Some(pattern) = &pattern
            && path_argument(tool).is_some()
        {
            GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|glob| error(&format!("not a path glob: {glob}")))?;
        }
        Ok(Self {
            text: trimmed.to_owned(),
            tool: tool.to_owned(),
            pattern,
        })
    }

    /// Whether this rule is about tool `name`.
    pub(crate) fn names(&self, name: &str) -> bool {
        wildcard(&self.tool, name)
    }

    /// Whether the rule matches a call of `tool` whose subject (a simple command, a path, or
    /// the arguments' text) is `subject`, with relative path patterns under `cwd`.
    pub(crate) fn matches(&self, tool: &str, subject: &str, cwd: &Path) -> bool {
        if !self.names(tool) {
            return false;
        }
        let Some(pattern) = &self.pattern else {
            return true;
        };
        if path_argument(tool).is_some() {
            return path_glob(pattern, cwd).is_some_and(|glob| glob.is_match(subject));
        }
        if let Some(domain) = pattern.strip_prefix("domain:") {
            return url_host(subject).is_some_and(|host| domain_matches(domain, &host));
        }
        // `npm run test:*` (the prefix form other harnesses use) is `npm run test*`.
        let pattern = pattern
            .strip_suffix(":*")
            .map_or_else(|| pattern.clone(), |head| format!("{head}*"));
        wildcard(&normalize(&pattern), &normalize(subject))
    }
}

/// The argument that names the path of a file tool's call.
pub(crate) fn path_argument(tool: &str) -> Option<&'static str> {
    PATH_TOOLS
        .iter()
        .find(|(name, _)| *name == tool)
        .map(|(_, argument)| *argument)
}

/// A path pattern made absolute: `~/` is the home directory, a relative one is under `cwd`.
fn path_glob(pattern: &str, cwd: &Path) -> Option<GlobMatcher> {
    let absolute: PathBuf = if let Some(rest) = pattern.strip_prefix("~/") {
        PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(rest)
    } else if pattern.starts_with('/') {
        PathBuf::from(pattern)
    } else {
        cwd.join(pattern)
    };
    GlobBuilder::new(&absolute.to_string_lossy())
        .literal_separator(true)
        .build()
        .ok()
        .map(|glob| glob.compile_matcher())
}

/// The host of a URL, lower-cased, without a trailing dot (`None` when it is not a URL).
fn url_host(subject: &str) -> Option<String> {
    let url = url::Url::parse(subject.trim()).ok()?;
    let host = url.host_str()?.trim_end_matches('.').to_ascii_lowercase();
    Some(host.trim_matches(['[', ']']).to_owned())
}

/// Whether `host` is `domain` or a name under it; `*` in `domain` stands for any text.
fn domain_matches(domain: &str, host: &str) -> bool {
    let domain = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    if domain.contains('*') {
        return wildcard(&domain, host);
    }
    host == domain || host.ends_with(&format!(".{domain}"))
}

/// Runs of white space as one space.
fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `*` matches any text (possibly empty); everything else matches itself.
fn wildcard(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Rule {
        Rule::parse(text).unwrap()
    }

    #[test]
    fn commands_match_exactly_or_by_wildcard() {
        let cwd = Path::new("/w");
        assert!(rule("bash(git status)").matches("bash", "git  status", cwd));
        assert!(!rule("bash(git status)").matches("bash", "git status --short", cwd));
        assert!(rule("bash(npm test*)").matches("bash", "npm test -- --watch", cwd));
        assert!(rule("bash(npm run test:*)").matches("bash", "npm run test:unit", cwd));
        assert!(rule("bash").matches("bash", "anything", cwd));
        assert!(!rule("bash(rm *)").matches("write", "rm x", cwd));
        assert!(rule("mcp__*").matches("mcp__github__search", "{}", cwd));
    }

    #[test]
    fn paths_match_globs_under_the_working_directory_or_home() {
        let cwd = Path::new("/w");
        assert!(rule("write(src/**)").matches("write", "/w/src/a/b.rs", cwd));
        assert!(!rule("write(src/**)").matches("write", "/w/tests/a.rs", cwd));
        assert!(!rule("write(src/*)").matches("write", "/w/src/a/b.rs", cwd));
        let home = std::env::var("HOME").unwrap_or_default();
        assert!(rule("read(~/.ssh/**)").matches("read", &format!("{home}/.ssh/id_rsa"), cwd));
    }

    #[test]
    fn web_fetch_rules_match_the_urls_host() {
        let cwd = Path::new("/w");
        let rule = rule("web_fetch(domain:example.com)");
        assert!(rule.matches("web_fetch", "https://example.com/a", cwd));
        assert!(rule.matches("web_fetch", "http://WWW.Example.COM.:8080/x?y", cwd));
        assert!(!rule.matches("web_fetch", "https://notexample.com/", cwd));
        assert!(!rule.matches("web_fetch", "https://example.com.evil.net/", cwd));
        assert!(!rule.matches("web_fetch", "not a url", cwd));
        let sub = super::Rule::parse("web_fetch(domain:*.example.com)").unwrap();
        assert!(sub.matches("web_fetch", "https://a.example.com/", cwd));
        assert!(!sub.matches("web_fetch", "https://example.com/", cwd));
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        for (text, says) in [
            ("bash(npm test", "must end with `)`"),
            ("ba sh", "tool name"),
            ("bash()", "pattern is empty"),
            ("write(src/[)", "not a path glob"),
            ("web_fetch(domain: )", "needs a host name"),
        ] {
            let error = Rule::parse(text).unwrap_err().to_string();
            assert!(error.contains(says) && error.contains(text), "{error}");
        }
    }
}
