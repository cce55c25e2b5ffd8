//! What the rows share: a headless run of the shipped profile against the fake model with the
//! fault's patch rows, read back as its session events, its end and its stored logs; and the
//! checks every row makes after its fault: each stored log sound by `dsh-host session check`,
//! and every event the run showed its client present in the store with the same seq and type.

use std::collections::HashMap;
use std::path::Path;

use dsh_tests::fake_deepseek::FakeDeepSeek;
use dsh_tests::sessions::{PLAIN_STORE, session_logs};
use dsh_tests::{Output, TestDir, run_host, run_host_with_env};
use serde_json::Value;

/// Retries 20 ms apart, one retry: the retried faults end in well under a second.
pub(crate) const QUICK_RETRY: &str =
    "- id: llm-retry\n  config:\n    baseDelayMs: 20\n    maxRetries: 1\n";

/// A finished headless run.
pub(crate) struct Run {
    pub(crate) dir: TestDir,
    pub(crate) out: Output,
    /// `(session, event)` of every `session_event` line, in order.
    pub(crate) shown: Vec<(String, Value)>,
    pub(crate) result: Option<Value>,
}

impl Run {
    /// The events shown, without their sessions.
    pub(crate) fn events(&self) -> Vec<Value> {
        self.shown.iter().map(|(_, event)| event.clone()).collect()
    }

    pub(crate) fn of_type(&self, kind: &str) -> Vec<Value> {
        self.shown
            .iter()
            .filter(|(_, event)| event["type"] == kind)
            .map(|(_, event)| event.clone())
            .collect()
    }

    /// The last `turn/end`'s reason kind and error code (`-` where there is none).
    pub(crate) fn end(&self) -> (String, String) {
        let ends = self.of_type("turn/end");
        let Some(end) = ends.last() else {
            return ("no turn/end".to_owned(), "-".to_owned());
        };
        let reason = &end["data"]["reason"];
        let code = reason["error"]["code"]
            .as_str()
            .or_else(|| reason["reason"].as_str())
            .unwrap_or("-");
        (
            reason["kind"].as_str().unwrap_or("?").to_owned(),
            code.to_owned(),
        )
    }

    /// Asserts the run ended with `code` and its turn with `kind` (and `error`, when given).
    pub(crate) fn ended(&self, code: i32, kind: &str, error: Option<&str>) -> String {
        let (seen_kind, seen_error) = self.end();
        assert!(
            self.out.code == Some(code)
                && seen_kind == kind
                && error.is_none_or(|error| error == seen_error),
            "exit {:?}, turn/end {seen_kind} {seen_error} (wanted exit {code}, {kind} {error:?}); stderr: {}",
            self.out.code,
            tail(&self.out.stderr)
        );
        format!("exit {code}, turn/end {seen_kind} {seen_error}")
    }

    /// [`sound`] of this run's home and shown events.
    pub(crate) fn sound(&self) -> String {
        sound(&self.dir.home(), &self.shown)
    }
}

/// The last lines of `text`, for a message.
pub(crate) fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(6)..].join(" ⏎ ")
}

/// The headless profile in a fresh home against `server`: `home_patch` in the home's patch
/// layer (after the plain store's rows), `rows` after the fake endpoint in the run's patch (see
/// `patched_args`), `args` before the prompt `task`, stream-json output.
pub(crate) fn headless(
    name: &str,
    server: &FakeDeepSeek,
    home_patch: &str,
    rows: &str,
    task: &str,
    envs: &[(&str, &str)],
) -> Run {
    run_in(fault_dir(name, home_patch), &server.url(), rows, task, envs)
}

/// A fault's scratch directory `fault-NAME`, its home's patch layer the plain store, quick
/// retries and `home_patch`.
pub(crate) fn fault_dir(name: &str, home_patch: &str) -> TestDir {
    let dir = TestDir::new(&format!("fault-{name}"));
    dir.write(
        "home/cordis.patch.yml",
        &format!("{PLAIN_STORE}{QUICK_RETRY}{home_patch}"),
    );
    dir
}

/// [`headless`] in a prepared `dir` (its home's patch layer written by the caller), the model
/// at `url`.
pub(crate) fn run_in(
    dir: TestDir,
    url: &str,
    rows: &str,
    task: &str,
    envs: &[(&str, &str)],
) -> Run {
    let args = args(&dir, url, rows, task);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut envs = envs.to_vec();
    envs.push(("DEEPSEEK_API_KEY", "sk-test"));
    let out = run_host_with_env(&dir.home(), &args, &envs);
    read_run(dir, out)
}

/// The arguments of a stream-json headless run of `task` in `dir/work` against the model at
/// `url`, with `rows` in its patch layer (more patch entries, or more lines of
/// `llm-deepseek`'s config at four spaces followed by entries).
pub(crate) fn args(dir: &TestDir, url: &str, rows: &str, task: &str) -> Vec<String> {
    let mut args = dsh_tests::headless::patched_args_at(url, dir, rows);
    args.extend(["--output", "stream-json", task].map(str::to_owned));
    args
}

/// A run's stdout read as shown events and its result line.
pub(crate) fn read_run(dir: TestDir, out: Output) -> Run {
    let mut shown = Vec::new();
    let mut result = None;
    for line in out.stdout.lines().filter(|line| line.starts_with('{')) {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match value["type"].as_str() {
            Some("session_event") => {
                let session = value["session_id"]
                    .as_str()
                    .or_else(|| value["sessionId"].as_str())
                    .unwrap_or_default()
                    .to_owned();
                shown.push((session, value["event"].clone()));
            }
            Some("result") => result = Some(value),
            _ => {}
        }
    }
    Run {
        dir,
        out,
        shown,
        result,
    }
}

/// Every stored log under `home/sessions` checked sound by `dsh-host session check`, and every
/// event in `shown` (what a client was shown, so acknowledged) stored in its session's log with
/// the same seq and type. Answers a summary; panics naming what is wrong.
pub(crate) fn sound(home: &Path, shown: &[(String, Value)]) -> String {
    let (summary, missing) = stored(home, shown);
    assert!(
        missing.is_empty(),
        "{} shown event(s) not stored, first: {}",
        missing.len(),
        missing[0]
    );
    summary
}

/// [`sound`] without the panic for shown events missing from the store: the summary and what
/// is missing (for a fault after which the run itself says its events were not all stored).
pub(crate) fn stored(home: &Path, shown: &[(String, Value)]) -> (String, Vec<String>) {
    let logs = session_logs(&home.join("sessions"));
    let mut stored: HashMap<String, Vec<Value>> = HashMap::new();
    for log in &logs {
        let check = run_host(home, &["session", "check", log.to_str().unwrap()]);
        assert_eq!(
            check.code,
            Some(0),
            "`session check {}` found the log unsound: {}",
            log.display(),
            tail(&check.stdout)
        );
        // Read as the host reads it: runs of chunks are packed into one row on disk.
        let read = dsh_session_jsonl::read_session(log)
            .unwrap_or_else(|error| panic!("{} does not read: {error}", log.display()));
        let events = read
            .events
            .iter()
            .map(|event| serde_json::to_value(event).unwrap())
            .collect();
        stored.insert(read.header.id.clone(), events);
    }
    let mut missing = Vec::new();
    for (session, event) in shown {
        let seq = &event["seq"];
        let kept = stored
            .get(session)
            .and_then(|events| events.iter().find(|stored| &stored["seq"] == seq));
        match kept {
            None => missing.push(format!("session `{session}` seq {seq} ({})", event["type"])),
            Some(kept) => assert_eq!(
                kept["type"], event["type"],
                "seq {seq}: shown {}, stored {}",
                event["type"], kept["type"]
            ),
        }
    }
    let total: usize = stored.values().map(Vec::len).sum();
    let summary = format!(
        "{} log(s) sound, {} of {} shown event(s) stored ({total} stored)",
        logs.len(),
        shown.len() - missing.len(),
        shown.len()
    );
    (summary, missing)
}

/// The events of `shown` a crash may not take back: everything before the running step
/// opened. The store writes behind (a 200 ms window) and is flushed at the durability
/// checkpoints; the first of the running step is its pre-step, before `step/start`. What came
/// after (the request's own checkpoint races with events other plugins add meanwhile, a title
/// say, and the answer's chunks stream after it) may die with the process.
pub(crate) fn checkpointed(shown: &[(String, Value)]) -> Vec<(String, Value)> {
    let step = shown
        .iter()
        .rposition(|(_, event)| event["type"] == "step/start")
        .unwrap_or(0);
    shown[..step].to_vec()
}
