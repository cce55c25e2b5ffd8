//! The browser app in a real headless Chromium (Debian's `chromium`, driven by playwright-core
//! from `tests/web`), against the real `dsh-host --profile web` and the fake DeepSeek server.
//! Screenshots of the states a scenario reaches go to `target/screenshots/`. `cargo xtask test`
//! installs the browser and the driver where they are missing; where it could not, it says why
//! in `DSH_BROWSER_SKIP` and these tests are skipped with that reason.

use std::process::Command;

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::products::codex_double;
use dsh_tests::web::{ASKING_POLICY, browser, fake_model_layer};
use dsh_tests::{HostProcess, TestDir, WAIT, workspace_root};
use serde_json::json;

/// Runs scenario `name` of `tests/web/scenarios.mjs` against a web host whose model answers
/// `replies`, with `rows` (YAML list items) inserted into its tree.
fn scenario(name: &str, replies: Vec<Reply>, rows: &str) -> Option<FakeDeepSeek> {
    scenario_with(name, replies, rows, &[("DEEPSEEK_API_KEY", "sk-test")], &[])
}

/// [`scenario`] with the host's environment given; answers the fake server (to read what it
/// was sent), or `None` when the scenario was skipped.
fn scenario_with(
    name: &str,
    replies: Vec<Reply>,
    rows: &str,
    envs: &[(&str, &str)],
    node_envs: &[(&str, &str)],
) -> Option<FakeDeepSeek> {
    scenario_in(name, replies, rows, envs, node_envs, &[]).map(|(server, _)| server)
}

/// [`scenario_with`] in a working directory that holds `files` (relative path, text) from
/// the start; answers the fake server and the test's directory.
pub(crate) fn scenario_in(
    name: &str,
    replies: Vec<Reply>,
    rows: &str,
    envs: &[(&str, &str)],
    node_envs: &[(&str, &str)],
    files: &[(&str, &str)],
) -> Option<(FakeDeepSeek, TestDir)> {
    let (scripts, chromium) = match browser() {
        Ok(found) => found,
        Err(reason) => {
            dsh_tests::skip(&format!("browser scenario `{name}`"), &reason);
            return None;
        }
    };
    let server = FakeDeepSeek::start(replies);
    let dir = TestDir::new(&format!("browser-{name}"));
    let patch = dir.write("fake.patch.yml", &fake_model_layer(&server.url(), rows));
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    for (path, text) in files {
        dir.write(&format!("work/{path}"), text);
    }
    let mut host = HostProcess::start_with_env(
        &dir.home(),
        &[
            "--patch",
            patch.to_str().unwrap(),
            "--profile",
            "web",
            "--",
            "--no-open",
            "--port",
            "0",
            "--cwd",
            work.to_str().unwrap(),
        ],
        envs,
    );
    let line = host.wait_stdout("dsh web: open http://", WAIT);
    let url = line.trim_start_matches("dsh web: open ").trim().to_owned();
    let shots = workspace_root().join("target/screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let out = Command::new("node")
        .arg(scripts.join("scenarios.mjs"))
        .args([name, url.as_str(), shots.to_str().unwrap()])
        .env("DSH_CHROMIUM", &chromium)
        .env("DSH_SERVER_URL", server.url())
        .envs(node_envs.iter().copied())
        .current_dir(&work)
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let listing: Vec<String> = std::fs::read_dir(&work)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        out.status.success(),
        "scenario `{name}` failed:\n{stderr}\n{stdout}\nwork dir: {listing:?}\nhost stderr:\n{}",
        host.stderr().join("\n")
    );
    assert!(stdout.contains(&format!("scenario {name}: ok")), "{stdout}");
    assert_eq!(host.stop(), Some(0));
    if name == "write" {
        let written = std::fs::read_to_string(work.join("notes.txt")).expect("the written file");
        assert_eq!(written, "first line\nsecond row");
    }
    Some((server, dir))
}

#[test]
fn a_prompt_streams_an_answer_with_reasoning_and_a_terminal_card() {
    let command = json!({"command": "echo from-the-shell", "description": "say it"}).to_string();
    scenario(
        "chat",
        vec![
            Reply::tool_calls(&[("call_1", "bash", &command)]),
            Reply::reasoning_then_text("The shell answered.", "It printed `from-the-shell`."),
        ],
        "",
    );
}

#[test]
fn with_no_key_the_page_asks_for_one_and_the_next_prompt_uses_it() {
    let Some(server) = scenario_with(
        "onboarding",
        vec![Reply::text("hi there")],
        "",
        &[("DEEPSEEK_API_KEY", "")],
        &[],
    ) else {
        return;
    };
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-from-the-page")
    );
}

#[test]
fn an_approval_is_answered_in_the_page_after_a_reload() {
    dsh_tests::plugin_lib("hooks_probe");
    let command = json!({"command": "echo approved-run", "description": "say it"}).to_string();
    scenario(
        "approval",
        vec![
            Reply::tool_calls(&[("call_1", "bash", &command)]),
            Reply::text("done"),
        ],
        ASKING_POLICY,
    );
}

#[test]
fn a_question_is_answered_in_the_page_and_the_model_gets_the_answers() {
    let questions = json!({"questions": [
        {"id": "db", "header": "Storage", "question": "Which database should the service use?",
         "options": [{"label": "SQLite", "description": "one file, no server"}, {"label": "Postgres", "description": "a server to run"}]},
        {"id": "extras", "question": "Which extras are wanted?", "multi_select": true,
         "options": [{"label": "Metrics"}, {"label": "Tracing"}, {"label": "Backups"}]},
        {"id": "name", "question": "What should the service be called?"}
    ]})
    .to_string();
    let Some(server) = scenario(
        "question",
        vec![
            Reply::tool_calls(&[("call_q", "ask_user_question", &questions)]),
            Reply::text("SQLite it is."),
        ],
        "",
    ) else {
        return;
    };
    let texts = server.last_tool_texts();
    assert!(
        texts[0].contains("Answer: Metrics, Backups") && texts[0].contains("Answer: ledger"),
        "{texts:?}"
    );
}

#[test]
fn the_offline_demo_replays_the_recorded_session_with_a_real_shell() {
    let Some(server) = scenario_with("demo", Vec::new(), "", &[("DEEPSEEK_API_KEY", "")], &[])
    else {
        return;
    };
    assert!(
        server.requests().is_empty(),
        "the demo reached the network model"
    );
}

#[test]
fn a_session_is_forked_renamed_and_deleted_from_the_page() {
    scenario("manage", vec![Reply::text("the first answer")], "");
}

#[test]
fn a_long_answer_is_cancelled_mid_stream_and_keeps_what_arrived() {
    use dsh_tests::fake_deepseek::{SseEvent, first_chunk};
    let slow = Reply::Sse(vec![
        first_chunk(),
        SseEvent::content("the beginning of a long answer"),
        SseEvent::Pause(std::time::Duration::from_secs(20)),
        SseEvent::content(" that never ends"),
        SseEvent::Done,
    ]);
    scenario("cancel", vec![slow], "");
}

#[test]
fn two_tabs_share_a_session_and_an_answer_given_in_one() {
    dsh_tests::plugin_lib("hooks_probe");
    let command = json!({"command": "echo approved-run", "description": "say it"}).to_string();
    scenario(
        "tabs",
        vec![
            Reply::tool_calls(&[("call_1", "bash", &command)]),
            Reply::text("done"),
        ],
        ASKING_POLICY,
    );
}

#[test]
fn a_written_file_shows_as_a_diff_and_is_written_where_the_session_works() {
    let arguments =
        json!({"file_path": "notes.txt", "content": "first line\nsecond line"}).to_string();
    let edit =
        json!({"file_path": "notes.txt", "old_string": "second line", "new_string": "second row"})
            .to_string();
    scenario(
        "write",
        vec![
            Reply::tool_calls(&[("call_1", "write", &arguments)]),
            Reply::tool_calls(&[("call_2", "edit", &edit)]),
            Reply::text("written"),
        ],
        "",
    );
}

/// An answer with every kind of block a model writes, long enough to stream for a while, with
/// markup of its own that must not take effect.
fn markdown_answer() -> String {
    let mut text = String::from(
        "# Results 你好\n\n\
         | Tool | Calls | What it did, in a cell long enough to make the table wider than a phone |\n\
         |---|---:|---|\n\
         | bash | 12 | ran the tests, built the crate, and listed the folder more than once |\n\
         | read | 3 | read `plugins/session-persistence-jsonl/src/trash_of_the_deleted_sessions.rs` |\n\n\
         - [x] parse the config\n- [ ] write the tests\n\n\
         > A quoted line.\n\n\
         ```rust\nfn main() {\n    let answer = 42;\n    println!(\"{answer}\");\n}\n```\n\n\
         <script>window.injected = true</script>\n\n\
         A [bad link](javascript:window.injected=true) and [the docs](https://example.com/docs).\n\n",
    );
    for n in 1..=30 {
        text.push_str(&format!(
            "Paragraph {n} goes on with **bold**, `code` and *emphasis*.\n\n"
        ));
    }
    text
}

#[test]
fn an_answer_in_markdown_is_rendered_highlighted_and_sanitized_while_it_streams() {
    scenario("markdown", vec![Reply::text(&markdown_answer())], "");
}

#[test]
fn a_code_fence_longer_than_the_tail_limit_streams_into_the_page_as_appends() {
    use dsh_tests::fake_deepseek::{SseEvent, first_chunk, usage};
    let gate_dir = TestDir::new("browser-longtail-gate");
    let gate = gate_dir.join("go");
    // Twelve pieces of about 2 KiB: the open fence passes the 16 KiB limit part way.
    let mut events = vec![first_chunk(), SseEvent::content("The file:\n\n```rust\n")];
    for n in 0..12 {
        let piece = format!("// piece {n}\n{}", "let x = 1;\n".repeat(180));
        events.push(SseEvent::content(&piece));
    }
    events.push(SseEvent::Gate(gate.clone()));
    events.push(SseEvent::content("// the end\n```\n\nDone."));
    events.push(SseEvent::finish_with_usage("stop", &usage(10, 5, 0, None)));
    events.push(SseEvent::Done);
    scenario_with(
        "longtail",
        vec![Reply::Sse(events)],
        "",
        &[("DEEPSEEK_API_KEY", "sk-test")],
        &[("DSH_GATE", gate.to_str().unwrap())],
    );
}

#[test]
fn the_settings_store_a_key_used_at_once_and_save_the_endpoint() {
    let Some(server) = scenario_with(
        "settings",
        vec![Reply::text("hello back")],
        "",
        &[("DEEPSEEK_API_KEY", "")],
        &[],
    ) else {
        return;
    };
    // The endpoint saved is this server's own (so the prompt reaches it whether or not the
    // adapter has reloaded yet), and the prompt carried the key saved in the page.
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-in-settings")
    );
}

#[test]
fn settings_plugins_turn_a_row_on_and_another_off_without_a_restart() {
    let Some((_server, dir)) = scenario_in("plugins", Vec::new(), "", &[], &[], &[]) else {
        return;
    };
    // What the page wrote: the rows' switches in the settings document, the layers untouched.
    let settings = std::fs::read_to_string(dir.home().join("settings.yaml")).unwrap();
    let namespace = |id: &str| -> Vec<String> {
        settings
            .lines()
            .skip_while(|line| *line != format!("{id}:"))
            .skip(1)
            .take_while(|line| line.starts_with(' '))
            .map(|line| line.trim().replace(['\'', '"'], ""))
            .collect()
    };
    assert_eq!(namespace("time-context"), ["$enabled: true"], "{settings}");
    assert_eq!(
        namespace("session-title"),
        ["$enabled: false"],
        "{settings}"
    );
}

#[test]
fn a_rejected_approval_does_not_run_and_the_model_is_told() {
    dsh_tests::plugin_lib("hooks_probe");
    let command = json!({"command": "touch rejected-ran", "description": "mark"}).to_string();
    let Some(server) = scenario(
        "reject",
        vec![
            Reply::tool_calls(&[("call_1", "bash", &command)]),
            Reply::text("It was not run."),
        ],
        ASKING_POLICY,
    ) else {
        return;
    };
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let tool = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .expect("the call is answered")
        .clone();
    assert!(
        tool["content"]
            .to_string()
            .to_lowercase()
            .contains("reject"),
        "{tool}"
    );
    server.assert_no_violations();
}

#[test]
fn prompts_are_steered_queued_edited_and_removed_from_the_page() {
    // The first step runs until the page has acted on the queue (the scenario writes `go`;
    // bounded at 60 s).
    let wait = "for i in $(seq 600); do [ -e go ] && break; sleep 0.1; done";
    let command = json!({"command": wait, "description": "wait for the page"}).to_string();
    let Some(server) = scenario(
        "queue",
        vec![
            Reply::tool_calls(&[("call_1", "bash", &command)]),
            Reply::text("steered answer"),
            Reply::text("edited answer"),
        ],
        "",
    ) else {
        return;
    };
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let sent = |index: usize| requests[index].body["messages"].to_string();
    assert!(sent(1).contains("steer me"), "{}", sent(1));
    assert!(sent(2).contains("queued, edited"), "{}", sent(2));
    assert!((0..3).all(|index| !sent(index).contains("drop me")));
    server.assert_no_violations();
}

#[test]
fn a_dropped_event_socket_resumes_with_no_gap_and_no_duplicate() {
    use dsh_tests::fake_deepseek::{SseEvent, first_chunk};
    let words: Vec<String> = (1..=150).map(|n| format!("w{n:03}")).collect();
    let mut events = vec![first_chunk()];
    for word in &words {
        events.push(SseEvent::content(&format!("{word} ")));
        events.push(SseEvent::Pause(std::time::Duration::from_millis(10)));
    }
    events.extend([SseEvent::finish("stop"), SseEvent::Done]);
    let expected = words.join(" ");
    scenario_with(
        "dropped",
        vec![Reply::Sse(events)],
        "",
        &[("DEEPSEEK_API_KEY", "sk-test")],
        &[("DSH_EXPECTED_TEXT", &expected)],
    );
}

/// The composer's effort picker: the model's efforts with its default marked; `max` chosen
/// there reaches the session's next request, and a reload shows it again.
#[test]
fn the_effort_picker_sets_the_sessions_reasoning_effort() {
    let Some(server) = scenario(
        "effort",
        vec![Reply::text("first answer"), Reply::text("thought hard")],
        "",
    ) else {
        return;
    };
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert!(
        sent[0].body.get("reasoning_effort").is_none(),
        "{}",
        sent[0].body
    );
    assert_eq!(sent[1].body["reasoning_effort"], "max", "{}", sent[1].body);
    server.assert_no_violations();
}

#[test]
fn the_permission_selector_governs_the_sessions_next_calls() {
    dsh_tests::needs_bubblewrap!("the permission selector (its read-only preset needs bubblewrap)");
    let write =
        json!({"command": "echo made > made.txt", "description": "make a file"}).to_string();
    let Some(server) = scenario(
        "preset",
        vec![
            Reply::tool_calls(&[("call_1", "bash", &write)]),
            Reply::text("could not"),
            Reply::tool_calls(&[("call_2", "bash", &write)]),
            Reply::text("made it"),
        ],
        "",
    ) else {
        return;
    };
    assert_eq!(server.requests().len(), 4);
    server.assert_no_violations();
}

#[test]
fn the_command_menu_lists_commands_and_runs_one_without_the_model() {
    let Some(server) = scenario("commands", Vec::new(), "") else {
        return;
    };
    assert!(server.requests().is_empty(), "a command reached the model");
}

/// A folder with its own `.mcp.json` and hook file: the page asks whether to trust it; the
/// answer is remembered in the dsh home and the question does not come back.
#[test]
fn a_folders_own_configuration_waits_until_the_page_is_told_to_trust_it() {
    let Some((_, dir)) = scenario_in(
        "trust",
        Vec::new(),
        "",
        &[("DEEPSEEK_API_KEY", "sk-test")],
        &[],
        &[
            (".mcp.json", "{\"mcpServers\": {}}"),
            (".claude/settings.json", "{\"hooks\": {}}"),
        ],
    ) else {
        return;
    };
    let remembered = std::fs::read_to_string(dir.home().join("trusted-projects.json")).unwrap();
    let work = dir.join("work").canonicalize().unwrap();
    assert!(remembered.contains(work.to_str().unwrap()), "{remembered}");
}

#[test]
fn background_jobs_are_listed_in_the_header_and_stopped_from_there() {
    let endless =
        json!({"command": "sleep 30", "description": "endless", "run_in_background": true});
    let quick = json!({"command": "echo hi", "description": "quick", "run_in_background": true});
    scenario(
        "jobs",
        vec![
            Reply::tool_calls(&[
                ("call_1", "bash", &endless.to_string()),
                ("call_2", "bash", &quick.to_string()),
            ]),
            Reply::text("started them"),
            // The step or turn bash-2's notice opens.
            Reply::text("noted"),
        ],
        "",
    );
}

#[test]
fn a_product_childs_card_shows_its_task_and_answer() {
    let task =
        json!({"description": "Review the change", "prompt": "Review the change in src/lib.rs."});
    let rows = codex_double(&[]);
    scenario(
        "product",
        vec![
            Reply::tool_calls(&[("call_1", "subagent_codex", &task.to_string())]),
            Reply::text("PARENT_DONE"),
        ],
        &rows,
    );
}

#[test]
fn a_subagents_conversation_opens_under_its_card() {
    let task = json!({"description": "Say the word", "prompt": "Reply with CHILD_OK.", "run_in_background": false});
    scenario(
        "delegate",
        vec![
            Reply::tool_calls(&[("call_1", "subagent", &task.to_string())]),
            Reply::text("CHILD_OK"),
            Reply::text("PARENT_DONE"),
        ],
        "",
    );
}

/// An answer long enough to scroll at every width.
fn long_answer() -> String {
    (1..=60)
        .map(|n| format!("Paragraph {n}: the answer goes on, line after line."))
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[test]
fn the_page_keeps_its_composer_drawer_header_and_place_at_three_widths() {
    scenario(
        "layout",
        vec![Reply::text(&long_answer()), Reply::text("One more answer.")],
        "",
    );
}

#[test]
fn back_and_forward_move_between_sessions_and_an_address_opens_one() {
    scenario(
        "navigation",
        vec![Reply::text("First answer."), Reply::text("Second answer.")],
        "",
    );
}

#[test]
fn the_list_holds_conversations_by_activity_and_the_search_looks_in_their_messages() {
    scenario(
        "sessions",
        vec![
            Reply::text("The tests fail because the capital is Paris, not Lyon."),
            Reply::text("Hello."),
        ],
        "",
    );
}

#[test]
fn at_completes_the_sessions_files_as_git_lists_them_and_the_model_gets_the_path() {
    let Some((server, _dir)) = scenario_in(
        "mentions",
        vec![Reply::text("I will read it.")],
        "",
        &[("DEEPSEEK_API_KEY", "sk-test")],
        &[],
        &[
            ("src/main.rs", "fn main() {}\n"),
            ("src/domain.rs", "pub struct Domain;\n"),
            ("build/main.o", "object"),
            (".gitignore", "build/\n"),
        ],
    ) else {
        return;
    };
    let sent = server.requests();
    let prompts: Vec<String> = sent
        .iter()
        .flat_map(|request| request.user_texts())
        .collect();
    assert!(
        prompts
            .iter()
            .any(|text| text == "look at @src/main.rs please"),
        "{prompts:?}"
    );
}

#[test]
fn the_controls_follow_the_session_whoever_changes_it_and_a_new_session_starts_from_defaults() {
    scenario("controls", Vec::new(), "");
}

#[test]
fn a_page_whose_sign_in_is_no_longer_taken_says_how_to_get_back_in() {
    scenario("signedout", Vec::new(), "");
}

/// `/goal` from the composer puts up the goal bar; Pause, Resume, Complete and Clear work from
/// it while rounds run (screenshots of the bar running, paused and complete).
#[test]
fn the_goal_bar_shows_the_goal_and_pauses_resumes_completes_and_clears_it() {
    use dsh_tests::fake_deepseek::{SseEvent, first_chunk, usage};
    let slow = |text: &str, ms: u64| {
        Reply::Sse(vec![
            first_chunk(),
            SseEvent::content("Working"),
            SseEvent::Pause(std::time::Duration::from_millis(ms)),
            SseEvent::content(text),
            SseEvent::finish_with_usage("stop", &usage(10, 5, 0, None)),
            SseEvent::Done,
        ])
    };
    let Some(server) = scenario(
        "goal",
        vec![
            // Long enough that Pause and Complete land while their round runs, screenshots
            // and all, on a loaded machine (a round that ended first would start another).
            slow(": round 1 drafted the outline.", 20000),
            slow(": round 2 filled it in.", 10000),
        ],
        "",
    ) else {
        return;
    };
    let rounds: Vec<String> = server
        .requests()
        .iter()
        .filter_map(|request| request.user_texts().pop())
        .collect();
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    assert!(rounds[1].contains("Round: 2/256"), "{rounds:?}");
}
