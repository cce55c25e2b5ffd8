//! Agent presets through the real headless host: a user preset under `$DSH_HOME/agent-presets`
//! limits what its sessions are offered and replaces the system prompt; the choice is written
//! in the session's header and a resumed session runs it again; a session whose preset is
//! gone resumes on the default with a note naming it; an unknown or broken preset is refused
//! before any session is made, naming the file and the field.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::{against_patched, stream_json};
use dsh_tests::sessions::{PLAIN_STORE, read_log, session_logs};
use serde_json::Value;

fn write_preset(dir: &TestDir, id: &str, preset: &str, agent: &str, prompt: Option<&str>) {
    let folder = dir.home().join("agent-presets").join(id);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("preset.yml"), preset).unwrap();
    std::fs::write(folder.join("agent.yml"), agent).unwrap();
    if let Some(prompt) = prompt {
        std::fs::write(folder.join("prompt.md"), prompt).unwrap();
    }
}

/// The headless host against `server`, its sessions stored as plain JSONL.
fn run(server: &FakeDeepSeek, dir: &TestDir, args: &[&str]) -> dsh_tests::Output {
    against_patched(server, dir, PLAIN_STORE, args, &[])
}

fn tool_names(request: &Value) -> Vec<String> {
    let mut names: Vec<String> = request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn system_prompt(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_user_preset_limits_the_tools_fixes_the_prompt_and_survives_a_resume() {
    let server = FakeDeepSeek::start(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::text("three"),
    ]);
    let dir = TestDir::new("presets-user");
    write_preset(
        &dir,
        "reader",
        "name: Reader\ndescription: reads only\norder: 5\ntools:\n  allow: [read]\nprompt: prompt.md\n",
        "[]\n",
        Some("You only read files, in {{cwd}}."),
    );
    let out = run(
        &server,
        &dir,
        &["--preset", "reader", "--output", "stream-json", "look"],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let (_, result) = stream_json(&out.stdout);
    let session = result["sessionId"].as_str().unwrap().to_owned();
    let requests = server.requests();
    assert_eq!(tool_names(&requests[0].body), ["read"]);
    let work = dir.join("work");
    assert_eq!(
        system_prompt(&requests[0].body),
        format!("You only read files, in {}.", work.display())
    );
    let logs = session_logs(&dir.home());
    let log = logs
        .iter()
        .find(|path| path.to_string_lossy().contains(&session))
        .expect("the session's log");
    let (header, _) = read_log(log);
    assert_eq!(header["agentPreset"], "reader", "{header}");

    // Resumed, it runs the preset its header names.
    let out = run(&server, &dir, &["--resume", &session, "again"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(tool_names(&server.requests()[1].body), ["read"]);

    // Its preset renamed away: it resumes on the default, and says so.
    std::fs::rename(
        dir.home().join("agent-presets/reader"),
        dir.home().join("agent-presets/reader-old"),
    )
    .unwrap();
    let out = run(&server, &dir, &["--resume", &session, "once more"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr
            .contains("was made with agent preset `reader`, which cannot run here (agent preset `reader`: no agent preset `reader`)"),
        "{}",
        out.stderr
    );
    let third = tool_names(&server.requests()[2].body);
    assert!(
        third.contains(&"bash".to_owned()) && third.contains(&"read".to_owned()),
        "{third:?}"
    );
    assert!(!system_prompt(&server.requests()[2].body).starts_with("You only read"));
    server.assert_no_violations();
}

#[test]
fn an_unknown_or_broken_preset_is_refused_naming_what_is_wrong() {
    let server = FakeDeepSeek::start(vec![Reply::text("unused")]);
    let dir = TestDir::new("presets-bad");
    let out = run(&server, &dir, &["--preset", "nope", "go"]);
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains("no agent preset `nope`"),
        "{}",
        out.stderr
    );
    write_preset(&dir, "bad", "name: Bad\norder: first\n", "[]\n", None);
    write_preset(
        &dir,
        "gone-row",
        "name: Gone row\n",
        "- id: ghost\n  name: no-such-plugin\n",
        None,
    );
    let out = run(&server, &dir, &["--preset", "bad", "go"]);
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains("agent-presets/bad/preset.yml: order:"),
        "{}",
        out.stderr
    );
    let out = run(&server, &dir, &["--preset", "gone-row", "go"]);
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains("agent.yml row `ghost`"),
        "{}",
        out.stderr
    );
    assert!(
        server.requests().is_empty(),
        "no model request for a refused preset"
    );
    assert!(
        session_logs(&dir.home()).is_empty(),
        "no session is made for a refused preset"
    );
}

#[test]
fn a_shipped_preset_runs_from_the_command_line() {
    let server = FakeDeepSeek::start(vec![Reply::text("fine")]);
    let dir = TestDir::new("presets-standard");
    let out = run(
        &server,
        &dir,
        &["--preset", "standard", "--output", "stream-json", "hi"],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let requests = server.requests();
    assert!(tool_names(&requests[0].body).contains(&"bash".to_owned()));
    let logs = session_logs(&dir.home());
    let (header, _) = read_log(&logs[0]);
    assert_eq!(header["agentPreset"], "standard", "{header}");
}

/// A preset folder that reads (`reader`: only `read`, a fixed prompt) and one that does not.
fn reader_and_broken(dir: &TestDir) {
    write_preset(
        dir,
        "reader",
        "name: Reader\norder: 5\ntools:\n  allow: [read]\nprompt: prompt.md\n",
        "[]\n",
        Some("You only read files."),
    );
    write_preset(
        dir,
        "broken",
        "name: Broken\ntools: everything\n",
        "[]\n",
        None,
    );
}

#[test]
fn the_client_protocol_lists_copies_selects_and_removes_presets() {
    let server = FakeDeepSeek::start(vec![Reply::text("read only"), Reply::text("standard")]);
    let dir = TestDir::new("presets-api");
    reader_and_broken(&dir);
    let web = dsh_tests::web::start(&server, &dir);
    let list = web.call("agentPreset.list", &serde_json::json!({}));
    assert_eq!(list["default"], "standard");
    let ids: Vec<&str> = list["presets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|preset| preset["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        &ids[..4],
        ["standard", "code", "minimal", "plugin-author"],
        "{list}"
    );
    assert!(
        ids.contains(&"reader") && ids.contains(&"broken"),
        "{ids:?}"
    );
    let broken = list["presets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|preset| preset["id"] == "broken")
        .unwrap();
    assert!(
        broken["problem"]
            .as_str()
            .unwrap()
            .starts_with("agent-presets/broken/preset.yml: tools:"),
        "{broken}"
    );

    // A copy of a shipped preset is a user preset, readable and removable; the shipped one
    // cannot be removed.
    let copied = web.call(
        "agentPreset.copy",
        &serde_json::json!({"from": "minimal", "to": "my-minimal", "name": "Mine"}),
    );
    assert_eq!(copied["source"], "user", "{copied}");
    assert_eq!(copied["name"], "Mine");
    let files = web.call(
        "agentPreset.read",
        &serde_json::json!({"presetId": "my-minimal"}),
    );
    assert!(
        files["agent"]
            .as_str()
            .unwrap()
            .contains("tool-str-replace-editor")
    );
    assert!(files["prompt"].as_str().unwrap().contains("{{cwd}}"));
    let again = web.try_call(
        "agentPreset.copy",
        &serde_json::json!({"from": "minimal", "to": "my-minimal"}),
    );
    assert_eq!(again["error"]["code"], "agent-preset-conflict", "{again}");
    let shipped = web.try_call(
        "agentPreset.remove",
        &serde_json::json!({"presetId": "code"}),
    );
    assert_eq!(
        shipped["error"]["code"], "agent-preset-read-only",
        "{shipped}"
    );
    web.call(
        "agentPreset.remove",
        &serde_json::json!({"presetId": "my-minimal"}),
    );
    assert!(!dir.home().join("agent-presets/my-minimal").exists());

    // A session made with a preset runs it; a blank session switches before its first turn,
    // and not after.
    let made = web.call(
        "session.create",
        &serde_json::json!({"agentPreset": "reader"}),
    );
    let session = made["sessionId"].as_str().unwrap().to_owned();
    web.prompt(&session, "look");
    server.wait_requests(1, std::time::Duration::from_secs(20));
    assert_eq!(tool_names(&server.requests()[0].body), ["read"]);
    let late = web.try_call(
        "agentPreset.select",
        &serde_json::json!({"sessionId": session, "presetId": "standard"}),
    );
    assert_eq!(late["error"]["code"], "bad-request", "{late}");
    let blank = web.new_session();
    web.call(
        "agentPreset.select",
        &serde_json::json!({"sessionId": blank, "presetId": "reader"}),
    );
    let bad = web.try_call(
        "agentPreset.select",
        &serde_json::json!({"sessionId": blank, "presetId": "broken"}),
    );
    assert_eq!(bad["error"]["code"], "agent-preset-invalid", "{bad}");
    let unknown = web.try_call(
        "session.create",
        &serde_json::json!({"agentPreset": "nope"}),
    );
    assert_eq!(
        unknown["error"]["code"], "agent-preset-invalid",
        "{unknown}"
    );
    web.prompt(&blank, "look again");
    server.wait_requests(2, std::time::Duration::from_secs(20));
    assert_eq!(tool_names(&server.requests()[1].body), ["read"]);
}

#[test]
fn the_new_session_screen_offers_the_presets_and_the_chosen_one_runs() {
    let preset =
        |file: &str, text: &str| (format!("../home/agent-presets/{file}"), text.to_owned());
    let files = [
        preset(
            "reader/preset.yml",
            "name: Reader\norder: 5\ntools:\n  allow: [read]\nprompt: prompt.md\n",
        ),
        preset("reader/agent.yml", "[]\n"),
        preset("reader/prompt.md", "You only read files."),
        preset("broken/preset.yml", "name: Broken\ntools: everything\n"),
    ];
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_str()))
        .collect();
    let Some((server, dir)) = crate::browser::scenario_in(
        "presets",
        vec![Reply::text("I am only reading.")],
        "",
        &[("DEEPSEEK_API_KEY", "sk-test")],
        &[],
        &files,
    ) else {
        return;
    };
    let requests = server.requests();
    let turn = requests
        .iter()
        .find(|request| request.path.ends_with("/chat/completions"))
        .expect("the turn's request");
    assert_eq!(tool_names(&turn.body), ["read"]);
    assert_eq!(system_prompt(&turn.body), "You only read files.");
    // The copy the page made, and the default it chose, in the settings document.
    assert!(
        dir.home()
            .join("agent-presets/my-minimal/preset.yml")
            .is_file()
    );
    let settings = std::fs::read_to_string(dir.home().join("settings.yaml")).unwrap();
    assert!(
        settings.contains("agent-presets:\n  default: my-minimal"),
        "{settings}"
    );
}

#[test]
fn dump_config_shows_a_presets_rows_as_they_are_mounted() {
    let dir = TestDir::new("presets-dump");
    let out = dsh_tests::run_host_with_env(
        &dir.home(),
        &[
            "--profile",
            "headless",
            "--dump-config",
            "--preset",
            "minimal",
        ],
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let preset = out
        .stdout
        .split("# == agent preset `minimal`")
        .nth(1)
        .expect("the preset's part");
    assert!(preset.contains("scope `preset:minimal`"), "{preset}");
    assert!(preset.contains("of the profile's none"), "{preset}");
    assert!(
        preset.contains("name: tool-pty\n  config:\n    scope: preset:minimal"),
        "{preset}"
    );
    let out = dsh_tests::run_host_with_env(
        &dir.home(),
        &["--profile", "headless", "--dump-config", "--preset", "nope"],
        &[],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("--preset: no agent preset `nope`"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_terminal_ui_makes_its_session_with_the_preset_named() {
    let server = FakeDeepSeek::start(vec![Reply::text("Only reading.")]);
    let dir = TestDir::new("presets-tui");
    reader_and_broken(&dir);
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n",
            server.url()
        ),
    );
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let dsh = |preset: &str| {
        let output = std::process::Command::new(dsh_tests::tui::dsh_bin())
            .args(["--preset", preset, "-p", "look"])
            .current_dir(dir.join("work"))
            .env("DSH_HOME", dir.home())
            .env("DEEPSEEK_API_KEY", "sk-test")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        (output.status.code(), stdout, stderr)
    };
    let (code, stdout, stderr) = dsh("reader");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "Only reading.\n");
    assert_eq!(tool_names(&server.requests()[0].body), ["read"]);
    let (code, _, stderr) = dsh("broken");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("agent-presets/broken/preset.yml: tools:"),
        "{stderr}"
    );
}

#[test]
fn a_reload_of_the_presets_row_keeps_a_live_sessions_preset() {
    let server = FakeDeepSeek::start(vec![Reply::text("one"), Reply::text("two")]);
    let dir = TestDir::new("presets-reload");
    reader_and_broken(&dir);
    let web = dsh_tests::web::start(&server, &dir);
    let made = web.call(
        "session.create",
        &serde_json::json!({"agentPreset": "reader"}),
    );
    let session = made["sessionId"].as_str().unwrap().to_owned();
    web.prompt(&session, "one");
    server.wait_requests(1, std::time::Duration::from_secs(20));
    assert_eq!(tool_names(&server.requests()[0].body), ["read"]);
    // A config edit reloads the presets row: its presets' rows and restrictions go with it.
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "- id: agent-presets\n  config:\n    default: reader\n    userRoot: {}\n",
            dir.home().join("agent-presets").display()
        ),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while web.call("agentPreset.list", &serde_json::json!({}))["default"] != "reader" {
        assert!(
            std::time::Instant::now() < deadline,
            "the row never reloaded"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Wait for the previous turn to end before the next prompt (a queued prompt would do too).
    std::thread::sleep(std::time::Duration::from_millis(300));
    web.prompt(&session, "two");
    server.wait_requests(2, std::time::Duration::from_secs(20));
    assert_eq!(
        tool_names(&server.requests()[1].body),
        ["read"],
        "the next turn mounted the preset again"
    );
}

#[test]
fn the_shipped_code_and_minimal_presets_offer_their_tools() {
    let server = FakeDeepSeek::start(vec![Reply::text("code"), Reply::text("minimal")]);
    let dir = TestDir::new("presets-shipped");
    let out = run(&server, &dir, &["--preset", "code", "go"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let out = run(&server, &dir, &["--preset", "minimal", "go"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let requests = server.requests();
    assert_eq!(tool_names(&requests[0].body), ["run_code"]);
    assert_eq!(
        tool_names(&requests[1].body),
        ["bash", "str_replace_editor"]
    );
    let prompt = system_prompt(&requests[1].body);
    assert!(
        prompt.starts_with(&format!(
            "You are a coding agent working in {}.",
            dir.join("work").display()
        )),
        "{prompt}"
    );
}

/// What each shipped preset offers the model, by surface: the tool names (sorted) a session of
/// it is offered, and a tool the standard agent offers that it must not.
const SHIPPED: &[(&str, &[&str])] = &[
    ("code", &["run_code"]),
    ("minimal", &["bash", "str_replace_editor"]),
];

#[test]
fn every_shipped_preset_runs_from_the_web_api() {
    let replies = (0..4)
        .map(|n| Reply::text(&format!("answer {n}")))
        .collect();
    let server = FakeDeepSeek::start(replies);
    let dir = TestDir::new("presets-web-shipped");
    let web = dsh_tests::web::start(&server, &dir);
    let mut expected: Vec<(&str, Option<&[&str]>)> = SHIPPED
        .iter()
        .map(|(id, tools)| (*id, Some(*tools)))
        .collect();
    expected.push(("plugin-author", None));
    expected.push(("standard", None));
    for (index, (preset, tools)) in expected.iter().enumerate() {
        let made = web.call(
            "session.create",
            &serde_json::json!({"agentPreset": preset}),
        );
        let session = made["sessionId"].as_str().unwrap().to_owned();
        web.prompt(&session, "go");
        server.wait_requests(index + 1, std::time::Duration::from_secs(30));
        let offered = tool_names(&server.requests()[index].body);
        match (preset, tools) {
            (_, Some(tools)) => assert_eq!(&offered, tools, "{preset}"),
            (&"plugin-author", None) => {
                for tool in ["plugin_new", "plugin_build", "plugin_install", "bash"] {
                    assert!(offered.contains(&tool.to_owned()), "{preset}: {offered:?}");
                }
            }
            _ => {
                assert!(offered.contains(&"bash".to_owned()), "{offered:?}");
                assert!(!offered.contains(&"plugin_new".to_owned()), "{offered:?}");
                assert!(!offered.contains(&"run_code".to_owned()), "{offered:?}");
            }
        }
    }
}

#[test]
fn a_shipped_preset_chosen_over_acp_runs_its_tools() {
    let server = FakeDeepSeek::start(vec![Reply::text("minimal here")]);
    let dir = TestDir::new("presets-acp-shipped");
    let mut agent = dsh_tests::acp::editor_agent(&server, &dir, "", &[]);
    let (session, _) = agent.open(&dir.join("work"));
    let set = agent.call(
        "session/set_config_option",
        serde_json::json!({"sessionId": session, "configId": "agent_preset", "value": "minimal"}),
    );
    assert!(set["result"].is_object(), "{set}");
    agent.prompt(&session, "go");
    assert_eq!(
        tool_names(&server.requests()[0].body),
        ["bash", "str_replace_editor"]
    );
    agent.close();
}

/// A preset's fixed prompt stands in for the sections only: plan mode's policy still follows it
/// (`system-prompt/base`, under the assemble waterfall), whichever order the rows' listeners
/// were registered in: before and after the plan-mode row is reloaded (its listener then comes
/// after the presets row's).
#[test]
fn plan_mode_keeps_its_policy_under_a_presets_fixed_prompt() {
    let server = FakeDeepSeek::start(vec![Reply::text("a plan"), Reply::text("another plan")]);
    let dir = TestDir::new("presets-plan");
    let web = dsh_tests::web::start(&server, &dir);
    let made = web.call(
        "session.create",
        &serde_json::json!({"agentPreset": "minimal"}),
    );
    let session = made["sessionId"].as_str().unwrap().to_owned();
    let check = |request: usize, policy_end: &str| {
        server.wait_requests(request + 1, std::time::Duration::from_secs(30));
        let system = system_prompt(&server.requests()[request].body);
        assert!(
            system.starts_with("You are a coding agent working in "),
            "not the minimal preset's prompt: {system}"
        );
        assert!(
            system.contains("# Plan mode") && system.ends_with(policy_end),
            "plan mode's policy is lost under the preset's prompt: {system}"
        );
    };
    let accepted = web.prompt(&session, "/plan look around");
    assert_eq!(accepted["command"]["kind"], "success", "{accepted}");
    check(0, "give the plan in your answer.");

    dir.write(
        "home/cordis.patch.yml",
        "- id: plan-mode\n  config:\n    section: \"# Plan mode\\n\\nReloaded: plan only.\"\n",
    );
    web.host
        .wait_stderr("config reloaded", std::time::Duration::from_secs(30));
    // Wait for the first turn to end before the next prompt.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let accepted = web.prompt(&session, "/plan look again");
    assert_eq!(accepted["command"]["kind"], "success", "{accepted}");
    check(1, "Reloaded: plan only.");
}
