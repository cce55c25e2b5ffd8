//! The plugin-author tools through the real host: the headless profile with a `plugin-author`
//! row inserted by a patch layer, a scripted model and the real cargo. In one turn the model
//! scaffolds a `word-count` plugin, writes it from the skill's example with a mistake, reads
//! the compiler's message in the build's result, fixes it, builds, installs and calls the new
//! `word_count` tool; then a library that is no plugin is refused at install while the running
//! `word_count` keeps answering, a library rebuilt since its crate's build is refused, a new
//! version of the running plugin takes its place at once (its answer changes in the next
//! step), a version that fails in `apply` is rolled back to the one that ran, and a plugin that
//! panics in
//! `apply` is reported FAILED with its message and its fixed version takes its place. The
//! second test runs the `plugin-author` preset: its tools in its scope only, and what it
//! installed mounted again at the next start. Builds share a target directory under the
//! workspace's `target/`, so a second run finds the dependencies compiled; the times are
//! printed, not asserted.

use std::path::Path;
use std::time::Duration;

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::{patched_args, stream_json};
use dsh_tests::{HostProcess, TestDir, workspace_root};
use serde_json::{Value, json};

const EXAMPLE_TOML: &str =
    include_str!("../../plugins/plugin-author/skills/plugin-author/tool-plugin.Cargo.toml");
const EXAMPLE_RS: &str =
    include_str!("../../plugins/plugin-author/skills/plugin-author/tool-plugin.rs");

/// A cdylib with no plugin root module: what the host's check refuses.
const NOT_A_PLUGIN_RS: &str =
    "#[unsafe(no_mangle)]\npub extern \"C\" fn answer() -> u32 {\n    42\n}\n";

/// A plugin that waits for `tools` (so the check leaves it waiting) and panics once it has it.
const PANICKY_RS: &str = r#"use dsh_plugin_api::prelude::*;

pub struct Panicky;

impl Plugin for Panicky {
    const NAME: &'static str = "panicky";
    const INJECT: &'static [&'static str] = &["tools"];
    type Config = NoConfig;

    async fn apply(_ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        panic!("the word list is missing")
    }
}

dsh_plugin_api::export_plugins!(Panicky);
"#;

fn call(tool: &str, arguments: Value) -> (String, Value) {
    (tool.to_owned(), arguments)
}

/// The text of the tool result of `call_<index>` and whether it is an error.
fn result(events: &[Value], index: usize) -> (String, bool) {
    let id = format!("call_{index}");
    let event = events
        .iter()
        .filter(|event| event["type"] == "tool/result")
        .find(|event| event["data"]["message"]["content"][0]["toolCallId"] == id.as_str())
        .unwrap_or_else(|| panic!("no result for {id}"));
    let block = &event["data"]["message"]["content"][0];
    let text = block["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .map(|part| part["text"].as_str().unwrap_or_default())
                .collect::<String>()
        })
        .unwrap_or_default();
    (text, block["isError"] == true)
}

/// Seconds from the first event naming `call_<index>` (the model streaming it) to its result.
fn call_seconds(events: &[Value], index: usize) -> f64 {
    let id = format!("\"call_{index}\"");
    let start = events
        .iter()
        .find(|event| event.to_string().contains(&id))
        .and_then(|event| event["time"].as_i64());
    let end = events
        .iter()
        .filter(|event| event["type"] == "tool/result")
        .find(|event| event.to_string().contains(&id))
        .and_then(|event| event["time"].as_i64());
    match (start, end) {
        (Some(start), Some(end)) => (end - start) as f64 / 1000.0,
        _ => f64::NAN,
    }
}

/// The first number after `marker` in `text` (`"in 12.3 s"`).
fn seconds_after(text: &str, marker: &str) -> Option<f64> {
    let rest = &text[text.find(marker)? + marker.len()..];
    rest.split_whitespace().next()?.parse().ok()
}

#[test]
fn a_model_writes_builds_installs_and_calls_a_tool_plugin_in_one_turn() {
    let dir = TestDir::new("plugin-author");
    let root = workspace_root();
    // Shared between runs of this test: the second one finds the dependencies compiled.
    let target = root.join("target/plugin-author-builds");
    std::fs::create_dir_all(&target).unwrap();
    let source = root.display().to_string();
    let toml = EXAMPLE_TOML.replace("DSH_SOURCE", &source);
    let broken = EXAMPLE_RS.replace("let words = arguments", "let word = arguments");
    assert_ne!(broken, EXAMPLE_RS, "the mistake must change the example");
    let fixed_panicky = PANICKY_RS.replace(
        "panic!(\"the word list is missing\")",
        "dsh_plugin_api::tracing::info!(\"panicky fixed\");\n        Ok(())",
    );
    assert_ne!(fixed_panicky, PANICKY_RS);
    let upgraded = EXAMPLE_RS.replace("\"{words} words\"", "\"{words} words (v2)\"");
    assert_ne!(upgraded, EXAMPLE_RS);
    let failing = EXAMPLE_RS.replace(
        "        let tools = ctx.inject",
        "        if !config.scope.contains('\\u{0}') {\n            panic!(\"v3 does not start\");\n        }\n        let tools = ctx.inject",
    );
    assert_ne!(failing, EXAMPLE_RS);
    let calls = vec![
        call("plugin_new", json!({"name": "word-count"})),
        call("read", json!({"file_path": "word-count/Cargo.toml"})),
        call(
            "write",
            json!({"file_path": "word-count/Cargo.toml", "content": toml}),
        ),
        call("read", json!({"file_path": "word-count/src/lib.rs"})),
        call(
            "write",
            json!({"file_path": "word-count/src/lib.rs", "content": broken}),
        ),
        call("plugin_build", json!({"path": "word-count"})),
        call(
            "write",
            json!({"file_path": "word-count/src/lib.rs", "content": EXAMPLE_RS}),
        ),
        call("plugin_build", json!({"path": "word-count"})),
        call("plugin_install", json!({"path": "word-count"})),
        call("word_count", json!({"text": "one two  three\nfour"})),
        // A new version of `word-count` that is no plugin at all.
        call(
            "plugin_new",
            json!({"name": "word-count", "dir": "word-count-v2"}),
        ),
        call("read", json!({"file_path": "word-count-v2/src/lib.rs"})),
        call(
            "write",
            json!({"file_path": "word-count-v2/src/lib.rs", "content": NOT_A_PLUGIN_RS}),
        ),
        call("plugin_build", json!({"path": "word-count-v2"})),
        call("plugin_install", json!({"path": "word-count-v2"})),
        call("word_count", json!({"text": "still here"})),
        // The shared target directory now holds v2's library under the same name.
        call("plugin_install", json!({"path": "word-count"})),
        // v2 of the running plugin: it takes v1's place at once.
        call(
            "write",
            json!({"file_path": "word-count/src/lib.rs", "content": upgraded}),
        ),
        call("plugin_build", json!({"path": "word-count"})),
        call("plugin_install", json!({"path": "word-count"})),
        call("word_count", json!({"text": "a b c"})),
        // v3 fails in `apply`: v2 is put back and answers on.
        call(
            "write",
            json!({"file_path": "word-count/src/lib.rs", "content": failing}),
        ),
        call("plugin_build", json!({"path": "word-count"})),
        call("plugin_install", json!({"path": "word-count"})),
        call("word_count", json!({"text": "d e"})),
        // A plugin that panics in `apply`.
        call("plugin_new", json!({"name": "panicky"})),
        call("read", json!({"file_path": "panicky/src/lib.rs"})),
        call(
            "write",
            json!({"file_path": "panicky/src/lib.rs", "content": PANICKY_RS}),
        ),
        call("plugin_build", json!({"path": "panicky"})),
        call("plugin_install", json!({"path": "panicky"})),
        // Fixed, it takes the failed one's place: the host loads the replaced file afresh.
        call(
            "write",
            json!({"file_path": "panicky/src/lib.rs", "content": fixed_panicky}),
        ),
        call("plugin_build", json!({"path": "panicky"})),
        call("plugin_install", json!({"path": "panicky"})),
    ];
    let script = Reply::one_call_per_step(
        calls
            .iter()
            .map(|(tool, arguments)| (tool.as_str(), arguments)),
        "Done.",
    );
    let server = FakeDeepSeek::start(script);
    let home = dir.home();
    let rows = format!(
        "- insert:\n  - id: plugin-author\n    name: plugin-author\n    config:\n      targetDir: {target}\n\
         - id: sandbox\n  config:\n    hidden: [{home}]\n    exposed: [{home}/spill, {home}/skills]\n    writableRoots: [{target}]\n",
        target = target.display(),
        home = home.display(),
    );
    let mut args = patched_args(&server, &dir, &rows);
    args.extend(
        [
            "--output",
            "stream-json",
            "Write a word_count tool and use it.",
        ]
        .map(str::to_owned),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    let mut host = HostProcess::start_with_env(&home, &args, &[("DEEPSEEK_API_KEY", "sk-test")]);
    // A cold build compiles abi_stable and serde from scratch; a warm one takes seconds.
    let code = host.wait_exit(Duration::from_secs(900));
    let wall = started.elapsed().as_secs_f64();
    let stdout = host.stdout().join("\n");
    let stderr = host.stderr().join("\n");
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let (events, _) = stream_json(&stdout);
    let results: Vec<(String, bool)> = (0..calls.len())
        .map(|index| result(&events, index))
        .collect();
    let show = |index: usize| format!("call_{index}: {:?}", results[index]);

    // The skill reached the model's catalog: the row offers its folder (`skills/roots`), no
    // skills row lists it.
    assert!(
        lists_the_skill(&server.requests()[0]),
        "the skill is not in the catalog"
    );
    // Scaffolded from the template.
    assert!(
        !results[0].1 && results[0].0.contains("Created plugin crate `word-count`"),
        "{}",
        show(0)
    );
    assert!(dir.join("work/word-count/src/lib.rs").is_file());
    // It names the example to start from, readable where the skill is not listed.
    let example = root.join("plugins/plugin-author/skills/plugin-author/tool-plugin.rs");
    assert!(
        results[0].0.contains(&example.display().to_string()),
        "{}",
        show(0)
    );
    // The mistake comes back as the compiler's message.
    let (failed, is_error) = &results[5];
    assert!(*is_error, "{}", show(5));
    assert!(
        failed.contains("cargo build failed")
            && failed.contains("E0425")
            && failed.contains("words"),
        "{}",
        show(5)
    );
    // Fixed, built, installed: the tool is listed and answers in the next step.
    assert!(
        !results[7].1 && results[7].0.contains("libword_count.so"),
        "{}",
        show(7)
    );
    let (installed, is_error) = &results[8];
    assert!(
        !is_error && installed.contains("ACTIVE") && installed.contains("word_count"),
        "{}",
        show(8)
    );
    assert!(home.join("plugins/libword_count.so").is_file());
    assert_eq!(results[9], ("4 words".to_owned(), false), "{}", show(9));
    // A library that is no plugin is refused; the running version answers on.
    assert!(!results[13].1, "{}", show(13));
    let (refused, is_error) = &results[14];
    assert!(
        *is_error && refused.contains("refused") && refused.contains("not a dsh plugin library"),
        "{}",
        show(14)
    );
    assert_eq!(results[15], ("2 words".to_owned(), false), "{}", show(15));
    let (stale, is_error) = &results[16];
    assert!(
        *is_error && stale.contains("run plugin_build"),
        "{}",
        show(16)
    );
    assert!(!results[18].1, "{}", show(18));
    let (replaced, is_error) = &results[19];
    assert!(
        !is_error && replaced.contains("in place of fiber") && replaced.contains("ACTIVE"),
        "{}",
        show(19)
    );
    assert_eq!(
        results[20],
        ("3 words (v2)".to_owned(), false),
        "{}",
        show(20)
    );
    assert!(!results[22].1, "{}", show(22));
    let (rolled_back, is_error) = &results[23];
    assert!(
        *is_error
            && rolled_back.contains("v3 does not start")
            && rolled_back.contains("previous version runs again"),
        "{}",
        show(23)
    );
    assert_eq!(
        results[24],
        ("2 words (v2)".to_owned(), false),
        "{}",
        show(24)
    );
    assert!(!home.join("plugins/.libword_count.so.previous").exists());
    let listed = std::fs::read_to_string(home.join("plugin-author/installed.json")).unwrap();
    assert!(listed.contains("\"word_count\""), "{listed}");
    // A panic in `apply` is reported with its message.
    assert!(!results[28].1, "{}", show(28));
    let (panicked, is_error) = &results[29];
    assert!(
        *is_error && panicked.contains("FAILED") && panicked.contains("the word list is missing"),
        "{}",
        show(29)
    );
    assert!(Path::new(&home.join("plugins/libpanicky.so")).is_file());
    assert!(!results[31].1, "{}", show(31));
    let (fixed, is_error) = &results[32];
    assert!(
        !is_error && fixed.contains("ACTIVE") && fixed.contains("registered no tool"),
        "{}",
        show(32)
    );

    let build = seconds_after(&results[7].0, " in ");
    let first_build = seconds_after(&results[5].0, ", ");
    let check = seconds_after(installed, "checked in ");
    let mount = seconds_after(installed, "ACTIVE in ");
    for index in [5, 8, 14, 19, 23, 29] {
        eprintln!("--- {}", show(index));
    }
    let tool = |index: usize| call_seconds(&events, index);
    dsh_tests::figure("plugin_author_scaffold", tool(0), "s");
    dsh_tests::figure("plugin_author_first_build", tool(5), "s");
    dsh_tests::figure(
        "plugin_author_first_build_cargo",
        first_build.unwrap_or(f64::NAN),
        "s",
    );
    dsh_tests::figure("plugin_author_build", tool(7), "s");
    dsh_tests::figure("plugin_author_build_cargo", build.unwrap_or(f64::NAN), "s");
    dsh_tests::figure("plugin_author_install", tool(8), "s");
    dsh_tests::figure("plugin_author_first_call", tool(9), "s");
    eprintln!(
        "plugin-author loop (s): scaffold {:.2}; failing build {:.1} (cargo {first_build:?}); build {:.1} (cargo {build:?}); install {:.2} (host check {check:?}, mount to ACTIVE {mount:?}); first call {:.3}; v2 build {:.1}, refused install {:.2}; panicky build {:.1}, failed install {:.2}; whole run {wall:.1}",
        tool(0),
        tool(5),
        tool(7),
        tool(8),
        tool(9),
        tool(13),
        tool(14),
        tool(22),
        tool(23),
    );
}

/// The tool names a request offered.
/// Whether `request` carries a skills catalog naming the plugin-author skill.
fn lists_the_skill(request: &dsh_tests::fake_deepseek::RecordedRequest) -> bool {
    request
        .user_texts()
        .iter()
        .any(|text| text.contains("<available_skills>") && text.contains("`plugin-author`"))
}

fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_plugin_author_preset_offers_the_tools_in_its_scope_and_installs_into_it() {
    let dir = TestDir::new("plugin-author-preset");
    let root = workspace_root();
    let home = dir.home();
    // The preset's row builds into `$DSH_HOME/plugin-target`; here that is the directory the
    // first test shares, so the dependencies are compiled once.
    let shared = root.join("target/plugin-author-builds");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::os::unix::fs::symlink(&shared, home.join("plugin-target")).unwrap();
    // A crate name of its own: the first test builds `word-count` into the same directory at
    // the same time, and an install refuses a library rebuilt since its crate's build.
    let toml = EXAMPLE_TOML
        .replace("DSH_SOURCE", &root.display().to_string())
        .replace("name = \"word-count\"", "name = \"scoped-count\"");
    assert!(toml.contains("scoped-count"));
    let calls = [
        call("plugin_new", json!({"name": "scoped-count"})),
        call("read", json!({"file_path": "scoped-count/Cargo.toml"})),
        call(
            "write",
            json!({"file_path": "scoped-count/Cargo.toml", "content": toml}),
        ),
        call("read", json!({"file_path": "scoped-count/src/lib.rs"})),
        call(
            "write",
            json!({"file_path": "scoped-count/src/lib.rs", "content": EXAMPLE_RS}),
        ),
        call("plugin_build", json!({"path": "scoped-count"})),
        call("plugin_install", json!({"path": "scoped-count"})),
        call("word_count", json!({"text": "in scope"})),
    ];
    let mut script = Reply::one_call_per_step(
        calls
            .iter()
            .map(|(tool, arguments)| (tool.as_str(), arguments)),
        "Done.",
    );
    // A standard session after it, in the same home; then the preset again, after a restart.
    script.push(Reply::text("Standard."));
    script.push(Reply::tool_call(
        "call_restart",
        "word_count",
        json!({"text": "after a restart"}),
    ));
    script.push(Reply::text("Again."));
    let server = FakeDeepSeek::start(script);
    let rows = format!(
        "- id: sandbox\n  config:\n    hidden: [{home}]\n    exposed: [{home}/spill, {home}/skills]\n    writableRoots: [{home}/plugin-target]\n",
        home = home.display(),
    );
    let run = |preset: &str, prompt: &str| {
        let mut args = patched_args(&server, &dir, &rows);
        args.extend(["--preset", preset, "--output", "stream-json", prompt].map(str::to_owned));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut host =
            HostProcess::start_with_env(&home, &args, &[("DEEPSEEK_API_KEY", "sk-test")]);
        let code = host.wait_exit(Duration::from_secs(900));
        let stdout = host.stdout().join("\n");
        assert_eq!(code, Some(0), "{stdout}\n{}", host.stderr().join("\n"));
        stream_json(&stdout).0
    };
    let events = run("plugin-author", "Write a word_count tool and use it.");
    let requests = server.requests();
    let tools = offered(&requests[0].body);
    for name in ["plugin_new", "plugin_build", "plugin_install", "bash"] {
        assert!(tools.contains(&name.to_owned()), "{name} not in {tools:?}");
    }
    assert!(
        lists_the_skill(&requests[0]),
        "the preset's sessions are not told of the plugin-author skill"
    );
    let results: Vec<(String, bool)> = (0..calls.len())
        .map(|index| result(&events, index))
        .collect();
    assert!(!results[5].1, "{:?}", results[5]);
    assert!(
        !results[6].1 && results[6].0.contains("word_count"),
        "the installed plugin's tool is in the preset's scope: {:?}",
        results[6]
    );
    assert_eq!(results[7], ("2 words".to_owned(), false));
    // The step after the install offered the new tool; the first did not.
    assert!(!tools.contains(&"word_count".to_owned()));
    assert!(offered(&requests[7].body).contains(&"word_count".to_owned()));

    let _ = run("standard", "Hello.");
    let standard = offered(&server.requests().last().unwrap().body);
    assert!(standard.contains(&"bash".to_owned()), "{standard:?}");
    assert!(
        !standard.contains(&"plugin_new".to_owned()),
        "the standard preset is offered the plugin-author tools: {standard:?}"
    );
    assert!(!standard.contains(&"word_count".to_owned()), "{standard:?}");
    assert!(
        !lists_the_skill(server.requests().last().unwrap()),
        "a standard session is told of the plugin-author skill"
    );

    // The next start of the preset mounts what it installed again.
    let count = server.requests().len();
    let events = run("plugin-author", "Count again.");
    let again = &server.requests()[count];
    assert!(
        offered(&again.body).contains(&"word_count".to_owned()),
        "not offered after a restart: {:?}",
        offered(&again.body)
    );
    let result = events
        .iter()
        .find(|event| event["type"] == "tool/result")
        .map(|event| event["data"]["message"]["content"][0]["content"][0]["text"].clone());
    assert_eq!(result, Some(json!("3 words")));
}
