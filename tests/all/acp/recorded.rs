//! The reference's recorded ACP cases (`acp/snapshots/`), driven through the real
//! `dsh-host --profile acp` in automation mode as the reference's snapshot harness drives its
//! agent: a fresh working directory holding the case's workspace (also the process's
//! directory, whose `hooks.json` and `codex-hooks.json` the hook rows read), a keyless replay
//! of its logs, its environment overlay from the SCENARIOS table, the steps of its
//! `input.json` and its scripted permission answers. Each must reproduce its
//! `stdout.expected.jsonl` (normalized as the reference normalizes it) and, where it has a model
//! turn, its durable session logs (parent and children: the same durable events in order, the
//! same calls and results, the same turn endings). Cases that need what we do not have are
//! skipped, naming it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_tests::acp::{
    AcpClient, Volatile, harvest, normalize_stdout, stored_children, wait_stored,
};
use dsh_tests::events::{calls_and_results, durable_types};
use dsh_tests::recorded::hook_workspace;
use dsh_tests::sessions::{PLAIN_STORE, read_log};
use dsh_tests::skills::recorded_skills;
use dsh_tests::{TestDir, WAIT};
use serde_json::{Value, json};

/// Cases that need a feature we do not have, and which.
const SKIPPED: &[(&str, &str)] = &[
    (
        "advanced-toolchain",
        "Code Mode and the Cordis package tools",
    ),
    (
        "cordis-inspect-jsdoc",
        "Code Mode and the Cordis package tools",
    ),
    ("code-mode-turn", "Code Mode"),
    ("code-mode-read-image", "Code Mode and images"),
    ("code-mode-workspace-context", "Code Mode"),
    ("both-mode-turn", "Code Mode"),
    ("read-image", "images (read_image and an attachment store)"),
    (
        "read-image-dimension",
        "images (read_image and an attachment store)",
    ),
    (
        "read-image-text-route",
        "images (read_image and an attachment store)",
    ),
    (
        "inline-image-prompt",
        "images in prompts (an attachment store)",
    ),
    ("lsp-definition", "LSP"),
    ("pwsh-tool-turn", "pwsh"),
    ("persistent-pwsh-tool-turn", "pwsh"),
    ("pty-tools", "PTY tools"),
    ("web-fetch", "web fetch"),
    ("workflow-run", "workflows"),
    (
        "partial-landlock-child-failure",
        "the reference's test-only partial-Landlock sandbox provider",
    ),
    (
        "missing-sandbox-runner",
        "the reference's test-only sandbox provider with a missing runner",
    ),
    (
        "subagent-published-run-failure",
        "a failure injected into the reference's snapshot publisher",
    ),
    (
        "agent-instructions",
        "the reference's agent-instructions plugin (ours reaches the model as system-prompt snapshots)",
    ),
    (
        "session-query-spill",
        "the session query tool (session_query)",
    ),
    (
        "background-job-admission",
        "the reference's background-task admission overlay",
    ),
    (
        "product-subagent-codex",
        "its header-only overlay of the product subagents (compared by tool schemas, which we do not pin)",
    ),
    (
        "product-subagent-both",
        "its header-only overlay of the product subagents (compared by tool schemas, which we do not pin)",
    ),
    (
        "product-subagent-result-diagnostic",
        "the reference's product-subagent diagnostic fixture",
    ),
    (
        "repeat-tool-reminder",
        "the repeat-tool reminder plugin (its reminders are queued messages we never send)",
    ),
    (
        "subagent-continuable",
        "a failure injected into the reference's snapshot store (its child's third turn fails there)",
    ),
];

/// Cases that run but differ from their recording in something another plugin owns: what,
/// and a text the difference's report holds (any other difference fails). Reported, not
/// counted as reproduced; one that starts reproducing is reported too.
const KNOWN_DIFFERENCES: &[(&str, &str, &str)] = &[
    (
        "cancel",
        "\"text\":\"partial\"",
        "llm-replay's `hang` yields no prefix where the reference's yields the text `partial` first, so no interrupted message is logged or sent",
    ),
    (
        "escalation-rejected",
        "was not approved (rejected)",
        "the sandbox words a refused escalation `running in danger-full-access was not approved (rejected)` where the reference says `the user rejected escalating this command`",
    ),
    (
        "skill-load",
        "Skill directory:",
        "the skill tool's resource preamble is worded differently (`Skill directory:` against `Base directory for this skill:`)",
    ),
    (
        "fs-glob-sampling",
        "Showing 4 of 8 paths",
        "the tool-fs row takes no `globMaxResults`/`sampleOverCapGlobResults`, which the recording's overlay sets (4, on)",
    ),
    (
        "subagent-report",
        "-inbox-",
        "the report tool names the accepted message by an inbox id (`<session>-inbox-N`) where the reference names a UUID",
    ),
];

/// Cases whose background children settle while the parent may still run: the order of turns
/// and splices is timing, so only calls, results and endings are compared (as `subagents`
/// compares them).
const TIMING_DEPENDENT: &[&str] = &[
    "subagent-continuable",
    "subagent-continuable-inheritance",
    "subagent-report",
    "subagent-list-agents",
];

/// Environment overlays (the SCENARIOS table's `env`).
const ENV: &[(&str, &str, &str)] = &[
    (
        "escalation-approved",
        "DSH_PERMISSION_MODE",
        "workspace-write",
    ),
    (
        "escalation-rejected",
        "DSH_PERMISSION_MODE",
        "workspace-write",
    ),
    (
        "fs-escalation-approved",
        "DSH_PERMISSION_MODE",
        "workspace-write",
    ),
    (
        "session-sandbox-root",
        "DSH_PERMISSION_MODE",
        "workspace-write",
    ),
];

/// Config overlays: the SCENARIOS table's `configPath` where it changes what we compare.
const PATCHES: &[(&str, &str)] = &[(
    "bash-spill",
    "- id: spill\n  config:\n    maxInlineBytes: 800\n",
)];

/// Programs a case's recorded commands run; without them the case is skipped, saying so.
const REQUIRES: &[(&str, &str)] = &[("bash-spill", "node")];

/// The outcome of the whole table.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) reproduced: Vec<String>,
    pub(super) skipped: Vec<(String, String)>,
    /// Known differences (case, what), as listed.
    pub(super) differ: Vec<(String, String)>,
    /// Listed as differing, but reproduced: the list is out of date.
    pub(super) now_reproduced: Vec<String>,
    pub(super) failed: Vec<String>,
}

pub(super) fn run_all() -> Tally {
    let root = dsh_tests::corpus_dir().join("acp/snapshots");
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|entry| entry.path().join("input.json").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut tally = Tally::default();
    for name in names {
        if let Some((_, reason)) = SKIPPED.iter().find(|(case, _)| *case == name) {
            tally.skipped.push((name, (*reason).to_owned()));
            continue;
        }
        if let Some((_, program)) = REQUIRES.iter().find(|(case, _)| *case == name)
            && !on_path(program)
        {
            tally.skipped.push((
                name,
                format!("its recorded command runs `{program}`, not installed"),
            ));
            continue;
        }
        let known = KNOWN_DIFFERENCES.iter().find(|(case, _, _)| *case == name);
        match (run_case(&root.join(&name), &name), known) {
            (Ok(()), None) => tally.reproduced.push(name),
            (Ok(()), Some(_)) => tally.now_reproduced.push(name),
            (Err(problem), Some((_, needle, what))) if problem.contains(needle) => {
                tally.differ.push((name, (*what).to_owned()));
            }
            (Err(problem), _) => tally.failed.push(problem),
        }
    }
    tally
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            // The shared fixtures are read-only; the run's copy is its owner's to change.
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&target).unwrap().permissions().mode();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode | 0o200))
                .unwrap();
        }
    }
}

/// The reference's `prepareFsSearchWorkspace`: eight files under `tree/` whose fixed
/// modification times pin the order a glob sorts them in.
fn prepare_fs_search(work: &Path) {
    let files = [
        "archive/a.ts",
        "archive/b.ts",
        "archive/c.ts",
        "docs/guide.md",
        "src/index.ts",
        "test/spec.ts",
        "top.txt",
        "notes.md",
    ];
    // 2000-01-01T00:00:00 local time in the reference; a fixed instant serves the same end.
    let base = std::time::UNIX_EPOCH + Duration::from_secs(946_684_800);
    for (index, relative) in files.iter().enumerate() {
        let path = work.join("tree").join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "fixture\n").unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        let when = base + Duration::from_millis(u64::try_from(index).unwrap() + 1);
        file.set_times(
            std::fs::FileTimes::new()
                .set_accessed(when)
                .set_modified(when),
        )
        .unwrap();
    }
}

/// A case the reference replays with a composition of its own: `session-title-after-turn`
/// answers the conversation from its log and the title model, on a route of its own, from its
/// override (paced, so the title lands after the turn). The route is registered with `llm`
/// by an adapter row that is never reached (the replay answers first). The rows, given the
/// replay folder.
fn own_replay_rows(name: &str, replay: &Path) -> Option<String> {
    if name != "session-title-after-turn" {
        return None;
    }
    let (main, title) = (replay.join("main"), replay.join("title"));
    for folder in [&main, &title] {
        std::fs::create_dir_all(folder).unwrap();
        std::fs::copy(replay.join("session.jsonl"), folder.join("session.jsonl")).unwrap();
    }
    std::fs::rename(
        replay.join("replay.override.json"),
        title.join("replay.override.json"),
    )
    .unwrap();
    let path = |path: PathBuf| serde_json::to_string(&path).unwrap();
    Some(format!(
        "- insert:\n\
         \x20   - id: llm-replay-main\n      name: llm-replay\n      config:\n        log: {}\n        provider: deepseek-official\n\
         \x20   - id: title-replay\n      group: true\n      isolate: {{llm_replay: true}}\n      config:\n\
         \x20       - id: llm-replay-title\n          name: llm-replay\n          config:\n            log: {}\n            provider: title-replay\n            paceMs: 10\n\
         \x20   - id: llm-title-route\n      name: llm-deepseek\n      config:\n        provider: title-replay\n        baseURL: http://127.0.0.1:9\n\
         - id: session-title\n  config:\n    llm:\n      enabled: true\n      route:\n        provider: title-replay\n        model: title-model\n",
        path(main.join("session.jsonl")),
        path(title.join("session.jsonl")),
    ))
}

/// The home patch of a case: automation mode on the recordings' route, a plain store, the
/// reference's hook files of the process's directory, and the case's own overlay.
fn patch(name: &str, work: &Path) -> String {
    let quoted = |file: &str| serde_json::to_string(&work.join(file)).unwrap();
    let mut patch = format!(
        "- id: acp\n  config:\n    mode: automation\n    model: deepseek-official/deepseek-v4-flash\n\
         {PLAIN_STORE}\
         - id: hooks-claude-code\n  config:\n    format: claude-code\n    files: [{}]\n\
         - id: hooks-codex\n  config:\n    format: codex\n    files: [{}]\n",
        quoted("hooks.json"),
        quoted("codex-hooks.json"),
    );
    if let Some((_, extra)) = PATCHES.iter().find(|(case, _)| *case == name) {
        patch.push_str(extra);
    }
    patch
}

/// One run of a case: its client, directories and the sessions it created.
struct Run<'a> {
    client: AcpClient,
    dir: &'a TestDir,
    work: &'a Path,
    sessions: Vec<String>,
}

impl Run<'_> {
    fn session(&self) -> Result<String, String> {
        self.sessions
            .last()
            .cloned()
            .ok_or_else(|| "a step needs a session before newSession".to_owned())
    }

    fn prompt_params(&self, text: &str) -> Result<Value, String> {
        Ok(json!({"sessionId": self.session()?, "prompt": [{"type": "text", "text": text}]}))
    }

    fn wait_file(&self, path: &str, timeout: Duration) -> Result<(), String> {
        // The reference's settlement marker is written by a test-only plugin of its own; the
        // same moment is the first child's closed turn in its stored log.
        if path == ".dsh-snapshot-subagent-settled" {
            return self.wait_child_turn_end(1, 1);
        }
        let file = self.work.join(path);
        let deadline = std::time::Instant::now() + timeout;
        while !file.exists() {
            if std::time::Instant::now() >= deadline {
                return Err(format!("timed out waiting for the file {path}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    fn wait_child_turn_end(&self, child: usize, minimum: u64) -> Result<(), String> {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            if let Some(id) = stored_children(&self.dir.home()).get(child - 1) {
                return wait_stored(
                    &self.dir.home(),
                    id,
                    &format!("a closed turn of child {child}"),
                    WAIT,
                    |events| {
                        events.iter().any(|e| {
                            e["type"] == "turn/end" && e["data"]["turn"].as_u64() >= Some(minimum)
                        })
                    },
                );
            }
            if std::time::Instant::now() >= deadline {
                return Err(format!("child {child} never stored a log"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn step(&mut self, step: &Value) -> Result<(), String> {
        let op = step["op"].as_str().unwrap_or_default();
        let long = Duration::from_secs(60);
        let text = step["text"].as_str().unwrap_or_default();
        match op {
            "initialize" => {
                self.client.call(
                    "initialize",
                    json!({"protocolVersion": 1, "clientCapabilities": {}}),
                );
            }
            "newSession" => {
                let answer = self
                    .client
                    .call("session/new", json!({"cwd": self.work, "mcpServers": []}));
                let id = answer["result"]["sessionId"]
                    .as_str()
                    .ok_or(format!("session/new failed: {answer}"))?;
                self.sessions.push(id.to_owned());
            }
            "newSessionExpectError" => {
                let answer = self.client.call(
                    "session/new",
                    json!({"cwd": self.work, "mcpServers": [], "additionalDirectories": step["additionalDirectories"]}),
                );
                if answer.get("error").is_none() {
                    return Err(format!("session/new was expected to fail: {answer}"));
                }
            }
            "prompt" | "promptExpectError" => {
                let id = self
                    .client
                    .request("session/prompt", self.prompt_params(text)?);
                let answer = self.client.response(id, long);
                if (op == "promptExpectError") != answer.get("error").is_some() {
                    return Err(format!("{op}: unexpected answer {answer}"));
                }
            }
            "promptAndWaitForAgentMessage" => {
                let id = self
                    .client
                    .request("session/prompt", self.prompt_params(text)?);
                self.client.response(id, long);
                let wanted = step["waitForText"].clone();
                self.client
                    .wait_frame("the awaited agent message", long, |frame| {
                        frame["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
                            && frame["params"]["update"]["content"]["text"] == wanted
                    });
            }
            "promptAndCancel" => {
                let id = self
                    .client
                    .request("session/prompt", self.prompt_params(text)?);
                match step["waitForFile"]["path"].as_str() {
                    Some(path) => self.wait_file(path, WAIT)?,
                    None => self.wait_turn(1, false)?,
                }
                self.client
                    .notify("session/cancel", json!({"sessionId": self.session()?}));
                self.client.response(id, long);
            }
            "cancel" => {
                if let Some(path) = step["waitForFile"]["path"].as_str() {
                    self.wait_file(path, WAIT)?;
                }
                self.client
                    .notify("session/cancel", json!({"sessionId": self.session()?}));
            }
            "waitForFile" => self.wait_file(text_of(step, "path"), WAIT)?,
            "waitForTurnStart" => {
                self.wait_turn(step["minimumTurn"].as_u64().unwrap_or(1), false)?;
            }
            "waitForTurnEnd" => self.wait_turn(0, true)?,
            "waitForSubagentTurnEnd" => {
                let child = step["child"].as_u64().unwrap_or(1);
                self.wait_child_turn_end(
                    usize::try_from(child).unwrap(),
                    step["minimumTurn"].as_u64().unwrap_or(1),
                )?;
            }
            "waitForTitleAfterTurnEnd" => {
                wait_stored(
                    &self.dir.home(),
                    &self.session()?,
                    "a title after the turn",
                    WAIT,
                    |events| {
                        let end = events.iter().rposition(|e| e["type"] == "turn/end");
                        end.is_some_and(|end| {
                            events[end..].iter().any(|e| e["type"] == "session/title")
                        })
                    },
                )?;
            }
            other => return Err(format!("step `{other}` is not one this runner knows")),
        }
        Ok(())
    }

    /// Waits for a stored `turn/start` of at least `minimum`, or (`closed`) for the latest
    /// turn boundary to be a `turn/end`.
    fn wait_turn(&self, minimum: u64, closed: bool) -> Result<(), String> {
        wait_stored(
            &self.dir.home(),
            &self.session()?,
            "a turn boundary",
            WAIT,
            |events| {
                let boundaries: Vec<&Value> = events
                    .iter()
                    .filter(|e| e["type"] == "turn/start" || e["type"] == "turn/end")
                    .collect();
                match closed {
                    true => boundaries.last().is_some_and(|e| e["type"] == "turn/end"),
                    false => boundaries.iter().any(|e| {
                        e["type"] == "turn/start" && e["data"]["turn"].as_u64() >= Some(minimum)
                    }),
                }
            },
        )
    }
}

fn text_of<'a>(step: &'a Value, key: &str) -> &'a str {
    step[key].as_str().unwrap_or_default()
}

/// Runs one case; `Err` says everything that differs.
fn run_case(folder: &Path, name: &str) -> Result<(), String> {
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("input.json")).unwrap()).unwrap();
    let dir = TestDir::new(&format!("acp-{name}"));
    dir.trust_projects();
    let work = dir.join("work");
    if folder.join("workspace").is_dir() {
        copy_tree(&folder.join("workspace"), &work);
    }
    std::fs::create_dir_all(&work).unwrap();
    hook_workspace(&format!("acp/snapshots/{name}"), &work);
    let (_, recorded) = read_log(&folder.join("session.jsonl"));
    if name == "skill-load" {
        recorded_skills(&recorded, &work);
    }
    if name == "fs-glob-sampling" {
        prepare_fs_search(&work);
    }
    let replay = dir.join("replay");
    std::fs::create_dir_all(&replay).unwrap();
    for entry in std::fs::read_dir(folder).unwrap().flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if file.starts_with("session") || file == "replay.override.json" {
            std::fs::copy(entry.path(), replay.join(&file)).unwrap();
        }
    }
    let own_rows = own_replay_rows(name, &replay);
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "{}{}",
            patch(name, &work),
            own_rows.as_deref().unwrap_or_default()
        ),
    );
    let mode = ENV
        .iter()
        .find(|(case, _, _)| *case == name)
        .map_or("danger-full-access", |(_, _, value)| value);
    let agents_home = dir.join("agents");
    let log = replay.join("session.jsonl");
    let mut args = vec!["--profile", "acp", "--"];
    if own_rows.is_none() {
        args.extend(["--replay", log.to_str().unwrap()]);
    }
    let client = AcpClient::start(
        &dir.home(),
        &work,
        &args,
        &[
            ("DEEPSEEK_API_KEY", ""),
            ("DSH_PERMISSION_MODE", mode),
            ("DSH_AGENTS_HOME", agents_home.to_str().unwrap()),
        ],
    );
    for answer in input["permissionAnswers"].as_array().into_iter().flatten() {
        let kind = answer["kind"].as_str().unwrap_or_default().to_owned();
        client.answers.lock().unwrap().push_back(kind);
    }
    let mut run = Run {
        client,
        dir: &dir,
        work: &work,
        sessions: Vec::new(),
    };
    for step in input["steps"].as_array().into_iter().flatten() {
        run.step(step).map_err(|problem| {
            format!(
                "{name}: {problem}\nstderr:\n{}",
                run.client.stderr().join("\n")
            )
        })?;
    }
    run.client.close();
    let code = run.client.wait_exit(Duration::from_secs(60));
    let mut problems = Vec::new();
    if code != Some(0) {
        problems.push(format!("the agent exited {code:?} after stdin closed"));
    }
    let volatile = Volatile::of(&work, run.sessions.clone());
    match normalize_stdout(&run.client.stdout(), &volatile) {
        Err(impure) => problems.push(impure),
        Ok(ours) => {
            let expected: Vec<Value> =
                std::fs::read_to_string(folder.join("stdout.expected.jsonl"))
                    .unwrap()
                    .lines()
                    .filter(|line| !line.trim().is_empty())
                    .map(|line| serde_json::from_str(line).unwrap())
                    .collect();
            if !same_transcript(&ours, &expected, TIMING_DEPENDENT.contains(&name)) {
                problems.push(format!(
                    "stdout differs:\n  ours:\n    {}\n  expected:\n    {}",
                    lines(&ours),
                    lines(&expected)
                ));
            }
        }
    }
    if recorded.iter().any(|event| event["type"] == "turn/start") {
        compare_logs(&mut problems, folder, &dir, &volatile, name);
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "{name}:\n{}\nstderr:\n{}",
            problems.join("\n"),
            run.client.stderr().join("\n")
        )),
    }
}

/// Whether two normalized transcripts agree; `timing`: the answers and the rest each in
/// order, but not interleaved alike (where the reference fenced a background child behind the
/// answer with a test-only plugin, and ours settles when it settles).
fn same_transcript(ours: &[Value], expected: &[Value], timing: bool) -> bool {
    if !timing {
        return ours == expected;
    }
    let split = |frames: &[Value]| -> (Vec<Value>, Vec<Value>) {
        frames
            .iter()
            .cloned()
            .partition(|frame| frame.get("result").is_some() || frame.get("error").is_some())
    };
    split(ours) == split(expected)
}

fn lines(frames: &[Value]) -> String {
    frames
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n    ")
}

/// The stored logs against the recorded ones: parent first, then children by creation.
fn compare_logs(
    problems: &mut Vec<String>,
    folder: &Path,
    dir: &TestDir,
    volatile: &Volatile,
    name: &str,
) {
    let recorded: Vec<Vec<Value>> = std::iter::once(folder.join("session.jsonl"))
        .chain(
            (1..)
                .map(|n| folder.join(format!("session.{n}.jsonl")))
                .take_while(|path| path.is_file()),
        )
        .map(|path| read_log(&path).1)
        .collect();
    let ours: Vec<Vec<Value>> = harvest(&dir.home())
        .into_iter()
        .map(|(_, events)| events)
        .collect();
    // A recording made outside the temp roots kept its real working directory (the
    // reference tokenizes only generated temp directories).
    let (header, _) = read_log(&folder.join("session.jsonl"));
    let recorded_volatile = Volatile::of(
        Path::new(header["cwd"].as_str().unwrap_or("{{cwd}}")),
        Vec::new(),
    );
    if ours.len() != recorded.len() {
        problems.push(format!(
            "{} logs stored, {} recorded",
            ours.len(),
            recorded.len()
        ));
    }
    let ordered = !TIMING_DEPENDENT.contains(&name);
    for (index, (ours, recorded)) in ours.iter().zip(&recorded).enumerate() {
        let what = match index {
            0 => "parent".to_owned(),
            n => format!("child {n}"),
        };
        if ordered && durable_types(ours) != durable_types(recorded) {
            problems.push(format!(
                "{what}: durable events differ:\n  ours     {:?}\n  recorded {:?}",
                durable_types(ours),
                durable_types(recorded)
            ));
        }
        let scrub = |lines: Vec<String>| -> Vec<String> {
            lines
                .iter()
                .map(|line| dsh_tests::acp::scrub_line(line, volatile))
                .collect()
        };
        let theirs: Vec<String> = calls_and_results(recorded)
            .iter()
            .map(|line| dsh_tests::acp::scrub_line(line, &recorded_volatile))
            .collect();
        let (mine, theirs) = (scrub(calls_and_results(ours)), scrub(theirs));
        if mine != theirs {
            problems.push(format!(
                "{what}: calls and results differ:\n  ours     {mine:?}\n  recorded {theirs:?}"
            ));
        }
        let ends = |events: &[Value]| -> Vec<Value> {
            events
                .iter()
                .filter(|event| event["type"] == "turn/end")
                .map(|event| event["data"]["reason"]["kind"].clone())
                .collect()
        };
        if ordered && ends(ours) != ends(recorded) {
            problems.push(format!(
                "{what}: turn endings differ: ours {:?}, recorded {:?}",
                ends(ours),
                ends(recorded)
            ));
        }
    }
}
