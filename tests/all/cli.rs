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
fn status_reports_the_running_host_and_fails_without_one() {
    let dir = TestDir::new("status");
    let none = run_host(&dir.home(), &["status"]);
    assert_eq!(none.code, Some(1), "{none:?}");
    assert!(none.stderr.contains("no running dsh-host"), "{none:?}");
    let config = dir.write("tree.yml", "- id: consumer\n  name: consumer\n");
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    // The socket exists once the tree is mounted; poll (bounded) until the host answers.
    let deadline = std::time::Instant::now() + WAIT;
    let out = loop {
        let out = run_host(&dir.home(), &["status"]);
        if out.code == Some(0) || std::time::Instant::now() > deadline {
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
        assert!(
            dir.home()
                .join(format!("profiles/{profile}/profile.yml"))
                .is_file()
        );
    }
}
