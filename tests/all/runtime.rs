//! The seed's experiments and the runtime rules, through the real binary.

use dsh_tests::tree::check;
use dsh_tests::{HostProcess, TestDir, WAIT, plugin_lib, run_host};

const HELLO: &str = "- id: greeter\n  name: greeter\n  config:\n    greeting: Hello\n- id: consumer\n  name: consumer\n";
const SWAPPED: &str = "- id: consumer\n  name: consumer\n- id: greeter\n  name: greeter\n  config:\n    greeting: Hello\n";

/// A `--plugin-dir` that is the executable's own directory (searched anyway) is searched once:
/// its libraries are not reported as shadowed by themselves.
#[test]
fn a_plugin_dir_named_twice_shadows_nothing() {
    plugin_lib("greeter");
    plugin_lib("consumer");
    let dir = TestDir::new("dir-twice");
    let config = dir.write("tree.yml", HELLO);
    let own = dsh_tests::host_bin();
    let own = own.parent().unwrap().to_str().unwrap();
    let out = run_host(
        &dir.home(),
        &[
            "check",
            "--config",
            config.to_str().unwrap(),
            "--plugin-dir",
            own,
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(!out.stderr.contains("shadowed"), "{}", out.stderr);
}

#[test]
fn hello_prints_once_and_every_fiber_is_active() {
    plugin_lib("greeter");
    plugin_lib("consumer");
    let dir = TestDir::new("hello");
    let out = check(&dir, HELLO, &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stdout.matches("consumer says: Hello, world!").count(),
        1,
        "{out:?}"
    );
    let table = dsh_tests::squash(&out.stdout);
    assert!(table.contains("greeter greeter ACTIVE"), "{table}");
    assert!(table.contains("consumer consumer ACTIVE"), "{table}");
}

#[test]
fn swapped_row_order_gives_the_same_output() {
    let dir = TestDir::new("swap");
    let first = check(&dir, HELLO, &[]);
    let second = check(&dir, SWAPPED, &[]);
    assert_eq!(second.code, Some(0), "{second:?}");
    let line = |out: &dsh_tests::Output| {
        out.stdout
            .lines()
            .find(|line| line.starts_with("consumer says"))
            .map(str::to_owned)
    };
    assert_eq!(line(&first), line(&second));
    assert_eq!(
        line(&second).as_deref(),
        Some("consumer says: Hello, world!")
    );
}

#[test]
fn consumer_without_provider_is_pending_and_silent() {
    let dir = TestDir::new("pending");
    let out = check(&dir, "- id: consumer\n  name: consumer\n", &[]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(!out.stdout.contains("consumer says"), "{}", out.stdout);
    assert!(
        dsh_tests::squash(&out.stdout).contains("PENDING waiting for: service `greeter`"),
        "{}",
        out.stdout
    );
}

#[test]
fn second_provider_of_a_service_fails_naming_it() {
    plugin_lib("greeter_alt");
    let dir = TestDir::new("duplicate");
    let out = check(
        &dir,
        "- id: greeter\n  name: greeter\n- id: greeter2\n  name: greeter-alt\n- id: consumer\n  name: consumer\n",
        &[],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        dsh_tests::squash(&out.stdout)
            .contains("FAILED service `greeter` is already provided by row `greeter` (greeter)"),
        "{}",
        out.stdout
    );
    // The first provider keeps serving its consumer.
    assert!(
        out.stdout.contains("consumer says: Hello, world!"),
        "{}",
        out.stdout
    );
}

#[test]
fn disposers_start_in_reverse_order_and_run_concurrently() {
    plugin_lib("lifecycle_probe");
    let dir = TestDir::new("disposers");
    let config = dir.write(
        "tree.yml",
        "- id: disposers\n  name: lifecycle-probe/disposers\n",
    );
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("disposers registered", WAIT);
    assert_eq!(host.stop(), Some(0));
    let lines: Vec<String> = host
        .stdout()
        .into_iter()
        .filter(|line| line.len() <= 8)
        .collect();
    // C (registered last) starts first; B cannot finish before A started, so a sequential
    // unload would hang here instead of printing this order.
    assert_eq!(
        lines,
        ["C sync", "B start", "A start", "A done", "B done"],
        "{:?}",
        host.stdout()
    );
}

#[test]
fn dispose_is_recursive_over_child_plugins() {
    let dir = TestDir::new("tree");
    let config = dir.write(
        "tree.yml",
        "- id: tree\n  name: lifecycle-probe/tree\n  config:\n    depth: 2\n",
    );
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("applied level 0", WAIT);
    assert_eq!(host.stop(), Some(0));
    let disposed: Vec<String> = host
        .stdout()
        .into_iter()
        .filter(|line| line.starts_with("disposed level"))
        .collect();
    assert_eq!(
        disposed,
        ["disposed level 0", "disposed level 1", "disposed level 2"]
    );
}

#[test]
fn the_five_dispatch_modes() {
    let dir = TestDir::new("modes");
    let out = check(&dir, "- id: modes\n  name: lifecycle-probe/modes\n", &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    for expected in [
        "emit: a:x b:x",
        "bail: Some(42)",
        "parallel: 3 started, all done",
        "serial: first answer 7 (third called: false)",
        "waterfall: outer(inner(default))",
        "waterfall faults: outer(big7(default))",
        "waterfall faults: outer(caught: failed after fail)",
        "waterfall concurrent: outer(big7(one)) outer(big7(two))",
        // Thirty-nine listeners around the fortieth, which answers from the payload it kept.
        "waterfall deep: 739",
    ] {
        assert!(
            out.stdout.lines().any(|line| line == expected),
            "missing `{expected}` in:\n{}",
            out.stdout
        );
    }
    // An error from after `next` went outward to the listener that caught it, and is not logged as
    // a listener failure at every level it crossed.
    assert!(
        !out.stderr.contains("listener failed: failed after"),
        "{}",
        out.stderr
    );
    // The two listeners that failed before running `next` were skipped, and named in the log.
    for expected in [
        "listener failed: refused before next",
        "listener failed: panicked: panicked before next",
    ] {
        assert_eq!(
            out.stderr.matches(expected).count(),
            4,
            "`{expected}` once per dispatch in:\n{}",
            out.stderr
        );
    }
}

#[test]
fn heartbeat_ticks_until_sigint_then_cleans_up_and_exits_130() {
    plugin_lib("heartbeat");
    let dir = TestDir::new("heartbeat");
    let config = dir.write(
        "tree.yml",
        "- id: beat\n  name: heartbeat\n  config:\n    interval_ms: 20\n",
    );
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout_count("tick", 3, WAIT);
    host.signal(libc::SIGINT);
    assert_eq!(host.wait_exit(WAIT), Some(130));
    let stdout = host.stdout();
    let cleaned = stdout
        .iter()
        .position(|line| line == "heartbeat cleaned up")
        .expect("disposer ran");
    assert!(
        stdout[cleaned + 1..].iter().all(|line| line != "tick"),
        "ticked after dispose: {stdout:?}"
    );
}

#[test]
fn panics_in_apply_listener_and_disposer_are_contained() {
    let dir = TestDir::new("panics");
    let config = dir.write(
        "tree.yml",
        "- id: panic-apply\n  name: lifecycle-probe/panic-apply\n- id: panic-listener\n  name: lifecycle-probe/panic-listener\n- id: panic-dispose\n  name: lifecycle-probe/panic-dispose\n- id: greeter\n  name: greeter\n- id: consumer\n  name: consumer\n",
    );
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("consumer says: Hello, world!", WAIT);
    host.wait_stdout("second listener got ping", WAIT);
    host.wait_stderr("panicked: apply exploded on purpose", WAIT);
    // The panic hook (the host's, which a plugin sharing its standard library shares) logs
    // where the plugin panicked and why, on one line of the log (the standard hook's report
    // would put the message on a line of its own).
    let logged = host.wait_stderr("panicked at tests/probes/lifecycle-probe/src/", WAIT);
    assert!(
        (logged.starts_with("error:") || logged.contains(" ERROR "))
            && logged.ends_with(": apply exploded on purpose")
            // The host's hook: a plugin sharing its standard library installs none of its own.
            && !logged.contains("plugin panicked"),
        "{logged}"
    );
    host.wait_stderr(
        "listener failed: panicked: listener exploded on purpose",
        WAIT,
    );
    assert_eq!(host.stop(), Some(0));
    assert!(
        host.stdout()
            .iter()
            .any(|line| line == "other disposer ran"),
        "{:?}",
        host.stdout()
    );
    assert!(
        host.stderr()
            .iter()
            .any(|line| line.contains("disposer of row `panic-dispose`")
                && line.contains("disposer exploded on purpose")),
        "{:?}",
        host.stderr()
    );
}

#[test]
fn event_declared_with_another_mode_is_refused() {
    let dir = TestDir::new("mode-clash");
    let out = check(
        &dir,
        "- id: declarer\n  name: lifecycle-probe/ping-declarer\n- id: clash\n  name: lifecycle-probe/mode-clash\n",
        &[],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stdout
            .contains("event `probe/ping` is declared as emit"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("but used as waterfall"),
        "{}",
        out.stdout
    );
}

#[test]
fn event_registered_with_another_payload_type_is_refused() {
    let dir = TestDir::new("layout-clash");
    let out = check(
        &dir,
        "- id: declarer\n  name: lifecycle-probe/ping-declarer\n- id: clash\n  name: lifecycle-probe/layout-clash\n",
        &[],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    let table = dsh_tests::squash(&out.stdout);
    assert!(
        table.contains(
            "event `probe/ping`: payload type `u64` does not match the declared `RString`"
        ),
        "{table}"
    );
}

#[test]
fn a_disposer_that_never_finishes_is_named_after_the_grace_period() {
    let dir = TestDir::new("stuck");
    let config = dir.write(
        "tree.yml",
        "- id: stuck\n  name: lifecycle-probe/stuck-disposer\n- id: beat\n  name: heartbeat\n",
    );
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("stuck disposer registered", WAIT);
    let started = std::time::Instant::now();
    assert_eq!(host.stop(), Some(0));
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(5),
        "exited before the grace period"
    );
    let named = host
        .stderr()
        .iter()
        .any(|line| line.contains("row=stuck") && line.contains("did not finish its disposers"));
    assert!(named, "{:?}", host.stderr());
    // The other rows were disposed normally meanwhile.
    assert!(
        host.stdout()
            .iter()
            .any(|line| line == "heartbeat cleaned up"),
        "{:?}",
        host.stdout()
    );
}

#[test]
fn a_second_signal_exits_at_once() {
    let dir = TestDir::new("second-signal");
    let config = dir.write(
        "tree.yml",
        "- id: stuck\n  name: lifecycle-probe/stuck-disposer\n",
    );
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("stuck disposer registered", WAIT);
    host.signal(libc::SIGTERM);
    host.wait_stderr("shutting down", WAIT);
    let started = std::time::Instant::now();
    host.signal(libc::SIGINT);
    assert_eq!(host.wait_exit(WAIT), Some(130));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "waited for the grace period"
    );
}

#[test]
fn plugins_reach_the_network_through_the_host_http_service() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let server = std::thread::spawn(move || {
        // One request, then the thread ends; it gives up by itself after 30 s.
        let deadline = std::time::Instant::now() + WAIT;
        while std::time::Instant::now() < deadline {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    stream.set_nonblocking(false).unwrap();
                    let mut request = [0_u8; 4096];
                    let _ = stream.read(&mut request).unwrap();
                    stream
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 13\r\nconnection: close\r\n\r\nhello, plugin")
                        .unwrap();
                    return true;
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
        false
    });
    let dir = TestDir::new("http");
    let yaml = format!(
        "- id: http\n  name: dsh-host/http\n- id: get\n  name: lifecycle-probe/http-get\n  config:\n    url: http://127.0.0.1:{port}/x\n"
    );
    let out = check(&dir, &yaml, &[]);
    assert!(
        server.join().unwrap(),
        "the plugin never connected: {out:?}"
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout
            .lines()
            .any(|line| line == "http 200 hello, plugin"),
        "{}",
        out.stdout
    );
}

#[test]
fn plugins_run_processes_through_the_host_subprocess_service() {
    let dir = TestDir::new("subprocess");
    let out = check(
        &dir,
        "- id: subprocess\n  name: dsh-host/subprocess\n- id: run\n  name: lifecycle-probe/run\n  config:\n    program: sh\n    args: [-c, 'echo out; echo err >&2; exit 3']\n",
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.lines().any(|line| line == "run stdout: out"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.lines().any(|line| line == "run stderr: err"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("run exit code Some(3) signal None"),
        "{}",
        out.stdout
    );
}

#[test]
fn terminating_a_process_ends_its_whole_group() {
    let dir = TestDir::new("subprocess-group");
    let out = check(
        &dir,
        "- id: subprocess\n  name: dsh-host/subprocess\n- id: run\n  name: lifecycle-probe/run\n  config:\n    program: sh\n    args: [-c, 'sleep 30 & sleep 30']\n    terminate_after_ms: 300\n",
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("run exit code None signal Some(15)"),
        "{}",
        out.stdout
    );
    let pid: i32 = out
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("run pid "))
        .unwrap()
        .parse()
        .unwrap();
    // The background `sleep` was in the same group: nothing of the group is left running
    // (zombies waiting for a reaper do not count).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let living = living_members(pid);
        if living.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "group {pid} still has {living:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Pids of processes in group `pgid` that are not zombies, from /proc.
fn living_members(pgid: i32) -> Vec<i32> {
    let mut living = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the `(comm)` field: state, ppid, pgrp.
        let Some(rest) = stat.rsplit_once(") ").map(|(_, rest)| rest) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2).and_then(|group| group.parse::<i32>().ok()) == Some(pgid)
            && fields.first() != Some(&"Z")
        {
            living.push(pid);
        }
    }
    living
}
