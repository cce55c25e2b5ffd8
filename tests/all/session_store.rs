//! The `session` and `session-persistence-jsonl` plugins through the real host: what a plugin
//! appends reaches the disk in the reference's format, a crash is repaired on the next load,
//! and a session another process owns is refused.

use dsh_tests::{HostProcess, TestDir, WAIT, plugin_lib, run_host};

fn tree(action: &str, id: &str, compression: &str) -> String {
    format!(
        "- id: store\n  name: session-persistence-jsonl\n  config:\n    root: !home sessions\n    compression: {compression}\n- id: session\n  name: session\n- id: probe\n  name: session-probe\n  config:\n    action: {action}\n    id: {id}\n    cwd: /work/demo\n"
    )
}

fn libraries() {
    for name in ["session", "session_persistence_jsonl", "session_probe"] {
        plugin_lib(name);
    }
}

#[test]
fn appended_events_are_stored_in_the_reference_format() {
    libraries();
    for compression in ["zstd", "none"] {
        let dir = TestDir::new(&format!("store-write-{compression}"));
        let config = dir.write("tree.yml", &tree("write", "s-one", compression));
        let out = run_host(
            &dir.home(),
            &["check", "--config", config.to_str().unwrap()],
        );
        assert_eq!(out.code, Some(0), "{out:?}");
        assert!(
            out.stdout.contains("write s-one: 6 events flushed"),
            "{}",
            out.stdout
        );
        let file = if compression == "zstd" {
            "session.jsonl.zstd"
        } else {
            "session.jsonl"
        };
        let stored = dir.home().join("sessions/--work-demo--/s-one").join(file);
        assert!(stored.is_file(), "{} missing", stored.display());
        let check = run_host(&dir.home(), &["session", "check", stored.to_str().unwrap()]);
        assert_eq!(check.code, Some(0), "{check:?}");
        let show = run_host(&dir.home(), &["session", "show", "s-one", "--json"]);
        let value: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
        assert_eq!(value["summary"]["events"], 6, "{value}");
        assert_eq!(value["summary"]["turns"][0]["reason"]["kind"], "completed");
        assert_eq!(value["header"]["cwd"], "/work/demo");
        let derived = run_host(&dir.home(), &["session", "derive", "s-one"]);
        assert_eq!(derived.stdout.lines().count(), 2, "{derived:?}");
    }
}

#[test]
fn a_crash_mid_tool_is_closed_on_the_next_load() {
    libraries();
    let dir = TestDir::new("store-crash");
    let config = dir.write("tree.yml", &tree("crash", "s-crash", "zstd"));
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("crash s-crash: 5 events flushed", WAIT);
    // No shutdown: the process dies as a crash would.
    host.signal(libc::SIGKILL);
    host.wait_exit(WAIT);
    let before = run_host(&dir.home(), &["session", "check", "s-crash"]);
    assert_eq!(before.code, Some(0), "{before:?}");
    assert!(before.stdout.contains("repairable"), "{}", before.stdout);

    let config = dir.write("tree.yml", &tree("reopen", "s-crash", "zstd"));
    let out = run_host(
        &dir.home(),
        &["check", "--config", config.to_str().unwrap()],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let line = out
        .stdout
        .lines()
        .find(|line| line.starts_with("reopen s-crash"))
        .unwrap_or_default()
        .to_owned();
    assert!(
        line.ends_with("turn/start user/message step/start assistant/message tool/call tool/result step/end turn/end session/end-seed"),
        "{line}"
    );
    // The closers were written: the stored log is whole again.
    let after = run_host(&dir.home(), &["session", "check", "s-crash"]);
    assert_eq!(after.code, Some(0), "{after:?}");
    assert!(!after.stdout.contains("repairable"), "{}", after.stdout);
    let show = run_host(&dir.home(), &["session", "show", "s-crash", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(
        value["summary"]["turns"][0]["reason"]["kind"], "interrupted",
        "{value}"
    );
}

#[test]
fn a_session_owned_by_another_process_is_refused_and_taken_over_after_a_kill() {
    libraries();
    let dir = TestDir::new("store-lock");
    let config = dir.write("tree.yml", &tree("write", "s-lock", "zstd"));
    assert_eq!(
        run_host(
            &dir.home(),
            &["check", "--config", config.to_str().unwrap()]
        )
        .code,
        Some(0)
    );
    let hold = dir.write("hold.yml", &tree("hold", "s-lock", "zstd"));
    let mut owner = HostProcess::start(&dir.home(), &["--config", hold.to_str().unwrap()]);
    owner.wait_stdout("hold s-lock: 7 events", WAIT);
    let second = run_host(&dir.home(), &["check", "--config", hold.to_str().unwrap()]);
    let expected = format!(
        "hold s-lock refused: session `s-lock`: session is open in process {}",
        owner.pid()
    );
    assert!(second.stdout.contains(&expected), "{second:?}");
    // Reading is still allowed while another process owns the session.
    assert_eq!(
        run_host(&dir.home(), &["session", "check", "s-lock"]).code,
        Some(0)
    );
    owner.signal(libc::SIGKILL);
    owner.wait_exit(WAIT);
    let third = run_host(&dir.home(), &["check", "--config", hold.to_str().unwrap()]);
    assert!(third.stdout.contains("hold s-lock: 7 events"), "{third:?}");
}

#[test]
fn plugin_event_types_are_ignorable_unless_required() {
    libraries();
    let dir = TestDir::new("store-types");
    let config = dir.write("tree.yml", &tree("plugin-types", "s-types", "none"));
    let out = run_host(
        &dir.home(),
        &["check", "--config", config.to_str().unwrap()],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("unregistered type refused"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("probe/unregistered"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("plugin-types s-types: closed, live sessions: 0"),
        "{}",
        out.stdout
    );
    let stored = dir
        .home()
        .join("sessions/--work-demo--/s-types/session.jsonl");
    let text = std::fs::read_to_string(&stored).unwrap();
    let metric = text
        .lines()
        .find(|line| line.contains("probe/metric"))
        .unwrap();
    assert!(metric.contains("\"ignorable\":true"), "{metric}");
    let vital = text
        .lines()
        .find(|line| line.contains("probe/vital"))
        .unwrap();
    assert!(!vital.contains("ignorable"), "{vital}");
    // Without the plugin, the required type makes the log refuse to load, naming it; the
    // ignorable one alone would not.
    let check = run_host(&dir.home(), &["session", "check", stored.to_str().unwrap()]);
    assert_eq!(check.code, Some(1), "{check:?}");
    assert!(check.stdout.contains("probe/vital"), "{}", check.stdout);
    assert!(!check.stdout.contains("probe/metric"), "{}", check.stdout);
}

#[test]
fn a_fork_copies_a_closed_prefix_and_refuses_an_open_turn() {
    libraries();
    let dir = TestDir::new("store-fork");
    let config = dir.write("tree.yml", &tree("fork", "s-parent", "none"));
    let out = run_host(
        &dir.home(),
        &["check", "--config", config.to_str().unwrap()],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("fork inside an open turn refused"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "forked child: turn/start user/message step/start step/end turn/end session/end-seed"
        ),
        "{}",
        out.stdout
    );
    let show = run_host(&dir.home(), &["session", "show", "child", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&show.stdout).unwrap_or_default();
    assert_eq!(value["header"]["parentSession"], "s-parent", "{show:?}");
    assert_eq!(value["summary"]["events"], 6, "{show:?}");
}

#[test]
fn a_torn_tail_is_repaired_on_load_but_a_refused_log_is_left_untouched() {
    libraries();
    let dir = TestDir::new("store-torn");
    let write = dir.write("tree.yml", &tree("write", "s-torn", "none"));
    assert_eq!(
        run_host(&dir.home(), &["check", "--config", write.to_str().unwrap()]).code,
        Some(0)
    );
    let stored = dir
        .home()
        .join("sessions/--work-demo--/s-torn/session.jsonl");
    let whole = std::fs::read_to_string(&stored).unwrap();

    // An unknown required type, then a torn line: the load is refused, the file stays as it was.
    let refused = format!(
        "{whole}{{\"type\":\"plugin/mystery\",\"seq\":6,\"time\":1,\"data\":{{}}}}\n{{\"type\":\"turn/st"
    );
    std::fs::write(&stored, &refused).unwrap();
    let reopen = dir.write("reopen.yml", &tree("reopen", "s-torn", "none"));
    let out = run_host(
        &dir.home(),
        &["check", "--config", reopen.to_str().unwrap()],
    );
    assert!(out.stdout.contains("reopen s-torn refused"), "{out:?}");
    assert!(out.stdout.contains("plugin/mystery"), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&stored).unwrap(),
        refused,
        "a refused load wrote to the file"
    );

    // Only a torn line: the load repairs the file (and marks the seed's end).
    std::fs::write(&stored, format!("{whole}{{\"type\":\"turn/st")).unwrap();
    let out = run_host(
        &dir.home(),
        &["check", "--config", reopen.to_str().unwrap()],
    );
    assert!(out.stdout.contains("reopen s-torn: 7 events"), "{out:?}");
    let check = run_host(&dir.home(), &["session", "check", "s-torn"]);
    assert_eq!(check.code, Some(0), "{check:?}");
    assert!(!check.stdout.contains("repairable"), "{}", check.stdout);
    assert!(
        std::fs::read_to_string(&stored)
            .unwrap()
            .ends_with("\"data\":{}}\n"),
        "ends with the end-seed line"
    );
}
