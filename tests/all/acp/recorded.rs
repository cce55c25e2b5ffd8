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

mod compare;
mod setup;
mod steps;

use compare::{compare_logs, lines, same_transcript};
use setup::{
    copy_tree, own_replay_rows, patch, prepare_fs_search, prepare_images, prepare_instructions,
};
use steps::Run;

use std::path::Path;
use std::time::Duration;

use dsh_tests::TestDir;
use dsh_tests::acp::{AcpClient, Volatile, normalize_stdout};
use dsh_tests::recorded::hook_workspace;
use dsh_tests::sessions::read_log;
use dsh_tests::skills::recorded_skills;
use serde_json::Value;

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
    ("lsp-definition", "LSP"),
    ("pwsh-tool-turn", "pwsh"),
    ("persistent-pwsh-tool-turn", "pwsh"),
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
        "subagent-continuable",
        "a failure injected into the reference's snapshot store (its child's third turn fails there)",
    ),
];

/// Cases that run but differ from their recording in something another plugin owns: what,
/// and a text the difference's report holds (any other difference fails). Reported, not
/// counted as reproduced; one that starts reproducing is reported too.
const KNOWN_DIFFERENCES: &[(&str, &str, &str)] = &[];

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
    // The reference's Code Mode compositions (`tools.mode`), as our bundle takes it.
    ("code-mode-turn", "DSH_TOOLS_MODE", "code"),
    ("code-mode-workspace-context", "DSH_TOOLS_MODE", "code"),
    ("both-mode-turn", "DSH_TOOLS_MODE", "both"),
    ("code-mode-read-image", "DSH_TOOLS_MODE", "code"),
];

/// Config overlays: the SCENARIOS table's `configPath` where it changes what we compare.
const PATCHES: &[(&str, &str)] = &[
    (
        "bash-spill",
        "- id: spill\n  config:\n    maxInlineBytes: 800\n",
    ),
    (
        "fs-glob-sampling",
        "- id: tool-fs\n  config:\n    globMaxResults: 4\n    sampleOverCapGlobResults: true\n",
    ),
    // The recorded page is served on loopback (see `run_case`), which web_fetch refuses unless
    // the row lets it through.
    (
        "web-fetch",
        "- id: tool-web\n  config:\n    allowPrivate: [127.0.0.1]\n",
    ),
    // The six terminal tools of `tool-pty`, results cut as the reference's scenario cuts
    // them (its `maxResultBytes: 64`).
    (
        "pty-tools",
        "- insert:\n    - id: tool-pty\n      name: tool-pty\n      config:\n        tools: [terminal]\n        maxResultBytes: 64\n",
    ),
    ("read-image", VISION_CATALOG),
    ("read-image-dimension", VISION_CATALOG),
    ("inline-image-prompt", VISION_CATALOG),
    ("read-image-text-route", VISION_CATALOG),
    ("code-mode-read-image", VISION_CATALOG),
];

/// The reference's image scenarios' replay catalog: Flash and Pro text-only, its vision model
/// taking images.
const VISION_CATALOG: &str = "- id: llm-deepseek\n  config:\n    models:\n\
     \x20     - {id: deepseek-v4-flash, inputModalities: [text]}\n\
     \x20     - {id: deepseek-v4-pro, inputModalities: [text]}\n\
     \x20     - {id: deepseek-v4-flash-vision-exp, inputModalities: [text, image]}\n";

/// The model of a case's sessions where it is not the recordings' Flash route.
const MODELS: &[(&str, &str)] = &[
    (
        "read-image",
        "deepseek-official/deepseek-v4-flash-vision-exp",
    ),
    (
        "read-image-dimension",
        "deepseek-official/deepseek-v4-flash-vision-exp",
    ),
    (
        "inline-image-prompt",
        "deepseek-official/deepseek-v4-flash-vision-exp",
    ),
    (
        "code-mode-read-image",
        "deepseek-official/deepseek-v4-flash-vision-exp",
    ),
];

/// Programs a case's recorded commands run; without them the case is skipped, saying so.
const REQUIRES: &[(&str, &str)] = &[("bash-spill", "node"), ("code-mode-read-image", "node")];

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

/// The Code Mode sub-calls a case logged (`tool/code-dispatch-start` and `tool/code-dispatch`,
/// which the durable comparison leaves out) against the recorded ones, in order.
fn compare_code_dispatches(
    problems: &mut Vec<String>,
    recorded: &[Value],
    dir: &TestDir,
    volatile: &Volatile,
) {
    let dispatches = |events: &[Value]| -> Vec<String> {
        events
            .iter()
            .filter(|event| {
                matches!(
                    event["type"].as_str(),
                    Some("tool/code-dispatch-start" | "tool/code-dispatch")
                )
            })
            .map(|event| format!("{} {}", event["type"], event["data"]))
            .collect()
    };
    let theirs = dispatches(recorded);
    if theirs.is_empty() {
        return;
    }
    let ours: Vec<String> = dsh_tests::acp::harvest(&dir.home())
        .first()
        .map(|(_, events)| dispatches(events))
        .unwrap_or_default()
        .iter()
        .map(|line| dsh_tests::acp::scrub_line(line, volatile))
        .collect();
    if ours != theirs {
        problems.push(format!(
            "Code Mode sub-calls differ:\n  ours     {ours:?}\n  recorded {theirs:?}"
        ));
    }
}

/// The `code-mode-workspace-context` workspace as the reference's scenario declares it (the
/// shared corpus keeps only its task file): a root instruction, one under `nested` that a
/// read there brings in, and the `.git` root marker that ends the discovery at the workspace.
fn prepare_code_mode_instructions(work: &Path) {
    std::fs::create_dir_all(work.join(".git")).unwrap();
    std::fs::write(
        work.join("AGENTS.md"),
        "Workspace snapshot root instruction.\n",
    )
    .unwrap();
    std::fs::write(
        work.join("nested/AGENTS.md"),
        "When asked for the Code Mode workspace handshake, answer exactly `CODE_MODE_CONTEXT_OK` and nothing else.\n",
    )
    .unwrap();
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Runs one case; `Err` says everything that differs.
fn run_case(folder: &Path, name: &str) -> Result<(), String> {
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("input.json")).unwrap()).unwrap();
    let dir = TestDir::new(&format!("acp-{name}"));
    // The page the recorded web_fetch read, on the port its URL names.
    let _site = (name == "web-fetch").then(|| crate::web_tools::Fixture::on(43117));
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
    if name == "agent-instructions" {
        prepare_instructions(&work);
    }
    if name == "code-mode-workspace-context" {
        prepare_code_mode_instructions(&work);
    }
    prepare_images(name, &work);
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
    let overlay = |variable: &str, default: &'static str| {
        ENV.iter()
            .find(|(case, key, _)| *case == name && *key == variable)
            .map_or(default, |(_, _, value)| *value)
    };
    let mode = overlay("DSH_PERMISSION_MODE", "danger-full-access");
    let tools_mode = overlay("DSH_TOOLS_MODE", "native");
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
            ("DSH_TOOLS_MODE", tools_mode),
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
        compare_code_dispatches(&mut problems, &recorded, &dir, &volatile);
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
