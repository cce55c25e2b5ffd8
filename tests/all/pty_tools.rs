//! The `minimal` preset's tools through the real host, headless, against the fake DeepSeek
//! server: `tool-pty`'s persistent `bash` (in place of `tool-bash`'s, whose row the patch
//! disables) and `tool-str-replace-editor`. The shell keeps its state between calls, runs
//! confined by the session's sandbox, comes back after it exited or timed out (each reported
//! in the reference's words); the editor's five commands work and a file is changed only
//! after it was viewed, and the page shows its changes as diffs made from the calls' arguments.
//! Also measured
//! (printed): a persistent-shell call against a fresh `bash -c` call of `tool-bash`.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::{against_patched, stream_json};
use serde_json::{Value, json};

mod lifetime;
mod terminals;

/// The patch: `tool-bash` off, the persistent shell (`pty`, YAML lines under its `config:`)
/// and the editor in, and the temp dirs not writable (so a write beside the workspace is one
/// the sandbox refuses).
fn rows(pty: &str) -> String {
    format!(
        "- id: tool-bash\n  disabled: true\n\
         - id: sandbox\n  config:\n    tempWritable: false\n\
         - insert:\n\
         \x20   - id: tool-pty\n      name: tool-pty\n      config:\n        tools: [bash]\n{pty}\
         \x20   - id: editor\n      name: tool-str-replace-editor\n"
    )
}

/// Runs `calls` (tool, arguments), one per step, in workspace-write, with the `tool-pty`
/// config lines `pty`; answers the tool results' texts in order and the run's events.
fn run(dir: &TestDir, calls: &[(&str, Value)], pty: &str) -> (Vec<String>, Vec<Value>) {
    let server = FakeDeepSeek::start(Reply::one_call_per_step(
        calls.iter().map(|(tool, arguments)| (*tool, arguments)),
        "done",
    ));
    let out = against_patched(
        &server,
        dir,
        &rows(pty),
        &["--output", "stream-json", "go"],
        &[("DSH_PERMISSION_MODE", "workspace-write")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, result) = stream_json(&out.stdout);
    assert_eq!(result["output"], "done", "{result}");
    (server.last_tool_texts(), events)
}

fn bash(command: &str) -> (&'static str, Value) {
    ("bash", json!({"command": command}))
}

fn editor(arguments: Value) -> (&'static str, Value) {
    ("str_replace_editor", arguments)
}

#[test]
fn the_shell_keeps_its_directory_and_variables_between_calls() {
    let dir = TestDir::new("pty-state");
    let (texts, _) = run(
        &dir,
        &[
            bash("cd /tmp && export X=1"),
            bash("pwd; echo $X"),
            bash("greet() { echo \"hi $1\"; }; false"),
            bash("greet there"),
            // A virtualenv's `activate`, in miniature: sourced, it changes PATH for later calls.
            bash(
                "cd \"$OLDPWD\" && mkdir -p venv/bin \
                 && printf 'export VIRTUAL_ENV=\"$PWD/venv\"\\nexport PATH=\"$VIRTUAL_ENV/bin:$PATH\"\\n' > venv/bin/activate \
                 && printf '#!/bin/sh\\necho from-venv\\n' > venv/bin/venv-tool && chmod +x venv/bin/venv-tool \
                 && . venv/bin/activate",
            ),
            bash("venv-tool; basename \"$VIRTUAL_ENV\""),
        ],
        "",
    );
    assert_eq!(texts[0], "(no output)", "{texts:?}");
    assert_eq!(texts[1], "/tmp\n1", "{texts:?}");
    assert_eq!(texts[2], "[exit code: 1]", "{texts:?}");
    assert_eq!(texts[3], "hi there", "{texts:?}");
    assert_eq!(texts[4], "(no output)", "{texts:?}");
    assert_eq!(texts[5], "from-venv\nvenv", "{texts:?}");
}

#[test]
fn the_shell_is_confined_by_the_sessions_sandbox() {
    let dir = TestDir::new("pty-confined");
    let outside = dir.join("outside.txt");
    let inside = dir.join("work").join("inside.txt");
    let (texts, _) = run(
        &dir,
        &[
            bash(&format!("echo no > {}", outside.display())),
            bash(&format!("echo yes > {} && cat {0}", inside.display())),
        ],
        "",
    );
    assert!(!outside.exists(), "{texts:?}");
    assert!(
        // Refused by bubblewrap's read-only mount, or by Landlock where bubblewrap is missing.
        (texts[0].contains("Read-only file system") || texts[0].contains("Permission denied"))
            && texts[0].ends_with("[exit code: 1]"),
        "{texts:?}"
    );
    assert_eq!(texts[1], "yes", "{texts:?}");
}

/// The line that ends a result whose shell is gone (the reference's words).
const RESET: &str = "The persistent bash shell was reset; the next bash call starts from the workspace with a fresh current directory and environment.";

#[test]
fn a_shell_that_exits_is_reported_in_the_references_words_and_replaced() {
    let dir = TestDir::new("pty-dies");
    let (texts, _) = run(
        &dir,
        &[
            bash("export KEPT=yes; echo $KEPT"),
            bash("echo bye; exit 3"),
            bash("echo ${KEPT:-gone}"),
            bash("echo ${KEPT:-still gone}"),
        ],
        "",
    );
    assert_eq!(texts[0], "yes", "{texts:?}");
    assert!(
        texts[1].starts_with("bye\n")
            && texts[1].ends_with(&format!("[shell exited: code 3]\n{RESET}")),
        "{texts:?}"
    );
    // The exit was reported with the call that ended the shell: the new one says nothing more.
    assert_eq!(texts[2], "gone", "{texts:?}");
    assert_eq!(texts[3], "still gone", "{texts:?}");
}

#[test]
fn a_command_past_the_timeout_is_stopped_with_its_shell() {
    let dir = TestDir::new("pty-timeout");
    let started = std::time::Instant::now();
    let (texts, _) = run(
        &dir,
        &[
            bash("export KEPT=yes"),
            bash("echo started; sleep 30"),
            bash("echo ${KEPT:-reset}"),
        ],
        "        timeoutMs: 1500\n",
    );
    assert!(
        texts[1].starts_with(
            "Your command timed out after 2 seconds or experienced an OOM error. Below is partial output:\nstarted"
        ) && texts[1].ends_with(RESET),
        "{texts:?}"
    );
    assert_eq!(texts[2], "reset", "{texts:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
}

#[test]
fn the_editor_views_creates_replaces_inserts_and_undoes() {
    let dir = TestDir::new("pty-editor");
    let work = dir.join("work");
    let file = work.join("notes.txt");
    let path = file.to_str().unwrap();
    let (texts, _) = run(
        &dir,
        &[
            editor(json!({"command": "create", "path": path, "file_text": "one\ntwo\nthree\n"})),
            editor(json!({"command": "view", "path": path, "view_range": [2, -1]})),
            editor(
                json!({"command": "str_replace", "path": path, "old_str": "two", "new_str": "TWO"}),
            ),
            editor(
                json!({"command": "insert", "path": path, "insert_line": 1, "new_str": "one and a half"}),
            ),
            editor(json!({"command": "undo_edit", "path": path})),
            editor(json!({"command": "view", "path": work.to_str().unwrap()})),
            editor(
                json!({"command": "str_replace", "path": path, "old_str": "missing", "new_str": "x"}),
            ),
        ],
        "",
    );
    assert_eq!(
        texts[0],
        format!("New file created successfully at: {path}"),
        "{texts:?}"
    );
    assert!(
        texts[1].contains("two") && texts[1].contains("three") && !texts[1].contains("one"),
        "{texts:?}"
    );
    assert_eq!(
        texts[2],
        format!("The file {path} has been edited successfully."),
        "{texts:?}"
    );
    assert_eq!(
        texts[3],
        format!("The file {path} has been edited successfully."),
        "{texts:?}"
    );
    assert!(texts[4].starts_with("Last edit to"), "{texts:?}");
    assert!(texts[5].contains(path), "{texts:?}");
    assert!(
        texts[6].starts_with("Error:")
            && texts[6].contains(&format!(
                "No replacement was performed, old_str `missing` did not appear verbatim in {path}."
            )),
        "{texts:?}"
    );
    // The undo took the insertion back; the replacement stays.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\nTWO\nthree\n");
}

#[test]
fn the_editor_changes_a_file_only_after_viewing_it() {
    let dir = TestDir::new("pty-editor-read-first");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let file = work.join("made-by-shell.txt");
    let path = file.to_str().unwrap();
    let (texts, _) = run(
        &dir,
        &[
            bash(&format!("printf 'alpha\\nbeta\\n' > {path}")),
            editor(
                json!({"command": "str_replace", "path": path, "old_str": "alpha", "new_str": "ALPHA"}),
            ),
            editor(json!({"command": "insert", "path": path, "insert_line": 0, "new_str": "top"})),
            editor(json!({"command": "create", "path": path, "file_text": "replaced\n"})),
            editor(json!({"command": "view", "path": path})),
            bash(&format!("echo gamma >> {path}")),
            editor(
                json!({"command": "str_replace", "path": path, "old_str": "alpha", "new_str": "ALPHA"}),
            ),
            editor(json!({"command": "view", "path": path})),
            editor(
                json!({"command": "str_replace", "path": path, "old_str": "alpha", "new_str": "ALPHA"}),
            ),
        ],
        "",
    );
    for (index, text) in texts[1..4].iter().enumerate() {
        assert!(text.starts_with("Error:"), "call {}: {texts:?}", index + 1);
    }
    assert!(texts[1].contains("requires reading"), "{texts:?}");
    // Changed since it was viewed: refused until viewed again.
    assert!(texts[6].starts_with("Error:"), "{texts:?}");
    assert_eq!(
        texts[8],
        format!("The file {path} has been edited successfully."),
        "{texts:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "ALPHA\nbeta\ngamma\n"
    );
}

/// Milliseconds from each `tool/call` to its `tool/result`, in order.
fn call_times(events: &[Value]) -> Vec<i64> {
    let time = |kind: &str| -> Vec<i64> {
        events
            .iter()
            .filter(|event| event["type"] == kind)
            .map(|event| event["time"].as_i64().unwrap_or_default())
            .collect()
    };
    time("tool/call")
        .iter()
        .zip(time("tool/result"))
        .map(|(call, result)| result - call)
        .collect()
}

fn median(mut values: Vec<i64>) -> i64 {
    values.sort_unstable();
    values[values.len() / 2]
}

#[test]
fn measure_a_persistent_shell_call_against_a_fresh_bash() {
    const CALLS: usize = 12;
    let command = "echo $((6 * 7))";
    let dir = TestDir::new("pty-measure");
    let calls: Vec<(&str, Value)> = (0..CALLS).map(|_| bash(command)).collect();
    let (texts, events) = run(&dir, &calls, "");
    assert!(texts.iter().all(|text| text == "42"), "{texts:?}");
    let persistent = call_times(&events);
    let dir = TestDir::new("pty-measure-fresh");
    let arguments = json!({"command": command, "description": "multiply"});
    let server = FakeDeepSeek::start(Reply::one_call_per_step(
        (0..CALLS).map(|_| ("bash", &arguments)),
        "done",
    ));
    let out = against_patched(
        &server,
        &dir,
        "",
        &["--output", "stream-json", "go"],
        &[("DSH_PERMISSION_MODE", "workspace-write")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, _) = stream_json(&out.stdout);
    let fresh = call_times(&events);
    let texts = server.last_tool_texts();
    assert!(texts.iter().all(|text| text.trim() == "42"), "{texts:?}");
    dsh_tests::figure("persistent_bash_first_call", persistent[0] as f64, "ms");
    dsh_tests::figure(
        "persistent_bash_call",
        median(persistent[1..].to_vec()) as f64,
        "ms",
    );
    dsh_tests::figure("fresh_bash_call", median(fresh.clone()) as f64, "ms");
    println!(
        "persistent bash: first call (shell start) {} ms, then median {} ms over {} calls; \
         fresh bash -c (tool-bash): median {} ms over {} calls",
        persistent[0],
        median(persistent[1..].to_vec()),
        CALLS - 1,
        median(fresh.clone()),
        fresh.len()
    );
}

#[test]
fn the_minimal_presets_bash_keeps_state_and_the_standard_ones_does_not() {
    // Each `bash` as its schema has it: the persistent one takes `command` alone.
    let call = |preset: &str, command: &str| -> Value {
        match preset {
            "minimal" => json!({"command": command}),
            _ => json!({"command": command, "description": "a step"}),
        }
    };
    let mut answers = Vec::new();
    for preset in ["minimal", "standard"] {
        let dir = TestDir::new(&format!("pty-preset-{preset}"));
        let calls = [call(preset, "cd /tmp"), call(preset, "pwd")];
        let server = FakeDeepSeek::start(Reply::one_call_per_step(
            calls.iter().map(|arguments| ("bash", arguments)),
            "done",
        ));
        let out = against_patched(
            &server,
            &dir,
            "",
            &["--preset", preset, "--output", "stream-json", "go"],
            &[("DSH_PERMISSION_MODE", "workspace-write")],
        );
        assert_eq!(out.code, Some(0), "{out:?}");
        let texts = server.last_tool_texts();
        answers.push((texts[1].trim().to_owned(), dir.join("work")));
    }
    // The preset's scoped `bash` shadows the global one for its sessions alone.
    assert_eq!(answers[0].0, "/tmp", "{answers:?}");
    assert_eq!(
        std::path::Path::new(&answers[1].0),
        answers[1].1.as_path(),
        "{answers:?}"
    );
}

#[test]
fn an_unknown_tool_family_in_the_rows_config_is_refused_naming_it() {
    let dir = TestDir::new("pty-bad-config");
    let out = dsh_tests::tree::check(
        &dir,
        "- id: subprocess\n  name: dsh-host/subprocess\n- id: session\n  name: session\n\
         - id: tools\n  name: tools\n- id: sandbox\n  name: sandbox\n\
         - id: pty\n  name: tool-pty\n  config:\n    tools: [bash, shells]\n",
        &[],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stdout
            .contains("invalid config: tool `shells` (expected bash or terminal)")
            && out.stdout.contains("$.tools[1]"),
        "{out:?}"
    );
}

#[test]
fn the_editors_changes_show_as_diffs_in_the_page() {
    // The editor takes absolute paths only; the file goes in a folder of its own under the temp
    // dir (writable under workspace-write), whose path the page's script is told.
    let target = TestDir::new("editor-notes");
    let path = target.join("notes.txt").to_string_lossy().into_owned();
    let calls = [
        editor(json!({"command": "create", "path": path, "file_text": "one\ntwo"})),
        editor(json!({"command": "view", "path": path})),
        editor(json!({"command": "str_replace", "path": path, "old_str": "two", "new_str": "TWO"})),
        editor(json!({"command": "insert", "path": path, "insert_line": 2, "new_str": "three"})),
    ];
    let replies = Reply::one_call_per_step(
        calls.iter().map(|(tool, arguments)| (*tool, arguments)),
        "done",
    );
    let Some((server, _)) = crate::browser::scenario_in(
        "editor",
        replies,
        "    - id: editor\n      name: tool-str-replace-editor\n",
        &[("DEEPSEEK_API_KEY", "sk-test")],
        &[("DSH_EDITOR_PATH", path.as_str())],
        &[],
    ) else {
        return;
    };
    let results = server.last_tool_texts();
    assert!(
        results[0].starts_with("New file created successfully at:")
            && results[2].contains("has been edited successfully")
            && results[3].contains("has been edited successfully"),
        "{results:?}"
    );
    let written = std::fs::read_to_string(&path).expect("the edited file");
    assert_eq!(written, "one\nTWO\nthree");
}
