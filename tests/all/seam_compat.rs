//! A plugin built against an earlier tool seam (`libseam_compat.so`, see `xtask/src/fixtures/
//! seam.rs`: its `ToolDecl` has no `passthrough`, its `OutcomeSummary` no `code`, its
//! `PreDecision` no `ask`) loads into the current host from the plugins folder and works: its
//! tool is declared to the model and called through the guarded pipeline, and it reads what
//! the current host sends it, an unknown decision included, without breaking the call.

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::{against, stream_json};
use dsh_tests::{TestDir, fixture_lib, install_library};
use serde_json::{Value, json};

/// A home with the fixture installed and its row inserted (before `extra` rows, so its
/// listeners wrap theirs); answers the record file's path.
fn home_with_fixture(dir: &TestDir, extra: &str) -> std::path::PathBuf {
    install_library(
        &fixture_lib("seam_compat"),
        &dir.home().join("plugins/libseam_compat.so"),
    );
    let record = dir.join("record.txt");
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "- insert:\n    - id: compat\n      name: seam-compat\n      config:\n        record: {}\n{extra}",
            record.display()
        ),
    );
    record
}

fn echo_call() -> Reply {
    let arguments = json!({"text": "from an older seam"}).to_string();
    Reply::tool_calls(&[("call_1", "compat_echo", &arguments)])
}

fn tool_result(events: &[Value]) -> &Value {
    events
        .iter()
        .find(|event| event["type"] == "tool/result")
        .map(|event| &event["data"])
        .unwrap_or_else(|| panic!("no tool/result: {events:?}"))
}

#[test]
fn a_tool_built_against_the_previous_seam_is_declared_called_and_finalized() {
    let server = FakeDeepSeek::start(vec![echo_call(), Reply::text("echoed")]);
    let dir = TestDir::new("seam-compat");
    let record = home_with_fixture(&dir, "");
    let out = against(&server, &dir, &["--output", "stream-json", "echo it"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, result) = stream_json(&out.stdout);
    assert_eq!(result["output"], "echoed");
    // Its declaration, written without the later field, reached the model.
    let requests = server.requests();
    let tools = requests[0].body["tools"].to_string();
    assert!(tools.contains("compat_echo"), "{tools}");
    let data = tool_result(&events);
    assert_eq!(
        data["message"]["content"][0]["content"][0]["text"], "compat echo: from an older seam",
        "{data}"
    );
    assert_eq!(data["message"]["content"][0]["isError"], false);
    let read = std::fs::read_to_string(&record).unwrap();
    assert_eq!(
        read.lines().collect::<Vec<_>>(),
        [
            "pre-execute compat_echo: allow",
            "finalize read: error false"
        ],
        "{read}"
    );
}

/// A newer policy answers `ask`, a decision the older plugin's vocabulary does not name: it
/// reads it as unknown, passes it on, and the host still settles it as `ask` (no approval
/// channel in a headless run: denied, and the model is told why).
#[test]
fn a_decision_the_previous_seam_does_not_name_passes_through_it_unchanged() {
    dsh_tests::plugin_lib("hooks_probe");
    let server = FakeDeepSeek::start(vec![echo_call(), Reply::text("denied, fine")]);
    let dir = TestDir::new("seam-compat-ask");
    let record = home_with_fixture(
        &dir,
        "    - id: policy\n      name: hooks-probe\n      config:\n        preExecute:\n          kind: ask\n          reason: a newer policy asks\n",
    );
    let out = against(&server, &dir, &["--output", "stream-json", "echo it"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, _) = stream_json(&out.stdout);
    let read = std::fs::read_to_string(&record).unwrap();
    assert!(
        read.lines()
            .any(|line| line == "pre-execute compat_echo: unknown `ask`"),
        "{read}"
    );
    let data = tool_result(&events);
    let text = data["message"]["content"][0]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("approval"), "{data}");
    assert!(!text.contains("compat echo"), "the asked call ran: {data}");
}
