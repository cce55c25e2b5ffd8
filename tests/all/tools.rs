//! The tool registry and its pipeline through the real host: `tools`, `tool-bash` and the
//! host's subprocess service, driven by `tools-probe`, which logs a turn around one step of
//! calls and prints the report and every logged event.

use std::path::Path;

use dsh_tests::events::of_type;
use dsh_tests::tree::yaml_string;
use dsh_tests::{HostProcess, TestDir, WAIT, plugin_lib};
use serde_json::Value;

/// What one probe run printed.
struct Run {
    schemas: Value,
    report: Value,
    events: Vec<Value>,
}

impl Run {
    fn results(&self) -> Vec<&Value> {
        of_type(&self.events, "tool/result")
    }

    /// The model-facing text of the result of `call_id`, and whether it is an error.
    fn result_text(&self, call_id: &str) -> (String, bool) {
        let event = self
            .results()
            .into_iter()
            .find(|event| event["data"]["message"]["content"][0]["toolCallId"] == call_id)
            .unwrap_or_else(|| panic!("no result for {call_id}: {:?}", self.events));
        let block = &event["data"]["message"]["content"][0];
        let text = block["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|part| part["text"].as_str().unwrap_or_default())
            .collect::<String>();
        (text, block["isError"] == true)
    }

    fn code(&self, call_id: &str) -> Option<String> {
        self.results()
            .into_iter()
            .find(|event| event["data"]["message"]["content"][0]["toolCallId"] == call_id)
            .and_then(|event| event["data"]["error"]["code"].as_str().map(str::to_owned))
    }
}

/// Runs the probe with `calls` (`(id, name, raw arguments)`) and `extra` probe config lines.
fn probe(dir: &TestDir, calls: &[(&str, &str, &str)], extra: &str) -> Run {
    probe_with_tools(dir, calls, extra, "{}")
}

/// [`probe`] with the `tools` row's config (a YAML flow mapping).
fn probe_with_tools(dir: &TestDir, calls: &[(&str, &str, &str)], extra: &str, tools: &str) -> Run {
    for lib in [
        "tools",
        "tool_bash",
        "tool_fs",
        "tools_probe",
        "session",
        "sandbox",
        "jobs",
    ] {
        plugin_lib(lib);
    }
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut yaml = format!(
        "- id: subprocess\n  name: dsh-host/subprocess\n- id: host-fs\n  name: dsh-host/fs\n- id: session\n  name: session\n- id: tools\n  name: tools\n  config: {tools}\n- id: sandbox\n  name: sandbox\n  config:\n    protected: [{}]\n- id: bash\n  name: tool-bash\n- id: jobs\n  name: jobs\n- id: fs\n  name: tool-fs\n- id: probe\n  name: tools-probe\n  config:\n    session: s1\n    cwd: {}\n    waitForTools: 10\n{extra}    calls:\n",
        // The test's own directory stays read-only (it lies under the writable /tmp); the
        // workspace inside it stays writable.
        yaml_string(dir.join("").to_str().unwrap()),
        yaml_string(work.to_str().unwrap())
    );
    for (id, name, arguments) in calls {
        yaml.push_str(&format!(
            "      - id: {id}\n        name: {name}\n        arguments: {}\n",
            yaml_string(arguments)
        ));
    }
    let config = dir.write("tree.yml", &yaml);
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("probe done", WAIT);
    let lines = host.stdout();
    assert_eq!(host.stop(), Some(0));
    let field = |prefix: &str| -> Value {
        let line = lines
            .iter()
            .find_map(|line| line.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line: {lines:?}"));
        serde_json::from_str(line).unwrap()
    };
    Run {
        schemas: field("schemas "),
        report: field("report "),
        events: lines
            .iter()
            .filter_map(|line| line.strip_prefix("event "))
            .map(|line| serde_json::from_str(line).unwrap())
            .collect(),
    }
}

fn bash(command: &str) -> String {
    serde_json::json!({"command": command, "description": "test command"}).to_string()
}

#[test]
fn bash_calls_run_and_every_outcome_is_logged_in_model_order() {
    let dir = TestDir::new("tools-bash");
    let ok = bash("echo hello");
    let failing = bash("echo out; echo err >&2; exit 3");
    let run = probe(
        &dir,
        &[
            ("c1", "bash", &ok),
            ("c2", "bash", &failing),
            ("c3", "nope", "{}"),
            ("c4", "bash", r#"{"command":"echo missing description"}"#),
        ],
        "",
    );
    let names: Vec<&str> = run
        .schemas
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "bash",
            "edit",
            "glob",
            "grep",
            "job_kill",
            "job_list",
            "job_output",
            "read",
            "todo_write",
            "write"
        ],
        "{}",
        run.schemas
    );
    assert_eq!(run.result_text("c1"), ("hello\n".to_owned(), false));
    assert_eq!(
        run.result_text("c2"),
        ("out\n[stderr]\nerr\n[exit code: 3]".to_owned(), false)
    );
    let (unknown, is_error) = run.result_text("c3");
    assert!(is_error && unknown.starts_with("Error: "), "{unknown}");
    assert_eq!(run.code("c3").as_deref(), Some("UNKNOWN_TOOL"));
    let (invalid, is_error) = run.result_text("c4");
    assert!(is_error && invalid.contains("description"), "{invalid}");
    assert_eq!(run.code("c4").as_deref(), Some("INVALID_ARGS"));
    // Each result cites its call's seq, and results follow the model's order.
    let kinds: Vec<&str> = run
        .events
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect();
    let calls: Vec<(u64, &str)> = run
        .events
        .iter()
        .filter(|event| event["type"] == "tool/call")
        .map(|event| {
            (
                event["seq"].as_u64().unwrap(),
                event["data"]["callId"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls.iter().map(|(_, id)| *id).collect::<Vec<_>>(),
        ["c1", "c2", "c3", "c4"],
        "{kinds:?}"
    );
    let results: Vec<&str> = run
        .results()
        .iter()
        .map(|event| {
            event["data"]["message"]["content"][0]["toolCallId"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(results, ["c1", "c2", "c3", "c4"]);
    for result in run.results() {
        let id = result["data"]["message"]["content"][0]["toolCallId"]
            .as_str()
            .unwrap();
        let call_seq = calls.iter().find(|(_, call)| *call == id).unwrap().0;
        assert_eq!(
            result["sourceEventSeqs"],
            serde_json::json!([call_seq]),
            "{result}"
        );
    }
    assert_eq!(
        run.report["results"].as_array().unwrap().len(),
        4,
        "{}",
        run.report
    );
    assert_eq!(*kinds.last().unwrap(), "turn/end");
}

fn stamps(path: &Path) -> (u128, u128) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut numbers = text.split_whitespace().map(|n| n.parse::<u128>().unwrap());
    (numbers.next().unwrap(), numbers.next().unwrap())
}

#[test]
fn parallel_safe_calls_of_one_step_overlap() {
    let dir = TestDir::new("tools-parallel");
    let a = bash("s=$(date +%s%N); sleep 0.5; echo $s $(date +%s%N) > a.txt");
    let b = bash("s=$(date +%s%N); sleep 0.5; echo $s $(date +%s%N) > b.txt");
    let run = probe(&dir, &[("a", "bash", &a), ("b", "bash", &b)], "");
    assert!(!run.result_text("a").1);
    let (a_start, a_end) = stamps(&dir.join("work/a.txt"));
    let (b_start, b_end) = stamps(&dir.join("work/b.txt"));
    assert!(
        a_start < b_end && b_start < a_end,
        "the two calls ran one after the other: a {a_start}..{a_end}, b {b_start}..{b_end}"
    );
}

#[test]
fn timeouts_guards_and_post_execute_blocks_become_error_results() {
    let dir = TestDir::new("tools-gates");
    let slow = serde_json::json!({"command": "sleep 5; echo never", "description": "slow", "timeoutMs": 300}).to_string();
    // Pipes closed at once, the process still running: the deadline covers its exit too.
    let quiet = serde_json::json!({"command": "sleep 5 > /dev/null 2>&1", "description": "quiet", "timeoutMs": 300}).to_string();
    let guarded = bash("echo forbidden-word");
    let run = probe(
        &dir,
        &[
            ("slow", "bash", &slow),
            ("quiet", "bash", &quiet),
            ("guarded", "bash", &guarded),
        ],
        "    guard: forbidden-word\n",
    );
    let (text, is_error) = run.result_text("slow");
    assert!(
        !is_error && text.ends_with("[timed out after 300ms]\n[killed by signal: SIGTERM]"),
        "{text}"
    );
    let (text, _) = run.result_text("quiet");
    assert!(text.contains("[timed out after 300ms]"), "{text}");
    let (text, is_error) = run.result_text("guarded");
    assert!(
        is_error && text.contains("the probe's guard refuses"),
        "{text}"
    );

    // The pipeline's one timeout policy caps every call, whatever its tool declares: a bash
    // call with no timeoutMs of its own ends with TOOL_TIMEOUT, its group killed.
    let dir = TestDir::new("tools-cap");
    let endless = bash("sleep 5; touch outlived");
    let run = probe_with_tools(
        &dir,
        &[("endless", "bash", &endless)],
        "",
        "{maxTimeoutMs: 400}",
    );
    let (text, is_error) = run.result_text("endless");
    assert!(is_error && text.contains("timed out after 400ms"), "{text}");
    std::thread::sleep(std::time::Duration::from_millis(5500));
    assert!(
        !dir.join("work/outlived").exists(),
        "the timed-out command kept running"
    );

    let dir = TestDir::new("tools-block");
    let run = probe(
        &dir,
        &[("b1", "bash", &bash("echo fine"))],
        "    block: bash\n",
    );
    assert_eq!(
        run.result_text("b1"),
        ("blocked by the probe".to_owned(), true)
    );
}

#[test]
fn a_cancelled_step_kills_the_running_group_and_skips_the_rest() {
    let dir = TestDir::new("tools-cancel");
    let long = bash("sleep 2; touch late.txt");
    let run = probe(
        &dir,
        &[("long", "bash", &long), ("next", "nope", "{}")],
        "    cancelAfterMs: 300\n",
    );
    let (text, is_error) = run.result_text("long");
    assert!(is_error, "{text}");
    assert_eq!(
        run.code("next").as_deref(),
        Some("ABORTED_BEFORE_DISPATCH"),
        "{:?}",
        run.events
    );
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert!(
        !dir.join("work/late.txt").exists(),
        "the process group outlived the cancel"
    );
}

#[test]
fn file_tools_read_before_edit_search_and_log_todos() {
    let dir = TestDir::new("tools-fs");
    dir.write("work/a.txt", "hello world\nsecond line\n");
    let edit = r#"{"file_path":"a.txt","old_string":"hello","new_string":"bye"}"#;
    let run = probe(
        &dir,
        &[
            ("e1", "edit", edit),
            ("r1", "read", r#"{"file_path":"a.txt"}"#),
            ("e2", "edit", edit),
            ("g1", "glob", r#"{"pattern":"*.txt"}"#),
            ("s1", "grep", r#"{"pattern":"bye"}"#),
            (
                "t1",
                "todo_write",
                r#"{"todos":[{"content":"ship it","status":"in_progress"}]}"#,
            ),
            (
                "w1",
                "write",
                r#"{"file_path":"../outside.txt","content":"x"}"#,
            ),
        ],
        "",
    );
    let (text, is_error) = run.result_text("e1");
    assert!(is_error, "{text}");
    assert_eq!(run.code("e1").as_deref(), Some("FS_NOT_OBSERVED"));
    let (text, is_error) = run.result_text("r1");
    assert!(
        !is_error && text.contains("hello world") && text.contains("second line"),
        "{text}"
    );
    assert!(!run.result_text("e2").1, "{:?}", run.result_text("e2"));
    assert_eq!(
        std::fs::read_to_string(dir.join("work/a.txt")).unwrap(),
        "bye world\nsecond line\n"
    );
    let (text, is_error) = run.result_text("g1");
    assert!(!is_error && text.contains("a.txt"), "{text}");
    let (text, is_error) = run.result_text("s1");
    assert!(!is_error && text.contains("bye world"), "{text}");
    assert!(!run.result_text("t1").1);
    let todo = run
        .events
        .iter()
        .find(|event| event["type"] == "todo/write")
        .unwrap_or_else(|| panic!("no todo/write: {:?}", run.events));
    assert_eq!(todo["data"]["todos"][0]["content"], "ship it");
    let (text, is_error) = run.result_text("w1");
    assert!(is_error, "{text}");
    assert!(!dir.join("outside.txt").exists());
}

fn schema_names(line: &str) -> Vec<String> {
    let list: Vec<Value> = serde_json::from_str(line.strip_prefix("schemas ").unwrap()).unwrap();
    list.iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Every registration undoes itself: a tool row edited in place re-registers what its new
/// config says (no duplicate refused), and the registry row itself remounted brings every tool
/// plugin back into the new registry.
#[test]
fn tool_registrations_follow_reloads_of_tool_rows_and_of_the_registry() {
    for lib in [
        "tools",
        "tool_bash",
        "tool_fs",
        "tools_probe",
        "session",
        "sandbox",
        "jobs",
    ] {
        plugin_lib(lib);
    }
    let dir = TestDir::new("tools-reload");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let tree = |tools: &str, fs: &str, session: &str, wanted: usize| {
        format!(
            "- id: subprocess\n  name: dsh-host/subprocess\n- id: host-fs\n  name: dsh-host/fs\n- id: session\n  name: session\n- id: tools\n  name: tools\n  config: {tools}\n- id: sandbox\n  name: sandbox\n- id: bash\n  name: tool-bash\n- id: jobs\n  name: jobs\n- id: fs\n  name: tool-fs\n  config: {fs}\n- id: probe\n  name: tools-probe\n  config:\n    session: {session}\n    cwd: {}\n    waitForTools: {wanted}\n    calls:\n      - id: c1\n        name: bash\n        arguments: {}\n",
            yaml_string(work.to_str().unwrap()),
            yaml_string(&bash("echo hi"))
        )
    };
    let config = dir.write("tree.yml", &tree("{}", "{}", "s1", 10));
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("probe done", WAIT);
    let schemas = |host: &HostProcess| -> Vec<Vec<String>> {
        host.stdout()
            .iter()
            .filter(|line| line.starts_with("schemas "))
            .map(|line| schema_names(line))
            .collect()
    };
    assert_eq!(schemas(&host)[0].len(), 10, "{:?}", schemas(&host));

    dir.write("tree.yml", &tree("{}", "{disable: [glob, grep]}", "s1", 10));
    host.wait_stderr("config reloaded: 0 added, 0 removed, 1 changed", WAIT);
    dir.write("tree.yml", &tree("{}", "{disable: [glob, grep]}", "s2", 8));
    host.wait_stdout_count("probe done", 2, WAIT);
    assert_eq!(
        schemas(&host)[1],
        [
            "bash",
            "edit",
            "job_kill",
            "job_list",
            "job_output",
            "read",
            "todo_write",
            "write"
        ],
        "{:?}",
        host.stderr()
    );

    dir.write(
        "tree.yml",
        &tree(
            "{maxParallelToolCalls: 4}",
            "{disable: [glob, grep]}",
            "s3",
            8,
        ),
    );
    host.wait_stdout_count("probe done", 3, WAIT);
    assert_eq!(
        schemas(&host)[2],
        [
            "bash",
            "edit",
            "job_kill",
            "job_list",
            "job_output",
            "read",
            "todo_write",
            "write"
        ]
    );
    let refused: Vec<String> = host
        .stderr()
        .into_iter()
        .filter(|line| line.contains("already registered") || line.contains("plugin failed"))
        .collect();
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn a_second_tool_of_the_same_name_fails_loud_naming_both_rows() {
    for lib in ["tools", "tool_bash", "sandbox"] {
        plugin_lib(lib);
    }
    let dir = TestDir::new("tools-duplicate");
    let config = dir.write(
        "tree.yml",
        "- id: subprocess\n  name: dsh-host/subprocess\n- id: tools\n  name: tools\n- id: sandbox\n  name: sandbox\n- id: bash\n  name: tool-bash\n- id: bash-again\n  name: tool-bash\n",
    );
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    let line = host.wait_stderr("is already registered", WAIT);
    assert!(
        line.contains("\"bash\"") && line.contains("bash-again"),
        "{line}"
    );
    assert_eq!(host.stop(), Some(0));
}
