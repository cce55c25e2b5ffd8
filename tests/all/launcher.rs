//! The sandbox row's launcher through the real host and real bubblewrap: confined commands
//! are started by one `dsh-sandbox-exec --serve`, a child of the host kept for the row (their
//! output, their exit and their enclave as before); a launcher that dies is replaced for the
//! next command, which runs; `launcher: false` starts no launcher.

use std::time::{Duration, Instant};

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::sdk::{MODEL, PROVIDER, RUN, start, stderr_of};
use dsh_tests::{TestDir, WAIT};
use serde_json::json;

/// The pids of the launchers the process `host` started (its children running `--serve`).
fn launchers_of(host: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let parent = stat
                .rsplit_once(')')
                .and_then(|(_, after)| after.split_whitespace().nth(1)?.parse::<u32>().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmdline.split(|byte| *byte == 0).collect();
            parent == Some(host)
                && args.iter().any(|arg| arg.ends_with(b"dsh-sandbox-exec"))
                && args.contains(&&b"--serve"[..])
        })
        .collect()
}

/// A turn calling `bash` with `command` once (call id `id`), then answering "done".
fn turn(id: &str, command: &str) -> Vec<Reply> {
    let arguments = json!({"command": command, "description": "try"}).to_string();
    vec![
        Reply::tool_calls(&[(id, "bash", &arguments)]),
        Reply::text("done"),
    ]
}

/// The sdk runtime against `server` with the sandbox row patched with `config` (YAML lines).
fn sandboxed(dir: &TestDir, server: &FakeDeepSeek, config: &str) -> dsh_client::Client {
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n- id: sandbox\n  config:\n    mode: workspace-write\n    network: false\n{config}",
            server.url()
        ),
    );
    let client = start(dir, &[], &[("DEEPSEEK_API_KEY", "sk-test")]);
    let work = dir.join("work");
    client
        .initialize(work.to_str().unwrap(), PROVIDER, MODEL, None, WAIT)
        .unwrap();
    client
}

/// The text of the tool result of the last request `server` received.
fn last_result(server: &FakeDeepSeek) -> String {
    server
        .last_tool_messages()
        .into_iter()
        .map(|(_, text)| text)
        .next_back()
        .unwrap_or_default()
}

#[test]
fn confined_commands_start_through_the_rows_launcher_and_a_dead_one_is_replaced() {
    dsh_tests::needs_bubblewrap!("the launcher fronts bubblewrap's enclaves");
    let dir = TestDir::new("launcher");
    let mut script = turn("call_a", "echo launched-$((6*7)); echo to-stderr >&2; pwd");
    script.extend(turn("call_b", "echo again-$((6*7))"));
    let server = FakeDeepSeek::start(script);
    let client = sandboxed(&dir, &server, "");
    let host = client.pid().expect("the runtime's pid");

    let first = client.run("s-1", "first", RUN).unwrap();
    assert_eq!(first.final_response, "done", "{}", stderr_of(&dir));
    let text = last_result(&server);
    assert!(text.contains("launched-42"), "{text}");
    assert!(text.contains("to-stderr"), "{text}");
    assert!(text.contains(dir.join("work").to_str().unwrap()), "{text}");
    let launchers = launchers_of(host);
    assert_eq!(
        launchers.len(),
        1,
        "one launcher for the row: {launchers:?}"
    );
    let old = launchers[0];

    // The launcher dies between two commands (as the memory cgroup's OOM killer might end it).
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &old.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(5);
    while launchers_of(host).contains(&old) {
        assert!(
            Instant::now() < deadline,
            "the killed launcher is still there"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    let second = client.run("s-1", "second", RUN).unwrap();
    assert_eq!(second.final_response, "done", "{}", stderr_of(&dir));
    let text = last_result(&server);
    assert!(text.contains("again-42"), "{text}");
    let replaced = launchers_of(host);
    assert_eq!(replaced.len(), 1, "{replaced:?}");
    assert_ne!(replaced[0], old, "the next command opened a new launcher");
    assert!(
        stderr_of(&dir).contains("launcher did not start a command"),
        "the dead launcher is reported: {}",
        stderr_of(&dir)
    );
    client.shutdown(WAIT).unwrap();
    let exit = client.wait(WAIT).unwrap();
    assert_eq!(exit.and_then(|status| status.code()), Some(0));
}

#[test]
fn without_the_launcher_no_launcher_runs_and_commands_still_do() {
    dsh_tests::needs_bubblewrap!("the launcher fronts bubblewrap's enclaves");
    let dir = TestDir::new("launcher-off");
    let server = FakeDeepSeek::start(turn("call_a", "echo alone-$((6*7))"));
    let client = sandboxed(&dir, &server, "    launcher: false\n");
    let host = client.pid().expect("the runtime's pid");
    let run = client.run("s-1", "go", RUN).unwrap();
    assert_eq!(run.final_response, "done", "{}", stderr_of(&dir));
    assert!(last_result(&server).contains("alone-42"));
    assert_eq!(launchers_of(host), Vec::<u32>::new());
    client.shutdown(WAIT).unwrap();
    client.wait(WAIT).unwrap();
}
