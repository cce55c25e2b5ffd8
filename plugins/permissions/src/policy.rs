//! One call judged against the rules: deny wins over ask, ask over allow. A shell command is
//! judged part by part: one denied part denies the whole, one asked part asks, and under the
//! `ask` default it runs without asking only when every part is allowed. A file tool's call is
//! judged by its path, lexically resolved and, when it exists, by its real path too (a rule on
//! `~/.ssh/**` also catches a symlink to it).

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::rules::{Rule, path_argument};
use crate::shell::commands;

/// Rules of one source, named for the decision's reason.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    pub(crate) allow: Vec<Rule>,
    pub(crate) deny: Vec<Rule>,
    pub(crate) ask: Vec<Rule>,
}

impl Rules {
    /// These rules as a project's: its `deny` and `ask` only, since a project may narrow what
    /// the user allows but never allow anything itself.
    pub(crate) fn narrowing(&self) -> Rules {
        Rules {
            allow: Vec::new(),
            deny: self.deny.clone(),
            ask: self.ask.clone(),
        }
    }
}

/// What the rules say about a call.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Refused, with the reason.
    Deny(String),
    /// Put to a person, with the reason.
    Ask(String),
    /// No rule stops it: the rest of the pipeline decides.
    Pass,
}

/// The subjects of a call: its simple commands, its paths, or its arguments' text.
fn subjects(tool: &str, arguments: &Value, cwd: &Path) -> Vec<String> {
    if tool == "bash" {
        let command = arguments
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let parts = commands(command);
        return if parts.is_empty() {
            vec![command.to_owned()]
        } else {
            parts
        };
    }
    if tool == "web_fetch" {
        // The URL, or the arguments' text when there is none (a pattern then matches nothing
        // a domain rule names, and the tool refuses the call itself).
        #[derive(dsh_plugin_api::Deserialize)]
        #[serde(crate = "dsh_plugin_api::serde")]
        struct Fetch {
            url: String,
        }
        let url = serde_json::from_value::<Fetch>(arguments.clone())
            .map_or_else(|_| arguments.to_string(), |fetch| fetch.url);
        return vec![url];
    }
    if let Some(argument) = path_argument(tool) {
        let given = arguments[argument].as_str().unwrap_or(".");
        let lexical = lexical(&cwd.join(given));
        let mut paths = vec![lexical.display().to_string()];
        if let Ok(real) = std::fs::canonicalize(&lexical)
            && real != lexical
        {
            paths.push(real.display().to_string());
        }
        return paths;
    }
    vec![arguments.to_string()]
}

/// `.` and `..` folded without touching the file system.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Judges a call of `tool` with `arguments` in `cwd` against `sources` (each with its name);
/// `default_ask` puts every call no allow rule covers to a person.
pub(crate) fn judge(
    sources: &[(&str, &Rules)],
    tool: &str,
    arguments: &Value,
    cwd: &Path,
    default_ask: bool,
) -> Verdict {
    let subjects = subjects(tool, arguments, cwd);
    let find = |pick: fn(&Rules) -> &Vec<Rule>, subject: &str| {
        sources.iter().find_map(|(source, rules)| {
            pick(rules)
                .iter()
                .find(|rule| rule.matches(tool, subject, cwd))
                .map(|rule| format!("`{}` ({source})", rule.text))
        })
    };
    for subject in &subjects {
        if let Some(rule) = find(|rules| &rules.deny, subject) {
            return Verdict::Deny(format!("denied by the rule {rule}: `{subject}`"));
        }
    }
    for subject in &subjects {
        if let Some(rule) = find(|rules| &rules.ask, subject) {
            return Verdict::Ask(format!("the rule {rule} asks before `{subject}`"));
        }
    }
    if default_ask
        && let Some(uncovered) = subjects
            .iter()
            .find(|subject| find(|rules| &rules.allow, subject).is_none())
    {
        return Verdict::Ask(format!("no allow rule covers `{uncovered}`"));
    }
    Verdict::Pass
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(allow: &[&str], deny: &[&str], ask: &[&str]) -> Rules {
        let parse = |list: &[&str]| list.iter().map(|text| Rule::parse(text).unwrap()).collect();
        Rules {
            allow: parse(allow),
            deny: parse(deny),
            ask: parse(ask),
        }
    }

    fn bash(command: &str) -> Value {
        json!({"command": command})
    }

    #[test]
    fn deny_wins_over_ask_and_ask_over_allow() {
        let user = rules(
            &["bash(git *)"],
            &["bash(git push*)"],
            &["bash(git commit*)"],
        );
        let sources = [("user", &user)];
        let cwd = Path::new("/w");
        assert!(matches!(
            judge(&sources, "bash", &bash("git push origin"), cwd, false),
            Verdict::Deny(_)
        ));
        assert!(matches!(
            judge(&sources, "bash", &bash("git commit -m x"), cwd, false),
            Verdict::Ask(_)
        ));
        assert_eq!(
            judge(&sources, "bash", &bash("git status"), cwd, true),
            Verdict::Pass
        );
    }

    #[test]
    fn a_compound_command_runs_unasked_only_when_every_part_is_allowed() {
        let user = rules(
            &["bash(npm test*)", "bash(git status)"],
            &["bash(rm -rf *)"],
            &[],
        );
        let sources = [("user", &user)];
        let cwd = Path::new("/w");
        assert_eq!(
            judge(&sources, "bash", &bash("git status && npm test"), cwd, true),
            Verdict::Pass
        );
        let Verdict::Ask(reason) = judge(
            &sources,
            "bash",
            &bash("git status && curl x | sh"),
            cwd,
            true,
        ) else {
            panic!("an uncovered part must ask");
        };
        assert!(reason.contains("`curl x`"), "{reason}");
        let Verdict::Deny(reason) = judge(
            &sources,
            "bash",
            &bash("npm test; echo $(rm -rf /)"),
            cwd,
            false,
        ) else {
            panic!("a denied part inside a substitution must deny");
        };
        assert!(
            reason.contains("rm -rf *") && reason.contains("(user)"),
            "{reason}"
        );
    }

    #[test]
    fn a_projects_allow_rules_do_not_count() {
        let user = rules(&[], &[], &[]);
        let project = rules(&["bash(*)"], &["bash(rm *)"], &[]).narrowing();
        let sources = [("user", &user), ("project", &project)];
        let cwd = Path::new("/w");
        assert!(matches!(
            judge(&sources, "bash", &bash("curl x | sh"), cwd, true),
            Verdict::Ask(_)
        ));
        assert!(matches!(
            judge(&sources, "bash", &bash("rm -rf build"), cwd, false),
            Verdict::Deny(_)
        ));
    }

    #[test]
    fn a_domain_rule_denies_web_fetch_of_that_host() {
        let user = rules(&[], &["web_fetch(domain:example.com)"], &[]);
        let sources = [("user", &user)];
        let cwd = Path::new("/w");
        let call = json!({"url": "https://docs.example.com/page"});
        let Verdict::Deny(reason) = judge(&sources, "web_fetch", &call, cwd, false) else {
            panic!("the domain rule must deny");
        };
        assert!(reason.contains("domain:example.com"), "{reason}");
        let other = json!({"url": "https://example.org/"});
        assert_eq!(
            judge(&sources, "web_fetch", &other, cwd, false),
            Verdict::Pass
        );
    }

    #[test]
    fn a_project_allow_does_not_lift_a_user_deny() {
        let user = rules(&[], &["write(secrets/**)"], &[]);
        let project = rules(&["write(**)"], &[], &[]);
        let sources = [("user", &user), ("project", &project)];
        let call = json!({"file_path": "secrets/../secrets/key.pem"});
        assert!(matches!(
            judge(&sources, "write", &call, Path::new("/w"), true),
            Verdict::Deny(_)
        ));
        let fine = json!({"file_path": "src/main.rs"});
        assert_eq!(
            judge(&sources, "write", &fine, Path::new("/w"), true),
            Verdict::Pass
        );
    }
}
