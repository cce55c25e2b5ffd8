//! Faults of what the host is booted from: a broken YAML row, an unknown field, a patch for a
//! row that does not exist, a config value of the wrong type, a missing and a truncated plugin
//! library, a plugin that panics, and a bad environment (an `!env` tag whose variable is
//! unset, a `.env` file that sets what only the inherited environment may, a home that is a
//! file). Each is met by the shipped headless profile: a fault in what the run needs stops it
//! with an error naming the file, row, field or variable; a fault in a row the run can do
//! without is named and the run goes on.

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::{TestDir, install_library, plugin_lib};

use super::kit::{Run, fault_dir, headless, run_in, tail};
use super::{Fault, Seen};

pub(crate) fn faults() -> Vec<Fault> {
    vec![
        Fault {
            name: "config: a broken YAML row",
            expected: "refused: file:line:col, exit != 0, no request",
            run: broken_yaml,
        },
        Fault {
            name: "config: a row with an unknown field",
            expected: "refused naming the field and its position",
            run: unknown_field,
        },
        Fault {
            name: "config: a patch for a row that does not exist",
            expected: "warning naming it, the run completes",
            run: unknown_row,
        },
        Fault {
            name: "config: a config value of the wrong type",
            expected: "row fails naming the path; run goes on",
            run: wrong_type,
        },
        Fault {
            name: "config: a missing plugin library",
            expected: "row PENDING naming the file; run completes",
            run: missing_library,
        },
        Fault {
            name: "config: a truncated plugin library",
            expected: "row FAILED `truncated file`; run completes",
            run: truncated_library,
        },
        Fault {
            name: "config: a plugin that panics in apply",
            expected: "panic contained and named; run completes",
            run: panicking_plugin,
        },
        Fault {
            name: "config: a plugin that panics in a listener",
            expected: "panic contained and named; run completes",
            run: panicking_listener,
        },
        Fault {
            name: "seam: panic in agent/pre-step",
            expected: "contained and named; turn ends, log sound",
            run: || seam_panic("pre-step", "agent/pre-step", false),
        },
        Fault {
            name: "seam: panic in agent/request",
            expected: "contained and named; turn ends, log sound",
            run: || seam_panic("request", "agent/request", false),
        },
        Fault {
            name: "seam: panic in tools/pre-execute",
            expected: "contained and named; turn ends, log sound",
            run: || seam_panic("pre-execute", "tools/pre-execute", true),
        },
        Fault {
            name: "seam: panic in tools/post-execute",
            expected: "contained and named; turn ends, log sound",
            run: || seam_panic("post-execute", "tools/post-execute", true),
        },
        Fault {
            name: "seam: panic in a tools guard",
            expected: "contained and named; turn ends, log sound",
            run: || seam_panic("guard", "a tools guard", true),
        },
        Fault {
            name: "seam: panic in agent/turn-stopping",
            expected: "contained and named; turn ends, log sound",
            run: || seam_panic("turn-stopping", "agent/turn-stopping", false),
        },
        Fault {
            name: "seam: panic in a session/event listener",
            expected: "contained and named; turn ends, log sound",
            run: || seam_panic("session-event", "session/event", false),
        },
        Fault {
            name: "env: !env tag of an unset variable",
            expected: "refused naming the row and the variable",
            run: unset_env_tag,
        },
        Fault {
            name: "env: .env file sets DSH_HOME",
            expected: "boot stops naming the file and the variable",
            run: env_file_sets_protected,
        },
        Fault {
            name: "env: DSH_HOME is a regular file",
            expected: "a named error, exit != 0, no crash",
            run: home_is_a_file,
        },
    ]
}

/// A run that must stop before any request with stderr saying each of `says`.
fn refused(run: &Run, server: &FakeDeepSeek, says: &[&str]) -> Seen {
    assert!(
        matches!(run.out.code, Some(code) if code != 0),
        "exit {:?}: {}",
        run.out.code,
        tail(&run.out.stderr)
    );
    assert!(
        !run.out.stderr.contains("panicked"),
        "{}",
        tail(&run.out.stderr)
    );
    let line = said(run, says);
    assert_eq!(server.requests().len(), 0, "a request was made");
    Seen::Held(format!(
        "exit {:?}, `{}`",
        run.out.code,
        super::cell(line.trim(), 100)
    ))
}

/// The stderr line saying each of `says`.
fn said(run: &Run, says: &[&str]) -> String {
    run.out
        .stderr
        .lines()
        .find(|line| says.iter().all(|needle| line.contains(needle)))
        .unwrap_or_else(|| panic!("no line saying {says:?}: {}", tail(&run.out.stderr)))
        .to_owned()
}

/// A run that must complete anyway, with stderr saying each of `says`, its log sound.
fn went_on(run: &Run, says: &[&str]) -> Seen {
    let line = said(run, says);
    let ended = run.ended(0, "completed", None);
    Seen::Held(format!(
        "`{}`; {ended}; {}",
        super::cell(line.trim(), 80),
        run.sound()
    ))
}

fn answer() -> FakeDeepSeek {
    FakeDeepSeek::start(vec![Reply::text("FINE")])
}

fn broken_yaml() -> Seen {
    let server = answer();
    let run = headless(
        "broken-yaml",
        &server,
        "- id: [unclosed\n",
        "",
        "hello",
        &[],
    );
    refused(&run, &server, &["cordis.patch.yml:", "malformed YAML"])
}

fn unknown_field() -> Seen {
    let server = answer();
    let run = headless(
        "unknown-field",
        &server,
        "- id: agent-loop\n  confg: {}\n",
        "",
        "hello",
        &[],
    );
    refused(&run, &server, &["cordis.patch.yml:", "`confg`"])
}

fn unknown_row() -> Seen {
    let server = answer();
    let run = headless(
        "unknown-row",
        &server,
        "- id: no-such-row\n  config: {}\n",
        "",
        "hello",
        &[],
    );
    went_on(&run, &["no-such-row"])
}

fn wrong_type() -> Seen {
    let server = answer();
    let run = headless(
        "wrong-type",
        &server,
        "- id: session-title\n  config:\n    fallbackMaxWords: many\n",
        "",
        "hello",
        &[],
    );
    went_on(&run, &["session-title", "fallbackMaxWords"])
}

fn missing_library() -> Seen {
    let server = answer();
    let run = headless(
        "missing-lib",
        &server,
        "- insert:\n    - id: ghost\n      name: ghost-plugin\n",
        "",
        "hello",
        &[],
    );
    went_on(&run, &["ghost", "libghost_plugin.so not found"])
}

fn truncated_library() -> Seen {
    let dir = fault_dir("truncated-lib", "");
    // A row the run can do without, its library cut in half where the home's plugins are
    // looked up before the host's own.
    let whole = std::fs::read(plugin_lib("repeat_tool_reminder")).unwrap();
    let half = dir.write("half.so", "");
    std::fs::write(&half, &whole[..whole.len() / 2]).unwrap();
    install_library(
        &half,
        &dir.home().join("plugins/librepeat_tool_reminder.so"),
    );
    let server = answer();
    let run = run_in(dir, &server.url(), "", "hello", &[]);
    went_on(&run, &["repeat-tool-reminder", "truncated"])
}

fn panicking(name: &str, plugin: &str, says: &str) -> Seen {
    plugin_lib("lifecycle_probe");
    let server = answer();
    let run = headless(
        name,
        &server,
        &format!("- insert:\n    - id: {name}\n      name: lifecycle-probe/{plugin}\n"),
        "",
        "hello",
        &[],
    );
    went_on(&run, &[says])
}

fn panicking_plugin() -> Seen {
    panicking("panic-apply", "panic-apply", "apply exploded on purpose")
}

fn panicking_listener() -> Seen {
    panicking(
        "panic-listener",
        "panic-listener",
        "listener exploded on purpose",
    )
}

fn unset_env_tag() -> Seen {
    let server = answer();
    let run = headless(
        "env-tag",
        &server,
        "- id: agent-loop\n  config:\n    maxSteps: !env DSH_FAULT_SURELY_UNSET\n",
        "",
        "hello",
        &[],
    );
    refused(&run, &server, &["DSH_FAULT_SURELY_UNSET"])
}

fn env_file_sets_protected() -> Seen {
    let dir = fault_dir("env-file", "");
    dir.write("home/.env", "DSH_HOME=/elsewhere\n");
    let server = answer();
    let run = run_in(dir, &server.url(), "", "hello", &[]);
    refused(&run, &server, &[".env", "DSH_HOME"])
}

fn home_is_a_file() -> Seen {
    let dir = TestDir::new("fault-home-file");
    std::fs::write(dir.home(), "not a folder").unwrap();
    let server = answer();
    let run = run_in(dir, &server.url(), "", "hello", &[]);
    refused(&run, &server, &["home"])
}

/// `panic-probe` panicking in `seam` (its row inserted in the headless profile), the model
/// making one `bash` call first when `calls`: the panic is contained and named on stderr, the
/// run ends (completed, or with a named error) and its log is sound.
fn seam_panic(seam: &str, says: &str, calls: bool) -> Seen {
    plugin_lib("panic_probe");
    let mut script = Vec::new();
    if calls {
        script.push(Reply::tool_call(
            "call_1",
            "bash",
            serde_json::json!({"command": "echo ran", "description": "run"}),
        ));
    }
    script.push(Reply::text("FINE"));
    let server = FakeDeepSeek::start(script);
    let run = headless(
        &format!("seam-{seam}"),
        &server,
        &format!(
            "- insert:\n    - id: panicky\n      name: panic-probe\n      config:\n        seam: {seam}\n"
        ),
        "",
        "hello",
        &[],
    );
    let line = said(&run, &[&format!("panic-probe exploded in {says}")]);
    if run
        .out
        .stderr
        .contains("Attempted to panic across the ffi boundary")
    {
        // What is on disk still checks sound (the open turn is what a load repairs), and
        // holds everything before the last durability checkpoint.
        let (stored, lost) = super::kit::stored(&run.dir.home(), &run.shown);
        super::kit::sound(&run.dir.home(), &super::kit::checkpointed(&run.shown));
        return Seen::Known(format!(
            "the panic crossed the plugin boundary uncaught and aborted the host (exit {:?}, \
             no turn/end); checkpointed events stored, {stored} ({} of the running step lost)",
            run.out.code,
            lost.len()
        ));
    }
    let (kind, code) = run.end();
    assert!(
        matches!(run.out.code, Some(0..=4)),
        "exit {:?} (a crash?): {}",
        run.out.code,
        tail(&run.out.stderr)
    );
    assert!(
        kind != "no turn/end",
        "the turn never ended: {}",
        tail(&run.out.stderr)
    );
    Seen::Held(format!(
        "`{}`; exit {:?}, turn/end {kind} {code}; {}",
        super::cell(line.trim(), 60),
        run.out.code,
        run.sound()
    ))
}
