//! Bad input: each gets a clear error naming the file, row or field; everything that does not
//! depend on the broken part keeps running.

use dsh_tests::tree::check;
use dsh_tests::{
    HostProcess, TestDir, WAIT, fixture_lib, fixture_text, install_library, plugin_lib, run_host,
};

#[test]
fn malformed_yaml_names_file_line_and_column() {
    let dir = TestDir::new("malformed");
    let out = check(
        &dir,
        "- id: greeter\n  name: greeter\n- id: [unclosed\n",
        &[],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("tree.yml:4:1: malformed YAML"),
        "{}",
        out.stderr
    );
}

#[test]
fn unknown_row_field_is_named_with_its_position() {
    let dir = TestDir::new("unknown-field");
    let out = check(&dir, "- id: greeter\n  nmae: greeter\n", &[]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("tree.yml:2:3"), "{}", out.stderr);
    assert!(out.stderr.contains("`nmae`"), "{}", out.stderr);
}

#[test]
fn duplicate_id_in_one_layer_is_an_error() {
    let dir = TestDir::new("duplicate-id");
    let out = check(
        &dir,
        "- id: greeter\n  name: greeter\n- id: greeter\n  name: consumer\n",
        &[],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("greeter"), "{}", out.stderr);
    assert!(
        out.stderr.to_lowercase().contains("duplicate"),
        "{}",
        out.stderr
    );
}

#[test]
fn patch_for_an_unknown_id_warns_and_the_rest_runs() {
    let dir = TestDir::new("unknown-patch");
    dir.write("home/profiles/demo/profile.yml", "bundles: [examples]\n");
    dir.write("home/cordis.patch.yml", "- id: no-such-row\n  config: {}\n");
    let out = run_host(&dir.home(), &["check", "--profile", "demo"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stderr.contains("no-such-row"), "{}", out.stderr);
    assert!(
        out.stdout.contains("consumer says: Hello, world!"),
        "{}",
        out.stdout
    );
}

#[test]
fn missing_library_is_pending_with_the_reason_and_a_warning() {
    let dir = TestDir::new("missing-lib");
    let out = check(
        &dir,
        "- id: ghost\n  name: ghost-plugin\n- id: greeter\n  name: greeter\n",
        &[],
    );
    assert_eq!(out.code, Some(2), "{out:?}");
    let table = dsh_tests::squash(&out.stdout);
    assert!(
        table.contains("ghost ghost-plugin PENDING waiting for: libghost_plugin.so not found in"),
        "{table}"
    );
    assert!(
        out.stderr
            .contains("row `ghost` waits (PENDING): libghost_plugin.so not found in"),
        "{}",
        out.stderr
    );
    assert!(table.contains("greeter greeter ACTIVE"), "{table}");
}

#[test]
fn unusable_libraries_fail_their_row_only() {
    let dir = TestDir::new("bad-libs");
    let plugins = dir.join("plugins");
    for name in [
        "not_a_plugin",
        "incompatible_layout",
        "incompatible_version",
    ] {
        install_library(&fixture_lib(name), &plugins.join(format!("lib{name}.so")));
    }
    let greeter = std::fs::read(plugin_lib("greeter")).unwrap();
    std::fs::write(
        plugins.join("libtruncated.so"),
        &greeter[..greeter.len() / 3],
    )
    .unwrap();
    let yaml = "- id: notplugin\n  name: not-a-plugin\n- id: layout\n  name: incompatible-layout\n- id: version\n  name: incompatible-version\n- id: truncated\n  name: truncated\n- id: greeter\n  name: greeter\n- id: consumer\n  name: consumer\n";
    let out = check(&dir, yaml, &["--plugin-dir", plugins.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let row = |id: &str| {
        out.stdout
            .lines()
            .find(|line| line.starts_with(&format!("{id} ")))
            .unwrap_or("")
            .to_owned()
    };
    assert!(
        row("notplugin").contains("FAILED")
            && row("notplugin").contains("not a dsh plugin library"),
        "{}",
        out.stdout
    );
    let layout = row("layout");
    assert!(layout.contains("FAILED"), "{layout}");
    assert!(
        layout.contains(&format!(
            "built against an incompatible plugin-api (host {API}, library {API})",
            API = env!("CARGO_PKG_VERSION")
        )),
        "{layout}"
    );
    assert!(layout.contains("type `PluginDecl`"), "{layout}");
    assert!(
        layout.contains("too many fields (expected 6, found 7)"),
        "{layout}"
    );
    let dump = layout
        .split("full report in ")
        .nth(1)
        .expect("dump path")
        .trim();
    assert!(
        std::fs::read_to_string(dump).unwrap().lines().count() > 100,
        "dump {dump}"
    );
    assert!(
        row("version").contains(&format!(
            "built against plugin-api {}, but this host needs a version compatible with {}",
            fixture_text("incompatible_version.txt"),
            env!("CARGO_PKG_VERSION")
        )),
        "{}",
        out.stdout
    );
    assert!(
        row("truncated").contains("truncated file"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("consumer says: Hello, world!"),
        "{}",
        out.stdout
    );
    // The builds that passed the layout check are recorded in the home (the next start skips
    // the check for them); a failed one never is, so a second start refuses it the same way.
    let record = dir.home().join(".loaded/abi-checked");
    let passed = std::fs::read_to_string(&record).unwrap_or_default();
    assert!(passed.lines().count() >= 2, "{passed:?}");
    // `host-id library-id` for a library; `layout id+offset id+offset` for a pair of type
    // layouts a service look-up compared (the consumer's of the greeter's service).
    let library = |line: &str| line.split(' ').count() == 2 && line.len() > 40;
    let layout = |line: &str| {
        let parts: Vec<&str> = line.split(' ').collect();
        parts.len() == 3 && parts[0] == "layout" && parts[1..].iter().all(|p| p.contains('+'))
    };
    assert!(
        passed.lines().all(|line| library(line) || layout(line)),
        "{passed:?}"
    );
    assert!(passed.lines().any(layout), "{passed:?}");
    let again = check(&dir, yaml, &["--plugin-dir", plugins.to_str().unwrap()]);
    let layout_again = again
        .stdout
        .lines()
        .find(|line| line.starts_with("layout "))
        .unwrap_or("")
        .to_owned();
    assert!(
        layout_again.contains("too many fields (expected 6, found 7)"),
        "{}",
        again.stdout
    );
    assert!(again.stdout.contains("consumer says: Hello, world!"));
    assert_eq!(
        std::fs::read_to_string(&record).unwrap_or_default(),
        passed,
        "a pair is recorded once"
    );
}

#[test]
fn config_failing_its_schema_fails_with_the_path_and_apply_is_not_called() {
    let dir = TestDir::new("bad-config");
    let out = check(
        &dir,
        "- id: beat\n  name: heartbeat\n  config:\n    interval_ms: soon\n",
        &[],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stdout.contains("invalid config"), "{}", out.stdout);
    assert!(out.stdout.contains("(at $.interval_ms)"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("heartbeat plugin loading"),
        "apply ran: {}",
        out.stdout
    );
}

#[test]
fn missing_env_variable_in_a_tag_names_row_and_variable() {
    let dir = TestDir::new("env-tag");
    let out = check(
        &dir,
        "- id: greeter\n  name: greeter\n  config:\n    greeting: !env DSH_TEST_SURELY_UNSET\n",
        &[],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("DSH_TEST_SURELY_UNSET"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("greeter"), "{}", out.stderr);
}

#[test]
fn env_tag_with_default_reaches_the_plugin() {
    let dir = TestDir::new("env-default");
    let out = check(
        &dir,
        "- id: greeter\n  name: greeter\n  config:\n    greeting: !env [DSH_TEST_SURELY_UNSET, Salut]\n- id: consumer\n  name: consumer\n",
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("consumer says: Salut, world!"),
        "{}",
        out.stdout
    );
}

#[test]
fn running_host_survives_a_bad_row_next_to_good_ones() {
    let dir = TestDir::new("bad-row-running");
    let config = dir.write("tree.yml", "- id: bad\n  name: heartbeat\n  config:\n    nope: 1\n- id: greeter\n  name: greeter\n- id: consumer\n  name: consumer\n");
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("consumer says: Hello, world!", WAIT);
    host.wait_stderr("unknown field `nope`", WAIT);
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn inject_on_a_group_row_is_named_and_ignored() {
    let dir = TestDir::new("group-inject");
    let config = dir.write(
        "tree.yml",
        "- id: greeter\n  name: greeter\n- id: box\n  group: true\n  inject: [greeter]\n  config:\n    - id: consumer\n      name: consumer\n",
    );
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stderr("row `box`: `inject` on a group row is ignored", WAIT);
    host.wait_stdout("consumer says: Hello, world!", WAIT);
    assert_eq!(host.stop(), Some(0));
}
