//! Running `dsh-host --profile sdk` for a test through the `dsh-client` crate (in a fresh home,
//! stderr kept in a file beside it, no key or log filter of the developer's shell), and reading
//! a recorded jsonrpc case back as the reference's SDK suite does
//! (`examples/jsonrpc-agent/tests/sdk.snapshot.ts`): its prompt and fixed session id, its
//! recorded logs hydrated with the run's working directory, and the normalization its
//! notifications and result go through before they are compared.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use dsh_client::{Client, Notification};
use serde_json::{Value, json};

use crate::{TestDir, host_bin};

/// The route every recorded case was initialized with.
pub const PROVIDER: &str = "deepseek-official";
pub const MODEL: &str = "deepseek-v4-flash";

/// The reference's keyless replay composition: the real DeepSeek adapter disabled, so nothing
/// answers but the replay (and no adapter's model catalog adds a context window to the log).
pub const REPLAY_PATCH: &str = "- id: llm-deepseek\n  disabled: true\n";

/// Starts the SDK runtime with `args` in `dir`'s home; its working directory is `dir/work`.
pub fn start(dir: &TestDir, args: &[&str], envs: &[(&str, &str)]) -> Client {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let stderr = std::fs::File::create(dir.join("stderr.log")).unwrap();
    let mut command = Client::sdk_command(&host_bin(), args);
    for name in [
        "DEEPSEEK_API_KEY",
        "DEEPSEEK_BASE_URL",
        "RUST_LOG",
        "DSH_LOG",
        "DSH_PERMISSION_MODE",
    ] {
        command.env_remove(name);
    }
    command
        .env("DSH_HOME", dir.home())
        .env("DSH_AGENTS_HOME", dir.join("agents"))
        .envs(envs.iter().copied())
        .current_dir(&work)
        .stderr(Stdio::from(stderr));
    Client::spawn(command).expect("start dsh-host --profile sdk")
}

/// What the runtime wrote on stderr so far.
pub fn stderr_of(dir: &TestDir) -> String {
    std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default()
}

/// One recorded case of `jsonrpc/snapshots`, as the reference's SCENARIOS table holds it.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    pub name: &'static str,
    pub prompt: &'static str,
    pub session_id: &'static str,
    /// How many child logs lie beside `session.jsonl`.
    pub children: usize,
    /// Rows the case's composition adds to [`REPLAY_PATCH`] (YAML, empty for none).
    pub patch: &'static str,
}

pub const CASES: [Case; 4] = [
    Case {
        name: "text-turn",
        prompt: "Reply with exactly: SDK snapshot OK",
        session_id: "sdk-snapshot-text",
        children: 0,
        patch: "",
    },
    Case {
        name: "bash-tool",
        prompt: "Run this exact command with your bash tool, then reply with its stdout only: echo dsh-sdk-proof-7391",
        session_id: "sdk-snapshot-bash",
        children: 0,
        patch: "",
    },
    Case {
        name: "subagent-spawn-in-process",
        prompt: "Use the subagent tool exactly once with description 'echo probe' and prompt: Reply with exactly: child answer 42. Then reply with the subagent's final answer verbatim.",
        session_id: "sdk-snapshot-subagent",
        children: 1,
        // The reference's SDK composition runs no approval service, so its child's log has no
        // `approval/policy` (ours logs one wherever approvals are asked at all).
        patch: "- id: approval\n  disabled: true\n",
    },
    Case {
        name: "persistent-tools",
        prompt: "Prove that bash state persists. Then create {{cwd}}/note.txt with a tab-indented line, view it, replace that literal tab-indented line, and make the persistent shell exit with code 9.",
        session_id: "persistent-tools-snapshot",
        children: 0,
        // The reference recorded it with its minimal composition: our `minimal` preset, made
        // the default, so the SDK's session runs it; and without our undo recorder, whose
        // `undo/change` events (ignorable, an extension) the reference does not log.
        patch: "- id: agent-presets\n  config:\n    default: minimal\n- id: undo\n  disabled: true\n",
    },
];

/// Copies the case's logs under `to` with `{{cwd}}` read as `cwd` (the reference hydrates
/// its fixtures so); answers the parent log's path.
pub fn hydrate(folder: &Path, case: &Case, to: &Path, cwd: &str) -> PathBuf {
    std::fs::create_dir_all(to).unwrap();
    let names = std::iter::once("session.jsonl".to_owned())
        .chain((1..=case.children).map(|n| format!("session.{n}.jsonl")));
    for name in names {
        let text = std::fs::read_to_string(folder.join(&name)).unwrap();
        std::fs::write(to.join(&name), text.replace("{{cwd}}", cwd)).unwrap();
    }
    to.join("session.jsonl")
}

/// What a run's strings are scrubbed of: its session ids and working directory spellings.
#[derive(Debug, Clone)]
pub struct Scrub {
    pub session_ids: Vec<String>,
    /// Longest first.
    pub cwds: Vec<String>,
}

impl Scrub {
    pub fn new(session_ids: Vec<String>, cwd: &Path) -> Self {
        let mut cwds = vec![cwd.to_string_lossy().into_owned()];
        if let Ok(real) = cwd.canonicalize() {
            cwds.push(real.to_string_lossy().into_owned());
        }
        cwds.sort_by_key(|spelling| std::cmp::Reverse(spelling.len()));
        cwds.dedup();
        Self { session_ids, cwds }
    }

    fn text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for cwd in &self.cwds {
            out = out.replace(cwd.as_str(), "{{cwd}}");
        }
        for id in &self.session_ids {
            out = out.replace(id.as_str(), "{{sessionId}}");
        }
        scrub_uuids(&out)
    }

    /// Every string of `value` scrubbed. A message's `id` reads `{{sessionId}}` whatever it
    /// is: the reference draws every message id as a UUID (which its normalization turns into
    /// `{{sessionId}}`), ours name the assistant's and the tools' messages after the session,
    /// turn and step.
    pub fn value(&self, value: &Value) -> Value {
        match value {
            Value::String(text) => Value::String(self.text(text)),
            Value::Array(items) => {
                Value::Array(items.iter().map(|item| self.value(item)).collect())
            }
            Value::Object(fields) => {
                let message = fields.contains_key("role") && fields.contains_key("id");
                Value::Object(
                    fields
                        .iter()
                        .map(|(key, item)| match (message, key.as_str()) {
                            (true, "id") => (key.clone(), json!("{{sessionId}}")),
                            _ => (key.clone(), self.value(item)),
                        })
                        .collect(),
                )
            }
            other => other.clone(),
        }
    }
}

/// Replaces every UUID (8-4-4-4-12 hex digits) in `text` with `{{sessionId}}`.
pub fn scrub_uuids(text: &str) -> String {
    const SHAPE: [usize; 5] = [8, 4, 4, 4, 12];
    let bytes = text.as_bytes();
    let matches_at = |start: usize| -> Option<usize> {
        let mut at = start;
        for (index, len) in SHAPE.iter().enumerate() {
            if index > 0 {
                (bytes.get(at) == Some(&b'-')).then_some(())?;
                at += 1;
            }
            let group = bytes.get(at..at + len)?;
            group.iter().all(u8::is_ascii_hexdigit).then_some(())?;
            at += len;
        }
        Some(at)
    };
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        if text.is_char_boundary(at)
            && let Some(end) = matches_at(at)
        {
            out.push_str("{{sessionId}}");
            at = end;
            continue;
        }
        let next = (at + 1..=text.len())
            .find(|index| text.is_char_boundary(*index))
            .unwrap_or(text.len());
        out.push_str(&text[at..next]);
        at = next;
    }
    out
}

/// One event as the reference's `normalizeSessionLog` and `scrubRequestHeaders` leave it:
/// times zeroed (`seq` kept), a hook's duration zeroed, a request header's system prompt and
/// tools tokenized.
fn normalize_event(event: &Value) -> Value {
    let mut event = event.clone();
    if let Some(fields) = event.as_object_mut() {
        if fields.contains_key("time0") {
            fields.insert("time0".into(), json!(0));
            if let Some(dt) = fields
                .get_mut("data")
                .and_then(|data| data.get_mut("dt"))
                .and_then(Value::as_array_mut)
            {
                dt.iter_mut().for_each(|gap| *gap = json!(0));
            }
        } else if fields.contains_key("time") {
            fields.insert("time".into(), json!(0));
        }
    }
    if event["type"] == "hook/result" && event["data"].get("durationMs").is_some() {
        event["data"]["durationMs"] = json!(0);
    }
    if event["type"] == "request/header"
        && let Some(header) = event["data"]["header"].as_object_mut()
    {
        if header.contains_key("system") {
            header.insert("system".into(), json!("{{system}}"));
        }
        if header.contains_key("tools") {
            header.insert("tools".into(), json!("{{tools}}"));
        }
    }
    event
}

/// The notifications as the reference's suite normalizes them: each `{method, params}`, the
/// embedded events normalized as session-log lines, every string scrubbed.
/// Each notification is a `{method, params}` value (see [`as_value`]).
pub fn normalize_notifications(notifications: &[Value], scrub: &Scrub) -> Vec<Value> {
    notifications
        .iter()
        .map(|notification| {
            let mut notification = notification.clone();
            if notification["method"] == "session.event" {
                notification["params"]["event"] = normalize_event(&notification["params"]["event"]);
            }
            scrub.value(&notification)
        })
        .collect()
}

/// A notification as a `{method, params}` value.
pub fn as_value(notification: &Notification) -> Value {
    json!({"method": notification.method, "params": notification.params})
}

/// What breaks the ordering the reference pins for subagents: a child's `subagent.started`
/// after its parent's `tool/call` (the parent's latest event) and before any event of the
/// child; its `subagent.finished` after the child's `idle` and before the parent's next event,
/// its `tool/result`.
pub fn ordering_problems(notifications: &[Value]) -> Vec<String> {
    let session_event = |n: &Value, session: &str| {
        n["method"] == "session.event" && n["params"]["sessionId"] == session
    };
    let mut problems = Vec::new();
    for (at, n) in notifications.iter().enumerate() {
        let (parent, child) = (
            n["params"]["parentSessionId"].as_str().unwrap_or_default(),
            n["params"]["childSessionId"].as_str().unwrap_or_default(),
        );
        let before = &notifications[..at];
        let after = &notifications[at + 1..];
        let parent_before = before.iter().rev().find(|n| session_event(n, parent));
        let parent_after = after.iter().find(|n| session_event(n, parent));
        match n["method"].as_str() {
            Some("subagent.started") => {
                if parent_before.map(|n| &n["params"]["event"]["type"]) != Some(&json!("tool/call"))
                {
                    problems.push(format!(
                        "{child}: started, but not right after the parent's tool/call"
                    ));
                }
                if before.iter().any(|n| session_event(n, child)) {
                    problems.push(format!(
                        "{child}: an event of the child came before subagent.started"
                    ));
                }
            }
            Some("subagent.finished") => {
                let idle = before.iter().any(|n| {
                    n["method"] == "session.status"
                        && n["params"]["sessionId"] == child
                        && n["params"]["status"] == "idle"
                });
                if !idle {
                    problems.push(format!("{child}: finished before the child was idle"));
                }
                if parent_after.map(|n| &n["params"]["event"]["type"])
                    != Some(&json!("tool/result"))
                {
                    problems.push(format!(
                        "{child}: the parent's next event is not its tool/result"
                    ));
                }
            }
            _ => {}
        }
    }
    problems
}

/// A file of JSON lines, read as values.
pub fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Where two lists of values first differ, for a person: the index and both values.
pub fn first_difference(ours: &[Value], expected: &[Value]) -> Option<String> {
    let at = (0..ours.len().max(expected.len())).find(|&i| ours.get(i) != expected.get(i))?;
    let show = |value: Option<&Value>| value.map_or("(none)".to_owned(), Value::to_string);
    Some(format!(
        "{} notifications, {} expected; first difference at {at}:\n  ours     {}\n  expected {}",
        ours.len(),
        expected.len(),
        show(ours.get(at)),
        show(expected.get(at))
    ))
}

/// A generous bound for one recorded run.
pub const RUN: Duration = Duration::from_secs(110);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_and_message_ids_are_scrubbed() {
        assert_eq!(
            scrub_uuids("a 3dd28f2f-9314-41a8-bf15-851be3652c1f b 3dd28f2f-9314"),
            "a {{sessionId}} b 3dd28f2f-9314"
        );
        let scrub = Scrub::new(vec!["s-1".into()], Path::new("/nowhere/w"));
        assert_eq!(
            scrub.value(&json!({"role": "user", "id": "s-1-t1-s1", "text": "in /nowhere/w/x s-1"})),
            json!({"role": "user", "id": "{{sessionId}}", "text": "in {{cwd}}/x {{sessionId}}"})
        );
    }
}
