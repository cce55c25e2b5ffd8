//! The command line: profiles and layers, app arguments, dump, status, signals.

use dsh_tests::{HostProcess, TestDir, WAIT, run_host};

#[test]
fn dump_config_names_the_layer_that_last_touched_each_row() {
    let dir = TestDir::new("dump");
    dir.write("home/profiles/demo/profile.yml", "bundles: [examples]\n");
    dir.write(
        "home/cordis.patch.yml",
        "- id: greeter\n  config:\n    greeting: !env [DSH_TEST_GREETING_UNSET, Hi]\n",
    );
    let extra = dir.write(
        "extra.yml",
        "- insert:\n    - id: beat\n      name: heartbeat\n",
    );
    let out = run_host(
        &dir.home(),
        &[
            "--profile",
            "demo",
            "--patch",
            extra.to_str().unwrap(),
            "--dump-config",
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let text = out.stdout;
    let before = |needle: &str| {
        text[..text.find(needle).unwrap_or(0)]
            .rsplit("# == ")
            .next()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("")
            .to_owned()
    };
    assert_eq!(before("- id: greeter"), "home patch", "{text}");
    assert_eq!(before("- id: consumer"), "bundle examples", "{text}");
    assert!(before("- id: beat").starts_with("--patch "), "{text}");
    assert!(
        text.contains("!env [DSH_TEST_GREETING_UNSET, Hi]"),
        "{text}"
    );
    assert!(text.contains("# = Hi"), "{text}");
    // Under its provenance, each plugin row says what its plugin declares about services.
    let consumer = &text[..text.find("- id: consumer").unwrap_or(0)];
    assert!(
        consumer.trim_end().ends_with("# services: needs greeter"),
        "{text}"
    );
}

#[test]
fn profile_layers_apply_in_order() {
    let dir = TestDir::new("layers");
    dir.write("home/profiles/demo/profile.yml", "bundles: [examples]\n");
    dir.write(
        "home/profiles/demo/cordis.patch.yml",
        "- id: greeter\n  config: {greeting: Profile}\n",
    );
    dir.write(
        "home/cordis.patch.yml",
        "- id: greeter\n  config: {greeting: Home}\n",
    );
    let out = run_host(&dir.home(), &["check", "--profile", "demo"]);
    assert!(
        out.stdout.contains("consumer says: Home, world!"),
        "{out:?}"
    );
    let patch = dir.write("last.yml", "- id: greeter\n  config: {greeting: Last}\n");
    let out = run_host(
        &dir.home(),
        &[
            "check",
            "--profile",
            "demo",
            "--patch",
            patch.to_str().unwrap(),
        ],
    );
    assert!(
        out.stdout.contains("consumer says: Last, world!"),
        "{out:?}"
    );
}

#[test]
fn app_args_reach_the_tree_unchanged_through_cmdline() {
    let dir = TestDir::new("cmdline");
    let config = dir.write(
        "tree.yml",
        "- id: echo\n  name: lifecycle-probe/cmdline-echo\n",
    );
    let mut host = HostProcess::start(
        &dir.home(),
        &[
            "--config",
            config.to_str().unwrap(),
            "fix the failing test",
            "--port",
            "3000",
            "--",
            "check",
        ],
    );
    let line = host.wait_stdout("app args:", WAIT);
    assert_eq!(
        line,
        "app args: [fix the failing test] [--port] [3000] [--] [check]"
    );
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn a_service_looked_up_without_a_declaration_is_refused_in_a_debug_build() {
    if !cfg!(debug_assertions) {
        dsh_tests::skip(
            "a_service_looked_up_without_a_declaration_is_refused_in_a_debug_build",
            "only debug builds of dsh-host refuse undeclared look-ups",
        );
        return;
    }
    let dir = TestDir::new("undeclared");
    let config = dir.write(
        "tree.yml",
        "- id: undeclared\n  name: lifecycle-probe/peek-undeclared\n\
         - id: optional\n  name: lifecycle-probe/peek-optional\n",
    );
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    let refused = host.wait_stdout("peek-undeclared:", WAIT);
    assert!(
        refused.contains("refused")
            && refused.contains("`cmdline`, which it declares neither in INJECT nor in OPTIONAL"),
        "{refused}"
    );
    assert_eq!(
        host.wait_stdout("peek-optional:", WAIT),
        "peek-optional: answered"
    );
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn status_reports_the_running_host_and_fails_without_one() {
    let dir = TestDir::new("status");
    let none = run_host(&dir.home(), &["status"]);
    assert_eq!(none.code, Some(1), "{none:?}");
    assert!(none.stderr.contains("no running dsh-host"), "{none:?}");
    let config = dir.write("tree.yml", "- id: consumer\n  name: consumer\n");
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    // The host answers from before its rows mount (it loads their libraries meanwhile); poll
    // (bounded) until it answers with the row mounted.
    let deadline = std::time::Instant::now() + WAIT;
    let out = loop {
        let out = run_host(&dir.home(), &["status"]);
        let mounted = out.code == Some(0) && out.stdout.contains("consumer");
        if mounted || std::time::Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains(&format!("dsh-host pid {}", host.pid())),
        "{}",
        out.stdout
    );
    assert!(
        dsh_tests::squash(&out.stdout)
            .contains("consumer consumer PENDING waiting for: service `greeter`"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("library copies held: 1"),
        "{}",
        out.stdout
    );
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn check_without_a_tree_is_a_usage_error() {
    let dir = TestDir::new("no-tree");
    let out = run_host(&dir.home(), &["check"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("--config FILE or --profile NAME"),
        "{out:?}"
    );
}

#[test]
fn the_shipped_profiles_boot_with_every_row_active() {
    for profile in ["headless", "web"] {
        let dir = TestDir::new(&format!("profile-{profile}"));
        let out = run_host(&dir.home(), &["check", "--profile", profile, "--json"]);
        assert_eq!(out.code, Some(0), "{profile}: {out:?}");
        let value: serde_json::Value =
            serde_json::from_str(out.stdout.lines().last().unwrap_or("")).unwrap();
        let rows: Vec<&str> = value["snapshot"]["fibers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|fiber| fiber["row"].as_str().unwrap())
            .collect();
        for row in ["http", "subprocess", "session", "session-persistence-jsonl"] {
            assert!(rows.contains(&row), "{profile}: {rows:?}");
        }
        // Each row shows what its plugin needs to start, uses when present and provides.
        let services = |row: &str| {
            value["snapshot"]["fibers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|fiber| fiber["row"] == row)
                .map(|fiber| fiber["services"].clone())
                .unwrap()
        };
        let agent_loop = services("agent-loop");
        assert_eq!(
            agent_loop["needs"],
            serde_json::json!(["sessions", "llm", "tools"]),
            "{profile}: {agent_loop}"
        );
        assert_eq!(agent_loop["provides"], serde_json::json!(["agent_loop"]));
        assert!(
            agent_loop["optional"]
                .as_array()
                .unwrap()
                .contains(&serde_json::json!("system_prompt")),
            "{profile}: {agent_loop}"
        );
        assert!(
            dir.home()
                .join(format!("profiles/{profile}/profile.yml"))
                .is_file()
        );
    }
}

fn hello_yml() -> String {
    dsh_tests::workspace_root()
        .join("examples/hello.yml")
        .to_str()
        .unwrap()
        .to_owned()
}

/// The `dsh-host-*.log` files under `$DSH_HOME/logs`, sorted by name.
fn log_files(home: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(home.join("logs")) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            name.starts_with("dsh-host-") && name.ends_with(".log")
        })
        .collect();
    files.sort();
    files
}

/// A line of the full log: `2026-01-01T00:00:00.000000Z  INFO ...`.
fn is_full_log_line(line: &str) -> bool {
    line.starts_with(|c: char| c.is_ascii_digit())
        && [" TRACE ", " DEBUG ", " INFO ", " WARN ", " ERROR "]
            .iter()
            .any(|level| line.contains(level))
}

#[test]
fn help_lists_the_usage_the_commands_and_the_profiles_arguments() {
    let dir = TestDir::new("help");
    let help = run_host(&dir.home(), &["--help"]);
    assert_eq!(help.code, Some(0), "{help:?}");
    assert!(help.stderr.is_empty(), "{help:?}");
    let text = &help.stdout;
    assert!(!text.contains("not built yet"), "{text}");
    for needle in [
        "--config FILE",
        "--profile NAME",
        "--patch <FILE>",
        "--plugin-dir <DIR>",
        "--dump-config",
        "--no-watch",
        "-v, --verbose",
        "--version",
        "  check ",
        "  status ",
        "  session ",
        "session list",
        "session show",
        "session derive",
        "session check",
        "  headless ",
        "[--output text|stream-json] [--resume ID] [--cwd DIR]",
        "[--model PROVIDER/MODEL] [--replay FILE] TASK",
        "dsh-host --profile headless -- --help",
        "  web ",
        "serves the page on 127.0.0.1",
        "$DSH_HOME/logs",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }
    for other in [&["-h"][..], &["help"]] {
        let out = run_host(&dir.home(), other);
        assert_eq!(out.code, Some(0), "{other:?}: {out:?}");
        assert_eq!(&out.stdout, text, "{other:?} prints what --help does");
    }
    let check = run_host(&dir.home(), &["help", "check"]);
    assert_eq!(check.code, Some(0), "{check:?}");
    assert!(check.stdout.contains("--json"), "{check:?}");
    let unknown = run_host(&dir.home(), &["help", "nonsense"]);
    assert_eq!(unknown.code, Some(2), "{unknown:?}");
    assert!(
        unknown.stderr.contains("no command `nonsense`"),
        "{unknown:?}"
    );
    for flag in ["--version", "-V"] {
        let version = run_host(&dir.home(), &[flag]);
        assert_eq!(version.code, Some(0), "{version:?}");
        assert_eq!(
            version.stdout.trim_end(),
            format!("dsh-host {}", env!("CARGO_PKG_VERSION"))
        );
    }
    // Asking for help writes nothing.
    assert!(!dir.home().exists());
}

#[test]
fn the_headless_runner_prints_its_own_help() {
    let dir = TestDir::new("headless-help");
    let out = run_host(&dir.home(), &["--profile", "headless", "--", "--help"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    for needle in ["--output text|stream-json", "--resume ID", "--replay FILE"] {
        assert!(out.stdout.contains(needle), "{out:?}");
    }
}

/// Without `RUST_LOG` or `-v` a run's stderr carries no INFO line; its log file has them.
#[test]
fn info_records_go_to_the_log_file_not_to_stderr() {
    let dir = TestDir::new("quiet-run");
    let hello = hello_yml();
    let mut host = HostProcess::start_quiet(&dir.home(), &["--config", &hello]);
    host.wait_stdout("consumer says: Hello, world!", WAIT);
    let pid = host.pid();
    assert_eq!(host.stop(), Some(0));
    let stderr = host.stderr();
    assert!(
        !stderr
            .iter()
            .any(|line| is_full_log_line(line) || line.contains("shutting down")),
        "{stderr:?}"
    );
    let files = log_files(&dir.home());
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        files[0].to_string_lossy().ends_with(&format!("-{pid}.log")),
        "{files:?}"
    );
    let log = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        log.lines()
            .any(|line| is_full_log_line(line) && line.contains(" INFO shutting down")),
        "{log}"
    );
}

/// `-v`, or a filter in `RUST_LOG`, brings the full, timestamped log back to stderr.
#[test]
fn verbose_or_rust_log_puts_the_full_log_on_stderr() {
    let hello = hello_yml();
    for (args, envs) in [
        (vec!["-v", "--config", hello.as_str()], vec![]),
        (vec!["--verbose", "--config", hello.as_str()], vec![]),
        (vec!["--config", hello.as_str()], vec![("RUST_LOG", "info")]),
    ] {
        let dir = TestDir::new("verbose-run");
        let mut host =
            HostProcess::start_with_log(&dir.home(), &args, &envs, dsh_tests::Log::Quiet);
        host.wait_stdout("consumer says: Hello, world!", WAIT);
        assert_eq!(host.stop(), Some(0));
        let line = host.wait_stderr("shutting down", WAIT);
        assert!(is_full_log_line(&line), "{args:?} {envs:?}: {line}");
        assert!(line.contains(" INFO "), "{line}");
        assert!(log_files(&dir.home()).is_empty(), "{args:?} {envs:?}");
    }
}

/// Warnings and errors still reach a terminal user, short and with their row context.
#[test]
fn warnings_and_errors_reach_stderr_in_short_form() {
    let dir = TestDir::new("quiet-warnings");
    let config = dir.write(
        "tree.yml",
        "- id: missing\n  name: no-such-plugin\n- id: bad\n  name: greeter\n  config: {nope: 1}\n",
    );
    let out = dsh_tests::run_host_quiet(
        &dir.home(),
        &["check", "--config", config.to_str().unwrap()],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("warning: row `missing` waits (PENDING)")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("error: plugin failed")
                && line.contains("unknown field `nope`")
                && line.contains("row=bad")),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|line| is_full_log_line(line)),
        "{lines:?}"
    );
    // The log file has them too, with the rest.
    let files = log_files(&dir.home());
    assert_eq!(files.len(), 1, "{files:?}");
    let log = std::fs::read_to_string(&files[0]).unwrap();
    assert!(log.contains(" WARN row `missing` waits (PENDING)"), "{log}");
}

/// A home whose log directory cannot be made: the run goes on, saying so once on stderr.
#[test]
fn an_unwritable_log_directory_falls_back_to_stderr() {
    let dir = TestDir::new("no-log-dir");
    dir.write("home/logs", "a file where the directory would be\n");
    let hello = hello_yml();
    let out = dsh_tests::run_host_quiet(&dir.home(), &["check", "--config", &hello]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("consumer says: Hello, world!"),
        "{out:?}"
    );
    assert_eq!(
        out.stderr.matches("cannot write a log file in").count(),
        1,
        "{out:?}"
    );
    assert!(out.stderr.starts_with("warning: "), "{out:?}");
    assert!(!out.stderr.lines().any(is_full_log_line), "{out:?}");
}

/// Each start keeps the newest 20 log files and leaves other files in the directory alone.
#[test]
fn old_log_files_are_pruned_to_the_newest_twenty() {
    let dir = TestDir::new("log-prune");
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    for index in 0..25u64 {
        let path = dir.write(&format!("home/logs/dsh-host-old-{index:02}.log"), "old\n");
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(old + std::time::Duration::from_secs(index))
            .unwrap();
    }
    dir.write("home/logs/abi-mismatch-x-1.txt", "a report\n");
    let hello = hello_yml();
    let out = dsh_tests::run_host_quiet(&dir.home(), &["check", "--config", &hello]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let names: Vec<String> = log_files(&dir.home())
        .iter()
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 20, "{names:?}");
    // The 19 newest old files and the new one.
    assert!(
        !names.contains(&"dsh-host-old-05.log".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"dsh-host-old-06.log".to_owned()),
        "{names:?}"
    );
    assert!(
        names.iter().any(|name| !name.starts_with("dsh-host-old-")),
        "{names:?}"
    );
    assert!(dir.home().join("logs/abi-mismatch-x-1.txt").is_file());
}
