//! Bounds where input comes from outside: the status socket's request, and the size and nesting
//! of the YAML documents the loader and the plugins read, each met through the real host.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless;
use dsh_tests::{HostProcess, TestDir, WAIT, run_host};
use serde_json::json;

/// The status socket of the one host running under `home`, once it exists.
fn status_socket(home: &std::path::Path) -> std::path::PathBuf {
    let deadline = Instant::now() + WAIT;
    loop {
        let found = std::fs::read_dir(home.join("run"))
            .ok()
            .and_then(|entries| {
                entries
                    .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                    .find(|path| path.extension().is_some_and(|ext| ext == "sock"))
            });
        if let Some(socket) = found {
            return socket;
        }
        assert!(
            Instant::now() < deadline,
            "no status socket under {}",
            home.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Resident memory of process `pid`, in KiB.
fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn the_status_socket_refuses_an_endless_request_and_the_host_stays_small() {
    let dir = TestDir::new("status-bound");
    let config = dir.write("tree.yml", "- id: consumer\n  name: consumer\n");
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    let socket = status_socket(&dir.home());
    let before = rss_kib(host.pid());
    let mut stream = UnixStream::connect(&socket).unwrap();
    stream.set_write_timeout(Some(WAIT)).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    // A line without end, as the review sent (768 MiB there): the host must stop reading it.
    let chunk = vec![b'x'; 64 * 1024];
    let mut sent = 0usize;
    while sent < 256 << 20 {
        match stream.write(&chunk) {
            Ok(written) => sent += written,
            Err(_) => break,
        }
    }
    assert!(sent < 16 << 20, "the host read {sent} bytes of one request");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(
        answer.contains("error: request over 4096 bytes"),
        "{answer:?}"
    );
    let after = rss_kib(host.pid());
    assert!(after < before + 16 * 1024, "{before} KiB, then {after} KiB");
    // The host still answers a proper request.
    let out = run_host(&dir.home(), &["status"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains(&format!("dsh-host pid {}", host.pid())),
        "{out:?}"
    );
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn a_status_client_that_sends_nothing_is_let_go() {
    let dir = TestDir::new("status-silent");
    let config = dir.write("tree.yml", "- id: consumer\n  name: consumer\n");
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    let mut silent = UnixStream::connect(status_socket(&dir.home())).unwrap();
    silent.set_read_timeout(Some(WAIT)).unwrap();
    let mut answer = String::new();
    silent.read_to_string(&mut answer).unwrap();
    assert_eq!(answer, "error: no request line within 5 s\n");
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn a_deeply_nested_patch_is_refused_at_once_naming_the_file() {
    let dir = TestDir::new("deep-patch");
    dir.write("home/profiles/demo/profile.yml", "bundles: [examples]\n");
    let deep = dir.write(
        "cordis.patch.yml",
        &format!("- id: greeter\n  config: {}\n", "[".repeat(100_000)),
    );
    let out = run_host(
        &dir.home(),
        &[
            "check",
            "--profile",
            "demo",
            "--patch",
            deep.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "{}:2: nested deeper than 64 levels, the limit for a YAML document",
            deep.display()
        )),
        "{}",
        out.stderr
    );
    let large = dir.write("large.yml", &format!("# {}\n[]\n", "x".repeat(2 << 20)));
    let out = run_host(
        &dir.home(),
        &[
            "check",
            "--profile",
            "demo",
            "--patch",
            large.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("larger than the limit of 1048576 bytes"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_deeply_nested_settings_file_is_refused_and_the_host_runs_on() {
    let dir = TestDir::new("deep-settings");
    dir.write("home/profiles/demo/profile.yml", "bundles: [examples]\n");
    let mut host = HostProcess::start(&dir.home(), &["--profile", "demo"]);
    host.wait_stdout("consumer says: Hello, world!", WAIT);
    // The 240 KB of nested `[` of the review, written while the host runs.
    dir.write("home/settings.yaml", &"[".repeat(240_000));
    host.wait_stderr("nested deeper than 64 levels", WAIT);
    // A later good edit still applies: the host was not held by the bad one.
    dir.write("home/settings.yaml", "greeter: {greeting: Howdy}\n");
    host.wait_stdout("consumer says: Howdy, world!", WAIT);
    assert_eq!(host.stop(), Some(0));
}

/// The review's 240 KB project `.dsh/settings.yaml` of nested `[`: the call it would rule is
/// refused naming the file and the limit, the run ends normally, and once the file is fixed
/// the same call runs.
#[test]
fn a_deeply_nested_project_settings_file_refuses_calls_naming_it() {
    let dir = TestDir::new("deep-project-settings");
    dir.trust_projects();
    let work = dir.join("work");
    std::fs::create_dir_all(work.join(".dsh")).unwrap();
    std::fs::write(work.join("notes.txt"), "kept-notes").unwrap();
    let settings = work.join(".dsh/settings.yaml");
    std::fs::write(&settings, "[".repeat(240_000)).unwrap();
    let read = json!({"file_path": work.join("notes.txt")}).to_string();
    let script = || {
        vec![
            Reply::tool_calls(&[("call_0", "read", &read)]),
            Reply::text("done"),
        ]
    };
    let server = FakeDeepSeek::start(script());
    let out = headless::against(&server, &dir, &["read the notes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let result = &server.last_tool_texts()[0];
    assert!(
        result.contains(&format!(
            "{}:1: nested deeper than 64 levels",
            settings.display()
        )),
        "{result}"
    );
    std::fs::write(&settings, "permissions:\n  deny: [\"bash(rm *)\"]\n").unwrap();
    let server = FakeDeepSeek::start(script());
    let out = headless::against(&server, &dir, &["read the notes"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(server.last_tool_texts()[0].contains("kept-notes"));
}

/// A headless run against `server` whose `llm-deepseek` row has `config` (YAML lines at four
/// spaces) beside its endpoint, one quick retry allowed; stream-json output.
fn bounded_run(server: &FakeDeepSeek, dir: &TestDir, config: &str) -> dsh_tests::Output {
    headless::against_patched(
        server,
        dir,
        &format!("{config}- id: llm-retry\n  config:\n    baseDelayMs: 20\n    maxRetries: 1\n"),
        &["--output", "stream-json", "answer me"],
        &[],
    )
}

/// The failure codes of the run's failed attempts (error finishes and retries), in order, and
/// the code its turn ended with.
fn failures(stdout: &str) -> (Vec<String>, String) {
    let (events, result) = headless::stream_json(stdout);
    let retried: Vec<String> = events
        .iter()
        .filter(|event| event["type"] == "llm/retry")
        .map(|event| {
            event["data"]["failure"]["code"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    let end = events
        .iter()
        .rev()
        .find(|event| event["type"] == "turn/end")
        .unwrap_or_else(|| panic!("no turn/end: {stdout}"));
    let text = format!("{end} {result}");
    let code = ["RESPONSE_TOO_LARGE", "DEADLINE_EXCEEDED", "TIMEOUT"]
        .into_iter()
        .find(|code| text.contains(code))
        .unwrap_or_else(|| panic!("no bounded failure in {text}"))
        .to_owned();
    (retried, code)
}

/// The review's endless answer (64 KB chunks as fast as loopback carries them): cut at the
/// row's `maxResponseBytes` with a named failure that is not retried, and the run ends.
#[test]
fn an_endless_answer_is_cut_at_the_byte_cap_and_not_retried() {
    let server = FakeDeepSeek::start(vec![Reply::Endless {
        chunk_bytes: 64 * 1024,
        every: Duration::ZERO,
    }]);
    let dir = TestDir::new("endless-answer");
    let out = bounded_run(&server, &dir, "    maxResponseBytes: 2097152\n");
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let (retried, code) = failures(&out.stdout);
    assert_eq!(code, "RESPONSE_TOO_LARGE");
    assert!(retried.is_empty(), "{retried:?}");
    assert_eq!(server.requests().len(), 1);
}

/// A provider that sends only keep-alive comments: the idle timeout never fires (each
/// comment re-arms it), the progress timeout does, as a TIMEOUT the retry policy retries once
/// here; the run ends.
#[test]
fn keep_alive_comments_alone_end_at_the_progress_timeout() {
    let pings = || Reply::KeepAliveOnly {
        every: Duration::from_millis(20),
    };
    let server = FakeDeepSeek::start(vec![pings(), pings()]);
    let dir = TestDir::new("keep-alive-only");
    let out = bounded_run(
        &server,
        &dir,
        "    streamIdleTimeoutMs: 300000\n    streamProgressTimeoutMs: 400\n",
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let (retried, code) = failures(&out.stdout);
    assert_eq!(code, "TIMEOUT");
    assert_eq!(retried, ["TIMEOUT"]);
    assert!(
        out.stdout.contains("no progress for 400ms"),
        "{}",
        out.stdout
    );
    assert_eq!(server.requests().len(), 2);
}

/// An answer that keeps making progress, slowly, past the row's `maxResponseMs`: ended by the
/// overall deadline with a named failure that is not retried.
#[test]
fn a_slow_endless_answer_ends_at_the_overall_deadline() {
    let server = FakeDeepSeek::start(vec![Reply::Endless {
        chunk_bytes: 8,
        every: Duration::from_millis(20),
    }]);
    let dir = TestDir::new("deadline");
    let out = bounded_run(
        &server,
        &dir,
        "    maxResponseMs: 1000\n    streamProgressTimeoutMs: 600\n",
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let (retried, code) = failures(&out.stdout);
    assert_eq!(code, "DEADLINE_EXCEEDED");
    assert!(retried.is_empty(), "{retried:?}");
    assert_eq!(server.requests().len(), 1);
}
