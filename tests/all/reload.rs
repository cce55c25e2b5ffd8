//! Hot reload through the real binary: libraries replaced while the host runs, config edits,
//! libraries that appear, and many reloads in a row.

use std::path::Path;
use std::time::Duration;

use dsh_tests::recorded::{hanging_replay, wait_until_hanging};
use dsh_tests::{HostProcess, TestDir, WAIT, fixture_lib, install_library, plugin_lib, run_host};

/// A host running `yaml` with `plugins/` (holding a copy of `libgreeter.so`) first in lookup.
fn start_with_greeter_copy(dir: &TestDir, yaml: &str) -> HostProcess {
    let plugins = dir.join("plugins");
    install_library(&plugin_lib("greeter"), &plugins.join("libgreeter.so"));
    let config = dir.write("tree.yml", yaml);
    HostProcess::start(
        &dir.home(),
        &[
            "--config",
            config.to_str().unwrap(),
            "--plugin-dir",
            plugins.to_str().unwrap(),
        ],
    )
}

fn status_json(home: &Path) -> serde_json::Value {
    let out = run_host(home, &["status", "--json"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    serde_json::from_str(out.stdout.lines().next().unwrap_or("")).unwrap()
}

const PAIR: &str = "- id: greeter\n  name: greeter\n- id: consumer\n  name: consumer\n";

#[test]
fn replacing_a_library_reloads_the_consumer_exactly_once() {
    let dir = TestDir::new("reload-lib");
    let mut host = start_with_greeter_copy(&dir, PAIR);
    host.wait_stdout("consumer says: Hello, world!", WAIT);
    install_library(
        &plugin_lib("greeter_alt"),
        &dir.join("plugins/libgreeter.so"),
    );
    host.wait_stdout("consumer says: Howdy, world!", WAIT);
    host.wait_stderr("libgreeter.so (1 row(s) remounted)", WAIT);
    let status = status_json(&dir.home());
    assert_eq!(
        host.count_stdout("consumer says: Howdy, world!"),
        1,
        "{:?}",
        host.stdout()
    );
    assert_eq!(host.count_stdout("consumer says"), 2, "{:?}", host.stdout());
    let fibers = status["fibers"].as_array().unwrap();
    assert!(
        fibers.iter().all(|fiber| fiber["state"] == "ACTIVE"),
        "{status}"
    );
    // The first copy of libgreeter.so is never unloaded: it is still counted.
    assert_eq!(status["library_copies"], 3, "{status}");
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn a_library_that_fails_to_load_leaves_the_old_version_running() {
    let dir = TestDir::new("reload-broken");
    let mut host = start_with_greeter_copy(&dir, PAIR);
    host.wait_stdout("consumer says: Hello, world!", WAIT);
    let alt = std::fs::read(plugin_lib("greeter_alt")).unwrap();
    let truncated = dir.write("truncated.so", "");
    std::fs::write(&truncated, &alt[..alt.len() / 2]).unwrap();
    install_library(&truncated, &dir.join("plugins/libgreeter.so"));
    host.wait_stderr("keeping the running version", WAIT);
    assert_eq!(host.count_stdout("consumer says"), 1, "{:?}", host.stdout());
    let status = status_json(&dir.home());
    assert!(
        status["fibers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|fiber| fiber["state"] == "ACTIVE"),
        "{status}"
    );
    install_library(
        &plugin_lib("greeter_alt"),
        &dir.join("plugins/libgreeter.so"),
    );
    host.wait_stdout("consumer says: Howdy, world!", WAIT);
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn config_edit_remounts_only_the_changed_row() {
    plugin_lib("lifecycle_probe");
    let dir = TestDir::new("reload-config");
    let yaml = "- id: greeter\n  name: greeter\n  config:\n    greeting: Hello\n- id: consumer\n  name: consumer\n- id: bystander\n  name: lifecycle-probe/tree\n  config:\n    depth: 0\n";
    let config = dir.write("tree.yml", yaml);
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("consumer says: Hello, world!", WAIT);
    host.wait_stdout("applied level 0", WAIT);
    dir.write(
        "tree.yml",
        &yaml.replace("greeting: Hello", "greeting: Bonjour"),
    );
    host.wait_stdout("consumer says: Bonjour, world!", WAIT);
    host.wait_stderr("config reloaded: 0 added, 0 removed, 1 changed", WAIT);
    assert_eq!(
        host.count_stdout("disposed level 0"),
        0,
        "bystander remounted: {:?}",
        host.stdout()
    );
    assert_eq!(
        host.count_stdout("applied level 0"),
        1,
        "{:?}",
        host.stdout()
    );
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn a_broken_config_edit_keeps_the_last_good_tree() {
    let dir = TestDir::new("reload-bad-config");
    let config = dir.write("tree.yml", PAIR);
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("consumer says: Hello, world!", WAIT);
    dir.write("tree.yml", "- id: greeter\n  name: greeter\n  bogus: 1\n");
    let line = host.wait_stderr("config edit rejected, keeping the last good tree", WAIT);
    assert!(line.contains("tree.yml:3:"), "{line}");
    let status = status_json(&dir.home());
    assert_eq!(status["fibers"].as_array().unwrap().len(), 2, "{status}");
    dir.write(
        "tree.yml",
        &PAIR.replace(
            "- id: greeter\n  name: greeter\n",
            "- id: greeter\n  name: greeter\n  config: {greeting: Hey}\n",
        ),
    );
    host.wait_stdout("consumer says: Hey, world!", WAIT);
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn twenty_reloads_deliver_once_and_leak_nothing() {
    plugin_lib("lifecycle_probe");
    let dir = TestDir::new("reload-twenty");
    let yaml = format!("{PAIR}- id: echo\n  name: lifecycle-probe/echo-listener\n");
    let mut host = start_with_greeter_copy(&dir, &yaml);
    host.wait_stdout("consumer says: Hello, world!", WAIT);
    host.wait_stdout("echo 1 got ping 1", WAIT);
    let before = status_json(&dir.home());
    let libraries = [plugin_lib("greeter_alt"), plugin_lib("greeter")];
    for round in 1..=20 {
        install_library(
            &libraries[(round - 1) % 2],
            &dir.join("plugins/libgreeter.so"),
        );
        host.wait_stdout_count("consumer says", round + 1, WAIT);
        host.wait_stdout(&format!("got ping {}", round + 1), WAIT);
    }
    // Give a stray duplicate the chance to show up before counting.
    std::thread::sleep(Duration::from_millis(300));
    let after = status_json(&dir.home());
    let stdout = host.stdout();
    assert_eq!(
        stdout
            .iter()
            .filter(|line| line.starts_with("consumer says"))
            .count(),
        21,
        "{stdout:?}"
    );
    for line in stdout.iter().filter(|line| line.starts_with("echo ")) {
        let words: Vec<&str> = line.split(' ').collect();
        assert_eq!(words[1], words[4], "an old listener answered: {line}");
    }
    assert_eq!(
        stdout
            .iter()
            .filter(|line| line.starts_with("echo "))
            .count(),
        21,
        "{stdout:?}"
    );
    assert_eq!(
        after["listeners"], before["listeners"],
        "before {before}\nafter {after}"
    );
    assert_eq!(
        after["live_tasks"], before["live_tasks"],
        "before {before}\nafter {after}"
    );
    assert_eq!(
        after["fibers"].as_array().unwrap().len(),
        before["fibers"].as_array().unwrap().len()
    );
    let copies = |status: &serde_json::Value| status["library_copies"].as_u64().unwrap();
    assert_eq!(
        copies(&after),
        copies(&before) + 20,
        "every reload holds one more copy"
    );
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn a_third_party_plugin_dropped_into_the_plugins_folder_loads() {
    let dir = TestDir::new("third-party");
    let config = dir.write(
        "tree.yml",
        "- id: third\n  name: third-party-plugin\n  config:\n    message: dropped in and running\n",
    );
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stderr(
        "row `third` waits (PENDING): libthird_party_plugin.so not found in",
        WAIT,
    );
    let status = status_json(&dir.home());
    assert_eq!(status["fibers"][0]["state"], "PENDING", "{status}");
    install_library(
        &fixture_lib("third_party_plugin"),
        &dir.home().join("plugins/libthird_party_plugin.so"),
    );
    host.wait_stdout("dropped in and running", WAIT);
    let status = status_json(&dir.home());
    assert_eq!(status["fibers"][0]["state"], "ACTIVE", "{status}");
    assert_eq!(host.stop(), Some(0));
    assert!(
        host.stdout()
            .iter()
            .any(|line| line == "third-party-plugin disposed"),
        "{:?}",
        host.stdout()
    );
}

#[test]
fn a_context_kept_past_its_reload_is_refused() {
    plugin_lib("lifecycle_probe");
    let dir = TestDir::new("stale");
    let mut host = start_with_greeter_copy(
        &dir,
        "- id: greeter\n  name: greeter\n- id: stale\n  name: lifecycle-probe/stale\n",
    );
    host.wait_stdout("stale: first apply", WAIT);
    install_library(
        &plugin_lib("greeter_alt"),
        &dir.join("plugins/libgreeter.so"),
    );
    let line = host.wait_stdout("stale context refused", WAIT);
    assert!(
        line.contains("cannot register on an inactive context"),
        "{line}"
    );
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn disabling_a_provider_row_sends_its_consumer_back_to_pending() {
    let dir = TestDir::new("reload-disable");
    let config = dir.write("tree.yml", PAIR);
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("consumer says: Hello, world!", WAIT);
    dir.write(
        "tree.yml",
        &PAIR.replace("  name: greeter\n", "  name: greeter\n  disabled: true\n"),
    );
    host.wait_stderr("config reloaded: 0 added, 0 removed, 1 changed", WAIT);
    let status = status_json(&dir.home());
    let fibers = status["fibers"].as_array().unwrap();
    assert_eq!(fibers.len(), 1, "{status}");
    assert_eq!(fibers[0]["row"], "consumer");
    assert_eq!(fibers[0]["state"], "PENDING", "{status}");
    assert_eq!(status["disabled"][0], "greeter", "{status}");
    dir.write("tree.yml", PAIR);
    host.wait_stdout_count("consumer says: Hello, world!", 2, WAIT);
    assert_eq!(host.stop(), Some(0));
}

/// A waterfall's finished chain is kept for the event's next dispatch, with its listener snapshot;
/// disabling the row that registered a listener must still release that listener at once.
#[test]
fn a_disabled_rows_waterfall_listener_is_released_at_once() {
    plugin_lib("lifecycle_probe");
    let dir = TestDir::new("reload-keeper");
    let row = "- id: keeper\n  name: lifecycle-probe/waterfall-keeper\n";
    let config = dir.write("tree.yml", row);
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("keeper dispatched: 2", WAIT);
    dir.write("tree.yml", &format!("{row}  disabled: true\n"));
    host.wait_stdout("keeper listener dropped", WAIT);
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn creating_a_home_patch_layer_while_running_takes_effect() {
    let dir = TestDir::new("reload-home-patch");
    dir.write("home/profiles/demo/profile.yml", "bundles: [examples]\n");
    let mut host = HostProcess::start(&dir.home(), &["--profile", "demo"]);
    host.wait_stdout("consumer says: Hello, world!", WAIT);
    dir.write(
        "home/cordis.patch.yml",
        "- id: greeter\n  config:\n    greeting: Patched\n",
    );
    host.wait_stdout("consumer says: Patched, world!", WAIT);
    assert_eq!(host.stop(), Some(0));
}

/// A provider that re-applies in place (its row is unchanged, one of its own dependencies was
/// edited) publishes anew; its dependents must re-apply too, or they keep the old service.
#[test]
fn a_provider_reapplied_in_place_reapplies_its_dependents() {
    plugin_lib("bench_plugin");
    plugin_lib("bench_consumer");
    let dir = TestDir::new("reload-chain");
    let yaml = "- id: greeter\n  name: greeter\n  config:\n    greeting: Hello\n- id: relay\n  name: bench-plugin/provider\n  inject: [greeter]\n  config:\n    service: relay\n- id: tail\n  name: bench-consumer\n  inject: [relay]\n  config:\n    announce: true\n";
    let config = dir.write("tree.yml", yaml);
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("bench consumer tail ready", WAIT);
    dir.write(
        "tree.yml",
        &yaml.replace("greeting: Hello", "greeting: Bonjour"),
    );
    host.wait_stderr("config reloaded: 0 added, 0 removed, 1 changed", WAIT);
    let deadline = std::time::Instant::now() + WAIT;
    while host.count_stdout("bench consumer tail ready") < 2 && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        host.count_stdout("bench consumer tail ready"),
        2,
        "the end of the chain did not re-apply exactly once: {:?}",
        host.stdout()
    );
    let status = status_json(&dir.home());
    assert!(
        status["fibers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|fiber| fiber["state"] == "ACTIVE"),
        "{status}"
    );
    assert_eq!(host.stop(), Some(0));
}

/// A row moved into an isolating group is mounted in the group's scope, not where it was: the
/// consumer no longer sees the root's `greeter` and waits.
#[test]
fn a_row_moved_into_an_isolating_group_takes_the_group_scope() {
    let dir = TestDir::new("reload-move");
    let config = dir.write("tree.yml", PAIR);
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("consumer says: Hello, world!", WAIT);
    dir.write(
        "tree.yml",
        "- id: greeter\n  name: greeter\n- id: box\n  group: true\n  isolate:\n    greeter: true\n  config:\n    - id: consumer\n      name: consumer\n",
    );
    host.wait_stderr("config reloaded: 1 added, 0 removed, 1 changed", WAIT);
    let status = status_json(&dir.home());
    let fibers = status["fibers"].as_array().unwrap();
    let consumer = fibers
        .iter()
        .find(|fiber| fiber["row"] == "consumer")
        .unwrap_or_else(|| panic!("no consumer fiber: {status}"));
    assert_eq!(consumer["state"], "PENDING", "{status}");
    assert_eq!(host.count_stdout("consumer says"), 1, "{:?}", host.stdout());
    // Moving it back out mounts it at the root again, where `greeter` is.
    dir.write("tree.yml", PAIR);
    host.wait_stdout_count("consumer says: Hello, world!", 2, WAIT);
    assert_eq!(host.stop(), Some(0));
}

/// Prompt sections follow reloads: a section's row edited replaces its section (no duplicate
/// refused, no stale text), and the system-prompt row remounted gets every section back.
#[test]
fn prompt_sections_follow_reloads_of_their_rows_and_of_the_service() {
    for lib in ["system_prompt", "prompt_probe"] {
        plugin_lib(lib);
    }
    let dir = TestDir::new("reload-prompt");
    let tree = |identity: &str, guide: &str| {
        format!(
            "- id: system-prompt\n  name: system-prompt\n  config:\n    identity: {identity}\n    persona: ''\n    agentsMd: false\n- id: probe\n  name: prompt-probe\n  config:\n    section: {{id: guide, order: 100, text: {guide}}}\n"
        )
    };
    let config = dir.write("tree.yml", &tree("Identity one", "Guide one"));
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    let systems = |host: &HostProcess| -> Vec<String> {
        host.stdout()
            .iter()
            .filter_map(|line| line.strip_prefix("prompt "))
            .map(|json| {
                let value: serde_json::Value = serde_json::from_str(json).unwrap();
                value["system"].as_str().unwrap_or_default().to_owned()
            })
            .collect()
    };
    host.wait_stdout_count("prompt ", 1, WAIT);
    assert_eq!(systems(&host), ["Identity one\n\nGuide one"]);
    dir.write("tree.yml", &tree("Identity one", "Guide two"));
    host.wait_stdout_count("prompt ", 2, WAIT);
    assert_eq!(systems(&host)[1], "Identity one\n\nGuide two");
    dir.write("tree.yml", &tree("Identity two", "Guide two"));
    host.wait_stdout_count("prompt ", 3, WAIT);
    assert_eq!(systems(&host)[2], "Identity two\n\nGuide two");
    let refused: Vec<String> = host
        .stderr()
        .into_iter()
        .filter(|line| line.contains("already exists") || line.contains("plugin failed"))
        .collect();
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(host.stop(), Some(0));
}

/// The agents registry across a reload of its row: the agents of the old registry go with it,
/// a client that applies again gets a fresh registry, and an agent's inbox survives because
/// every change was logged (the new registry lists the message staged before it). Listeners of
/// the old client are gone: each notification is recorded once.
#[test]
fn the_agents_registry_follows_reloads_and_keeps_inboxes_through_the_log() {
    for lib in ["session", "agent", "agent_probe"] {
        plugin_lib(lib);
    }
    let dir = TestDir::new("reload-agents");
    let record = dir.join("agents.jsonl");
    let tree = |disabled: bool, probe: &str| {
        format!(
            "- id: session\n  name: session\n- id: agent\n  name: agent\n  disabled: {disabled}\n- id: probe\n  name: agent-probe\n  config:\n    record: {}\n    agent: agent-a\n{probe}",
            record.display()
        )
    };
    let config = dir.write("tree.yml", &tree(false, "    stage: hello again\n"));
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    host.wait_stdout("agents ", WAIT);
    let again = "    stage: one more\n    inbox: true\n";
    dir.write("tree.yml", &tree(true, again));
    host.wait_stderr("config reloaded: 0 added, 0 removed, 2 changed", WAIT);
    dir.write("tree.yml", &tree(false, again));
    let listing = host.wait_stdout("inbox ", WAIT);
    let listing: serde_json::Value =
        serde_json::from_str(listing.trim_start_matches("inbox ")).unwrap();
    assert_eq!(listing["nextTurn"], serde_json::json!([]), "{listing}");
    let claimed = &listing["nextStep"];
    // The message staged before the reload survived it (the new registry rebuilt the inbox
    // from the log); the one staged after got an id of its own (ids come from the log, not
    // from a counter the new registry restarts).
    let texts: Vec<&str> = claimed
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["hello again", "one more"], "{claimed}");
    assert_ne!(claimed[0]["id"], claimed[1]["id"]);
    let lists: Vec<String> = host
        .stdout()
        .into_iter()
        .filter_map(|line| line.strip_prefix("agents ").map(str::to_owned))
        .collect();
    assert_eq!(lists.len(), 2, "{lists:?}");
    let agents: serde_json::Value = serde_json::from_str(&lists[1]).unwrap();
    assert_eq!(agents.as_array().unwrap().len(), 1, "{agents}");
    assert_eq!(agents[0]["id"], "agent-a");
    let seen: Vec<String> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            value["event"].as_str().unwrap().to_owned()
        })
        .collect();
    let count = |name: &str| seen.iter().filter(|seen| *seen == name).count();
    assert_eq!(count("agent/created"), 2, "{seen:?}");
    assert_eq!(count("agent/session-start"), 2, "{seen:?}");
    assert_eq!(count("agent/inbox/inserted"), 2, "{seen:?}");
    assert_eq!(host.stop(), Some(0));
}

/// A shutdown disposes consumers before the providers they use: an agent whose turn hangs in
/// its model request is disposed before the session log and its store, so the dropped turn's
/// `turn/end` (`aborted` by `disposed`) is still written and the stored log is sound, with no
/// runner cancelling anything first.
#[test]
fn a_shutdown_disposes_an_agent_before_its_session_store() {
    dsh_tests::needs_corpus!("a_shutdown_disposes_an_agent_before_its_session_store");
    for lib in [
        "session",
        "session_persistence_jsonl",
        "llm",
        "llm_replay",
        "tools",
        "agent",
        "agent_loop",
        "agent_probe",
    ] {
        plugin_lib(lib);
    }
    let dir = TestDir::new("shutdown-order");
    let (log, ready) = hanging_replay(&dir);
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let config = dir.write(
        "tree.yml",
        &format!(
            "- id: session\n  name: session\n- id: persistence\n  name: session-persistence-jsonl\n  config:\n    root: {}\n- id: llm\n  name: llm\n- id: replay\n  name: llm-replay\n  config:\n    log: {}\n- id: tools\n  name: tools\n- id: agent\n  name: agent\n- id: agent-loop\n  name: agent-loop\n- id: probe\n  name: agent-probe\n  inject: [llm_replay]\n  config:\n    agent: a1\n    model: replay/replay\n    cwd: {}\n    followup: wait here\n",
            dir.home().join("sessions").display(),
            log.display(),
            work.display()
        ),
    );
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    wait_until_hanging(&host, &ready);
    assert_eq!(host.stop(), Some(0), "{:?}", host.stderr());
    let show = run_host(&dir.home(), &["session", "show", "a1"]);
    assert!(
        show.stdout
            .contains(r#"{"kind":"aborted","reason":{"kind":"disposed"}}"#),
        "{show:?}"
    );
    let check = run_host(&dir.home(), &["session", "check", "a1"]);
    assert_eq!(check.code, Some(0), "{check:?}");
}
