//! Plan mode through the real `dsh-host` (web profile, the scripted fake DeepSeek): `/plan`
//! puts the session in plan mode, the model's write and writing command are refused with a
//! result that says it is planning, its `exit_plan_mode` plan comes to the page as an approval
//! card carrying the plan; approved, plan mode ends and the same write runs; kept planning
//! with a note, the note reaches the model, which presents another plan.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::sessions::{PLAIN_STORE, read_log, session_logs};
use dsh_tests::web::{Web, WebHost, turn_ended, undecided_card};
use serde_json::{Value, json};

const WAIT: std::time::Duration = std::time::Duration::from_secs(30);

const PLAN: &str = "# Add a.txt\n\n1. Write `a.txt` with `hello`.\n2. Check it reads back.";

/// The web profile against `server`, working in `dir/work`, its logs stored as plain JSONL.
fn start_in_workspace(server: &FakeDeepSeek, dir: &TestDir) -> Web {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let layer = format!(
        "- id: llm-deepseek\n  config:\n    baseURL: {}\n{PLAIN_STORE}",
        server.url()
    );
    Web::from(WebHost::start(
        dir,
        &layer,
        &["--cwd", work.to_str().unwrap()],
        &[("DEEPSEEK_API_KEY", "sk-test")],
    ))
}

fn plan_call(plan: &str) -> String {
    json!({ "plan": plan }).to_string()
}

fn write_call() -> String {
    json!({"file_path": "a.txt", "content": "hello\n"}).to_string()
}

/// Waits for the plan review card (an undecided approval of `exit_plan_mode`).
fn review_card(socket: &mut dsh_tests::http::Socket) -> Value {
    let frames = socket.until(300, |frame| {
        undecided_card(std::slice::from_ref(frame), "approval").is_some()
    });
    let card = undecided_card(&frames, "approval").unwrap();
    assert_eq!(card["toolName"], "exit_plan_mode", "{card}");
    card
}

fn system_prompt(server: &FakeDeepSeek, request: usize) -> String {
    server.requests()[request].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn planning(web: &Web, session: &str) {
    let accepted = web.prompt(session, "/plan");
    assert_eq!(accepted["command"]["kind"], "success", "{accepted}");
    assert!(
        accepted["command"]["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Plan mode on"),
        "{accepted}"
    );
}

#[test]
fn plan_mode_refuses_writes_and_an_approved_plan_is_carried_out() {
    let dir = TestDir::new("plan-mode-approved");
    let writing_command = json!({"command": "echo x > b.txt", "description": "write b"});
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[
            ("call_w", "write", &write_call()),
            ("call_b", "bash", &writing_command.to_string()),
        ]),
        Reply::tool_calls(&[("call_p", "exit_plan_mode", &plan_call(PLAN))]),
        Reply::tool_calls(&[("call_w2", "write", &write_call())]),
        Reply::text("done"),
    ]);
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    // `/plan TEXT` turns plan mode on and sends TEXT as the person's message.
    let accepted = web.prompt(&session, "/plan add a.txt");
    assert_eq!(accepted["command"]["kind"], "success", "{accepted}");
    let card = review_card(&mut socket);
    assert_eq!(card["reason"], PLAN, "the card carries the plan: {card}");
    assert!(
        server.requests()[0]
            .user_texts()
            .iter()
            .any(|text| text == "add a.txt"),
        "the message reached the model"
    );
    // Nothing was written while planning, and the model was told why.
    assert!(!dir.join("work/a.txt").exists());
    assert!(!dir.join("work/b.txt").exists());
    let refused = server.requests()[1].tool_texts();
    assert!(
        refused[0].contains("plan mode: `write` is not run")
            && refused[0].contains("exit_plan_mode"),
        "{refused:?}"
    );
    assert!(
        refused[1].contains("plan mode: this command is not run")
            && refused[1].contains("an output redirect"),
        "{refused:?}"
    );
    assert!(system_prompt(&server, 0).contains("# Plan mode"));
    let receipt = web.call(
        "approval.respond",
        &json!({"approvalId": card["id"], "outcome": "allowed-once"}),
    );
    assert_eq!(receipt["accepted"], true, "{receipt}");
    socket.until(300, turn_ended);
    assert_eq!(
        std::fs::read_to_string(dir.join("work/a.txt"))
            .ok()
            .as_deref(),
        Some("hello\n"),
        "{:?}",
        server.last_tool_texts()
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let approved = requests[2].tool_texts();
    assert!(
        approved
            .last()
            .is_some_and(|text| text.starts_with("The person approved the plan")),
        "{approved:?}"
    );
    assert!(
        !system_prompt(&server, 2).contains("# Plan mode"),
        "the policy left the prompt with plan mode"
    );
    // The log keeps both changes of mode.
    let modes = plan_modes(&dir, &session, 2);
    assert_eq!(modes, [true, false], "{modes:?}");
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_plan_kept_with_a_note_is_planned_again() {
    let dir = TestDir::new("plan-mode-kept");
    let second = "# Add a.txt, tested\n\n1. Write `a.txt`.\n2. Cover the error path.";
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_p1", "exit_plan_mode", &plan_call(PLAN))]),
        Reply::tool_calls(&[("call_p2", "exit_plan_mode", &plan_call(second))]),
        Reply::text("still planning"),
        Reply::text("building now"),
    ]);
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    planning(&web, &session);
    web.prompt(&session, "add a.txt");
    let first = review_card(&mut socket);
    web.call(
        "approval.respond",
        &json!({"approvalId": first["id"], "outcome": "rejected", "note": "cover the error path"}),
    );
    let again = review_card(&mut socket);
    assert_ne!(again["id"], first["id"]);
    assert_eq!(again["reason"], second);
    let kept = server.requests()[1].tool_texts();
    assert!(
        kept[0].contains("keep planning") && kept[0].ends_with("Their note: cover the error path"),
        "{kept:?}"
    );
    // Kept again without a note: still planning, and the model is told to revise.
    web.call(
        "approval.respond",
        &json!({"approvalId": again["id"], "outcome": "rejected"}),
    );
    socket.until(300, turn_ended);
    let last = server.last_tool_texts();
    assert!(
        last[1].contains("revise the plan") && !last[1].contains("Their note"),
        "{last:?}"
    );
    assert!(system_prompt(&server, 2).contains("# Plan mode"));
    assert_eq!(plan_modes(&dir, &session, 1), [true]);
    // The page's history keeps the note with the decision.
    let history = web.call("session.history", &json!({"sessionId": session}));
    let reviews: Vec<&Value> = history["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["kind"] == "approval")
        .collect();
    assert_eq!(reviews.len(), 2, "{history}");
    assert_eq!(reviews[0]["outcome"], "rejected");
    assert_eq!(reviews[0]["note"], "cover the error path");
    assert!(reviews[1].get("note").is_none(), "{}", reviews[1]);
    // `/plan off` leaves without a review.
    let off = web.prompt(&session, "/plan off");
    assert_eq!(off["command"]["kind"], "success", "{off}");
    assert_eq!(plan_modes(&dir, &session, 2), [true, false]);
    // The model was asked things while planning, so the next request also says the mode
    // changed, and its prompt no longer carries the policy.
    web.prompt(&session, "go ahead");
    socket.until(300, turn_ended);
    let last = server.requests().len() - 1;
    let users = server.requests()[last].user_texts();
    assert!(
        users
            .iter()
            .any(|text| text.contains("switched this session out of plan mode")),
        "{users:?}"
    );
    assert!(!system_prompt(&server, last).contains("# Plan mode"));
    assert_eq!(web.host.stop(), Some(0));
}

/// The `plan/mode` values of `session`'s log, in order, once there are `expected` of them (the
/// log is flushed at the store's pace; waited for at most 10 s).
fn plan_modes(dir: &TestDir, session: &str, expected: usize) -> Vec<bool> {
    let mut modes = Vec::new();
    for _ in 0..100 {
        modes = session_logs(&dir.home().join("sessions"))
            .iter()
            .filter(|path| path.to_string_lossy().contains(session))
            .flat_map(|path| read_log(path).1)
            .filter(|event| event["type"] == "plan/mode")
            .map(|event| event["data"]["active"].as_bool().unwrap_or_default())
            .collect();
        if modes.len() >= expected {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    modes
}

/// The page (real Chromium): the plan chip, a refused write, the review card kept with a
/// note and then approved, the write carried out (`tests/web/plan.mjs`; screenshots under
/// `target/screenshots/plan-*`).
#[test]
fn the_page_reviews_a_plan() {
    let write = json!({"file_path": "notes.txt", "content": "first line\n"}).to_string();
    let first = "# Add notes.txt\n\n1. Write notes.txt.\n2. Check it reads back.";
    let second =
        "# Add notes.txt\n\n1. Write notes.txt holding `first line`.\n2. Check it reads back.";
    let Some((server, dir)) = crate::browser::scenario_in(
        "plan",
        vec![
            Reply::tool_calls(&[("call_w", "write", &write)]),
            Reply::tool_calls(&[("call_p1", "exit_plan_mode", &plan_call(first))]),
            Reply::tool_calls(&[("call_p2", "exit_plan_mode", &plan_call(second))]),
            Reply::tool_calls(&[("call_w2", "write", &write)]),
            Reply::text("Done."),
        ],
        "",
        &[("DEEPSEEK_API_KEY", "sk-test")],
        &[],
        &[],
    ) else {
        return;
    };
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        5,
        "the chip's /plan never reached the model"
    );
    let kept = requests[2].tool_texts();
    assert!(
        kept.last()
            .is_some_and(|text| text.ends_with("Their note: say what the file holds")),
        "{kept:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("work/notes.txt"))
            .ok()
            .as_deref(),
        Some("first line\n")
    );
}

/// ACP (editor mode, the `acp` profile): `/plan` is a command the agent runs, and the plan
/// comes to the client as a `session/request_permission` carrying it, with the review's two
/// choices; "keep planning" brings another plan, "approve" lets the write run.
#[test]
fn an_acp_client_reviews_the_plan_as_a_permission_request() {
    let dir = TestDir::new("plan-mode-acp");
    let second = "# Add a.txt\n\n1. Write `a.txt` holding `hello`.";
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_p1", "exit_plan_mode", &plan_call(PLAN))]),
        Reply::tool_calls(&[("call_p2", "exit_plan_mode", &plan_call(second))]),
        Reply::tool_calls(&[("call_w", "write", &write_call())]),
        Reply::text("done"),
    ]);
    let mut agent = dsh_tests::acp::editor_agent(&server, &dir, "", &[]);
    for kind in ["reject_once", "allow_once"] {
        agent.answers.lock().unwrap().push_back(kind.to_owned());
    }
    let (session, _) = agent.open(&dir.join("work"));
    let planning = agent.prompt(&session, "/plan");
    assert_eq!(planning["result"]["stopReason"], "end_turn", "{planning}");
    assert!(server.requests().is_empty(), "/plan reached the model");
    let answer = agent.prompt(&session, "add a.txt");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let asked: Vec<Value> = agent
        .frames()
        .into_iter()
        .filter(|frame| frame["method"] == "session/request_permission")
        .map(|frame| frame["params"].clone())
        .collect();
    assert_eq!(asked.len(), 2, "{asked:#?}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "call_p1");
    assert_eq!(asked[0]["toolCall"]["title"], "Plan: Add a.txt");
    assert_eq!(asked[0]["toolCall"]["content"][0]["content"]["text"], PLAN);
    assert_eq!(
        asked[1]["toolCall"]["content"][0]["content"]["text"],
        second
    );
    let kinds: Vec<&str> = asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|option| option["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["allow_once", "reject_once"]);
    let kept = server.requests()[1].tool_texts();
    assert!(kept[0].contains("keep planning"), "{kept:?}");
    // The editor's mode followed: plan mode from `/plan`, the preset again once approved.
    let modes: Vec<Value> = agent
        .updates(&session)
        .into_iter()
        .filter(|update| update["sessionUpdate"] == "current_mode_update")
        .map(|update| update["currentModeId"].clone())
        .collect();
    assert_eq!(modes.len(), 2, "{modes:?}");
    assert_eq!(modes[0], "plan");
    assert_ne!(modes[1], "plan");
    assert_eq!(
        std::fs::read_to_string(dir.join("work/a.txt"))
            .ok()
            .as_deref(),
        Some("hello\n"),
        "{:?}",
        server.last_tool_texts()
    );
}

/// In an editor, plan mode is one of the session's modes (where its row is mounted):
/// `session/set_mode plan` turns it on as `/plan` would (the next request carries the
/// policy, the mode update comes back), and a chosen preset leaves it.
#[test]
fn an_editor_chooses_plan_mode_among_the_modes() {
    let dir = TestDir::new("plan-mode-acp-modes");
    let server = FakeDeepSeek::start(vec![Reply::text("a plan"), Reply::text("changed")]);
    let mut agent = dsh_tests::acp::editor_agent(&server, &dir, "", &[]);
    let (session, opened) = agent.open(&dir.join("work"));
    let modes: Vec<&str> = opened["result"]["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|mode| mode["id"].as_str())
        .collect();
    assert_eq!(modes.last(), Some(&"plan"), "{opened}");
    let mode_update =
        |id: &str| json!({"sessionUpdate": "current_mode_update", "currentModeId": id});
    let set = agent.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "plan"}),
    );
    assert_eq!(set["result"], json!({}), "{set}");
    agent.wait_frame("plan mode's update", WAIT, |frame| {
        frame["params"]["update"] == mode_update("plan")
    });
    agent.prompt(&session, "add a.txt");
    let asked = &server.requests()[0].body;
    assert!(asked.to_string().contains("# Plan mode"), "{asked}");
    // Chosen again while on, nothing changes; a preset leaves plan mode, then applies.
    let again = agent.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "plan"}),
    );
    assert_eq!(again["result"], json!({}), "{again}");
    let set = agent.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "read-only"}),
    );
    assert_eq!(set["result"], json!({}), "{set}");
    agent.wait_frame("the preset's update", WAIT, |frame| {
        frame["params"]["update"] == mode_update("read-only")
    });
    let updates: Vec<Value> = agent
        .updates(&session)
        .into_iter()
        .filter(|update| update["sessionUpdate"] == "current_mode_update")
        .collect();
    assert_eq!(
        updates.last().map(|update| update["currentModeId"].clone()),
        Some(json!("read-only")),
        "{updates:?}"
    );
    agent.prompt(&session, "go on");
    let asked = &server.requests()[1].body;
    assert!(!asked.to_string().contains("# Plan mode"), "{asked}");
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
    // Without the plan-mode row there is no plan mode to choose.
    let mut agent =
        dsh_tests::acp::editor_agent(&server, &dir, "- id: plan-mode\n  disabled: true\n", &[]);
    let (session, opened) = agent.open(&dir.join("work"));
    let modes = opened["result"]["modes"]["availableModes"].to_string();
    assert!(!modes.contains("\"plan\""), "{modes}");
    let refused = agent.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "plan"}),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

/// Headless has no one to review a plan. A session put in plan mode in the page and resumed
/// headless (`--resume`) keeps planning: under the default preset its `exit_plan_mode` is
/// refused (`unavailable`) and the model is told to end with the plan; under
/// `danger-full-access`, whose approval policy is `never` (nothing is put to a person), the
/// plan is approved as presented and the write runs.
#[test]
fn headless_refuses_a_review_or_approves_it_under_full_access() {
    for (mode, approved) in [(None, false), (Some("danger-full-access"), true)] {
        let dir = TestDir::new(&format!("plan-mode-headless-{approved}"));
        let server = FakeDeepSeek::start(vec![
            Reply::tool_calls(&[("call_p", "exit_plan_mode", &plan_call(PLAN))]),
            Reply::tool_calls(&[("call_w", "write", &write_call())]),
            Reply::text("finished"),
        ]);
        let mut web = start_in_workspace(&server, &dir);
        let session = web.new_session();
        planning(&web, &session);
        assert_eq!(plan_modes(&dir, &session, 1), [true]);
        assert_eq!(web.host.stop(), Some(0));
        let envs: Vec<(&str, &str)> = mode
            .map(|mode| ("DSH_PERMISSION_MODE", mode))
            .into_iter()
            .collect();
        let out = dsh_tests::headless::against_patched(
            &server,
            &dir,
            PLAIN_STORE,
            &["--resume", &session, "add a.txt"],
            &envs,
        );
        assert_eq!(out.code, Some(0), "{out:?}");
        let review = server.requests()[1].tool_texts();
        let written = dir.join("work/a.txt").exists();
        if approved {
            assert!(review[0].contains("approved as presented"), "{review:?}");
            assert!(written, "{:?}", server.last_tool_texts());
            assert_eq!(plan_modes(&dir, &session, 2), [true, false]);
        } else {
            assert!(
                review[0].contains("No one can review the plan here"),
                "{review:?}"
            );
            // Still planning: the write the model tried next was refused.
            let refused = server.last_tool_texts();
            assert!(
                refused[1].contains("plan mode: `write` is not run"),
                "{refused:?}"
            );
            assert!(!written);
            assert_eq!(plan_modes(&dir, &session, 1), [true]);
        }
    }
}
