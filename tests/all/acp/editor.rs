//! Editor mode (the profile's default) through the real host and the fake DeepSeek server:
//! what Zed and the other ACP clients show (streamed text and thoughts, tool calls with their
//! kind, files, input, status and output or diff, the plan, the context meter, the commands),
//! the session's modes and model option, the four permission answers, and stored sessions
//! listed, loaded (replayed as updates before the answer) and resumed.

use dsh_tests::acp::{config_option, editor_agent, offered_values};
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::{TestDir, WAIT};
use serde_json::{Value, json};

fn of_kind<'a>(updates: &'a [Value], kind: &str) -> Vec<&'a Value> {
    updates
        .iter()
        .filter(|update| update["sessionUpdate"] == kind)
        .collect()
}

/// The texts of the chunks of `kind`, joined.
fn joined(updates: &[Value], kind: &str) -> String {
    of_kind(updates, kind)
        .iter()
        .filter_map(|update| update["content"]["text"].as_str())
        .collect()
}

/// The updates of tool call `id`, in order.
fn call_updates<'a>(updates: &'a [Value], id: &str) -> Vec<&'a Value> {
    updates
        .iter()
        .filter(|update| update["toolCallId"] == id)
        .collect()
}

/// A session just opened: its modes are the permission presets (this one full access), its
/// model an option, and the commands a person can run come after the answer.
fn opened_as_an_editor_sees_it(agent: &mut dsh_tests::acp::AcpClient, opened: &Value) {
    let result = &opened["result"];
    assert_eq!(
        result["modes"]["currentModeId"], "danger-full-access",
        "{opened}"
    );
    let modes: Vec<&str> = result["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|mode| mode["id"].as_str())
        .collect();
    assert_eq!(
        modes,
        [
            "read-only",
            "workspace-write",
            "danger-full-access",
            "ask-every-command",
            "plan"
        ]
    );
    let model = &result["configOptions"][0];
    assert_eq!(model["id"], "model", "{opened}");
    assert_eq!(model["currentValue"], "deepseek-official/deepseek-v4-flash");
    // The commands a person can run come after the session is open.
    let commands = agent.wait_frame("the commands", WAIT, |frame| {
        frame["params"]["update"]["sessionUpdate"] == "available_commands_update"
    });
    let names: Vec<&str> = commands["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|command| command["name"].as_str())
        .collect();
    assert!(
        names.contains(&"compact") && names.contains(&"help"),
        "{names:?}"
    );
}

#[test]
fn an_editor_sees_the_turn_as_it_happens() {
    let dir = TestDir::new("acp-editor-turn");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "one\ntwo\n").unwrap();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("call_read", "read", json!({"file_path": "notes.txt"})),
        Reply::tool_call(
            "call_edit",
            "edit",
            json!({"file_path": "notes.txt", "old_string": "two", "new_string": "three"}),
        ),
        Reply::tool_call(
            "call_bash",
            "bash",
            json!({"command": "echo TERMINAL_OK", "description": "Say it"}),
        ),
        Reply::tool_call(
            "call_todo",
            "todo_write",
            json!({"todos": [
                {"content": "Edit the notes", "status": "completed"},
                {"content": "Check them", "status": "in_progress"}
            ]}),
        ),
        Reply::reasoning_then_text("The notes are edited.", "All done: two is three."),
    ]);
    let mut agent = editor_agent(
        &server,
        &dir,
        "",
        &[("DSH_PERMISSION_MODE", "danger-full-access")],
    );
    let (session, opened) = agent.open(&work);
    opened_as_an_editor_sees_it(&mut agent, &opened);
    let answer = agent.prompt(&session, "Tidy the notes");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let updates = agent.updates(&session);
    assert_eq!(
        joined(&updates, "agent_thought_chunk"),
        "The notes are edited."
    );
    assert_eq!(
        joined(&updates, "agent_message_chunk"),
        "All done: two is three."
    );
    // Chunks arrive as the model streams them, not as one block.
    assert!(of_kind(&updates, "agent_message_chunk").len() > 1);

    let notes = work.join("notes.txt").display().to_string();
    let read = call_updates(&updates, "call_read");
    assert_eq!(read[0]["sessionUpdate"], "tool_call");
    assert_eq!(read[0]["kind"], "read");
    assert_eq!(read[0]["title"], "Read notes.txt");
    assert_eq!(read[0]["locations"][0]["path"], notes.as_str());
    assert_eq!(read[0]["rawInput"]["file_path"], "notes.txt");
    let statuses: Vec<&str> = read.iter().filter_map(|u| u["status"].as_str()).collect();
    assert_eq!(
        statuses,
        ["pending", "in_progress", "completed"],
        "{read:?}"
    );

    let edit = call_updates(&updates, "call_edit");
    assert_eq!(edit[0]["kind"], "edit");
    let closed = edit.last().unwrap();
    assert_eq!(closed["status"], "completed", "{closed}");
    let diff = &closed["content"][0];
    assert_eq!(diff["type"], "diff", "{closed}");
    assert_eq!(diff["path"], notes.as_str());
    assert!(
        diff["oldText"].as_str().unwrap().contains("two")
            && diff["newText"].as_str().unwrap().contains("three"),
        "{diff}"
    );

    let bash = call_updates(&updates, "call_bash");
    assert_eq!(
        (&bash[0]["kind"], &bash[0]["title"]),
        (&json!("execute"), &json!("Say it"))
    );
    let output = &bash.last().unwrap()["content"][0]["content"]["text"];
    assert!(output.as_str().unwrap().contains("TERMINAL_OK"), "{bash:?}");

    let plan = of_kind(&updates, "plan");
    assert_eq!(
        plan.last().unwrap()["entries"],
        json!([
            {"content": "Edit the notes", "priority": "medium", "status": "completed"},
            {"content": "Check them", "priority": "medium", "status": "in_progress"}
        ])
    );
    let usage = of_kind(&updates, "usage_update");
    let last = usage.last().expect("a usage update");
    assert!(
        last["used"].as_u64().unwrap() > 0
            && last["size"].as_u64().unwrap() > last["used"].as_u64().unwrap(),
        "{last}"
    );
    // Every update came before the prompt's answer.
    let frames = agent.frames();
    let answered = frames
        .iter()
        .position(|frame| {
            frame
                .get("result")
                .is_some_and(|r| r.get("stopReason").is_some())
        })
        .unwrap();
    assert!(
        frames[answered..]
            .iter()
            .all(|frame| frame["method"] != "session/update")
    );
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

/// A bash call asking for `danger-full-access`, which the session (workspace-write) must ask
/// a person about.
fn escalated(id: &str, command: &str) -> Reply {
    Reply::tool_call(
        id,
        "bash",
        json!({
            "command": command,
            "description": "write beside the workspace",
            "sandbox_permissions": "danger-full-access",
            "justification": "the test needs a file outside",
        }),
    )
}

#[test]
fn permission_answers_hold_once_or_for_the_session() {
    dsh_tests::needs_bubblewrap!("the sandbox's escalations");
    let dir = TestDir::new("acp-editor-permissions");
    let outside = dir.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let write = |name: &str| format!("echo ok > {}", outside.join(name).display());
    let server = FakeDeepSeek::start(vec![
        escalated("call_1", &write("a")),
        escalated("call_2", &write("a")),
        escalated("call_3", &write("b")),
        escalated("call_4", &write("c")),
        escalated("call_5", &write("c")),
        Reply::text("done"),
    ]);
    let mut agent = editor_agent(
        &server,
        &dir,
        "",
        &[("DSH_PERMISSION_MODE", "workspace-write")],
    );
    for kind in ["allow_always", "reject_once", "reject_always"] {
        agent.answers.lock().unwrap().push_back(kind.to_owned());
    }
    let (session, _) = agent.open(&dir.join("work"));
    let answer = agent.prompt(&session, "write them");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let asked: Vec<Value> = agent
        .frames()
        .into_iter()
        .filter(|frame| frame["method"] == "session/request_permission")
        .collect();
    let asked_calls: Vec<&str> = asked
        .iter()
        .filter_map(|frame| frame["params"]["toolCall"]["toolCallId"].as_str())
        .collect();
    // call_2 repeats call_1's command: "allow always" covered it; call_5 repeats call_4's,
    // which "reject always" covered.
    assert_eq!(asked_calls, ["call_1", "call_3", "call_4"], "{asked:#?}");
    let kinds: Vec<&str> = asked[0]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|option| option["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    assert_eq!(asked[0]["params"]["toolCall"]["kind"], "execute");
    assert_eq!(
        asked[0]["params"]["toolCall"]["rawInput"]["sandbox_permissions"],
        "danger-full-access"
    );
    assert!(outside.join("a").exists(), "{:?}", server.last_tool_texts());
    assert!(!outside.join("b").exists() && !outside.join("c").exists());
    let updates = agent.updates(&session);
    let status = |id: &str| {
        call_updates(&updates, id)
            .last()
            .and_then(|update| update["status"].as_str())
            .map(str::to_owned)
    };
    assert_eq!(status("call_2").as_deref(), Some("completed"));
    assert_eq!(status("call_3").as_deref(), Some("failed"));
    assert_eq!(status("call_5").as_deref(), Some("failed"));
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

#[test]
fn the_reasoning_effort_is_an_option_the_client_sets() {
    let dir = TestDir::new("acp-editor-effort");
    let server = FakeDeepSeek::start(vec![Reply::text("thought a little")]);
    let mut agent = editor_agent(&server, &dir, "", &[]);
    let (session, opened) = agent.open(&dir.join("work"));
    let options = &opened["result"]["configOptions"];
    let effort = config_option(options, "effort");
    assert_eq!(effort["category"], "thought_level", "{opened}");
    let offered = offered_values(effort);
    assert!(
        offered.contains(&"low") && offered.contains(&"max"),
        "{offered:?}"
    );
    let set = agent.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "effort", "value": "low"}),
    );
    let chosen = config_option(&set["result"]["configOptions"], "effort");
    assert_eq!(chosen["currentValue"], "low", "{set}");
    let refused = agent.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "effort", "value": "extreme"}),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("offers"),
        "the refusal says what the model offers: {refused}"
    );
    agent.prompt(&session, "think a little");
    let sent = server.requests();
    assert_eq!(sent[0].body["reasoning_effort"], "low", "{}", sent[0].body);
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

#[test]
fn modes_and_the_model_are_set_by_the_client() {
    let dir = TestDir::new("acp-editor-modes");
    let server = FakeDeepSeek::start(vec![Reply::text("hello")]);
    let mut agent = editor_agent(&server, &dir, "", &[]);
    let (session, opened) = agent.open(&dir.join("work"));
    assert_eq!(
        opened["result"]["modes"]["currentModeId"],
        "workspace-write"
    );
    let set = agent.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "read-only"}),
    );
    assert_eq!(set["result"], json!({}), "{set}");
    agent.wait_frame("the mode's update", WAIT, |frame| {
        frame["params"]["update"]
            == json!({"sessionUpdate": "current_mode_update", "currentModeId": "read-only"})
    });
    let bad = agent.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "yolo"}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"].as_str().unwrap().contains("modeId"),
        "{bad}"
    );
    let model = agent.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "model", "value": "deepseek-official/deepseek-v4-pro"}),
    );
    assert_eq!(
        model["result"]["configOptions"][0]["currentValue"], "deepseek-official/deepseek-v4-pro",
        "{model}"
    );
    let unknown = agent.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "speed", "value": "fast"}),
    );
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("configId"),
        "{unknown}"
    );
    agent.prompt(&session, "hi");
    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].body["model"], "deepseek-v4-pro", "{}", sent[0].body);
    // A prompt that is a command runs it for the person; the model is not asked.
    let answer = agent.prompt(&session, "/help");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(server.requests().len(), 1);
    let help = agent
        .updates(&session)
        .into_iter()
        .rev()
        .find(|update| update["sessionUpdate"] == "agent_message_chunk")
        .unwrap();
    assert!(
        help["content"]["text"]
            .as_str()
            .unwrap()
            .contains("/compact"),
        "{help}"
    );
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

/// `/undo` is a command the agent runs for the person: the last turn's write is taken back and
/// the outcome is the answer's text; the model is not asked.
#[test]
fn slash_undo_takes_the_last_turns_write_back() {
    let dir = TestDir::new("acp-editor-undo");
    let write = json!({"file_path": "notes.txt", "content": "draft\n"}).to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_w", "write", &write)]),
        Reply::text("Wrote the notes."),
    ]);
    let mut agent = editor_agent(&server, &dir, "", &[]);
    let (session, _) = agent.open(&dir.join("work"));
    let done = agent.prompt(&session, "write the notes");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let notes = dir.join("work/notes.txt");
    assert_eq!(
        std::fs::read_to_string(&notes).ok().as_deref(),
        Some("draft\n")
    );
    let undone = agent.prompt(&session, "/undo");
    assert_eq!(undone["result"]["stopReason"], "end_turn", "{undone}");
    let said = agent
        .updates(&session)
        .into_iter()
        .rev()
        .find(|update| update["sessionUpdate"] == "agent_message_chunk")
        .unwrap();
    assert_eq!(
        said["content"]["text"], "Undid turn 1: 1 path(s) put back: notes.txt.",
        "{said}"
    );
    assert!(!notes.exists(), "the written file is gone again");
    assert_eq!(server.requests().len(), 2, "/undo did not reach the model");
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

#[test]
fn stored_sessions_are_listed_loaded_and_resumed() {
    let dir = TestDir::new("acp-editor-load");
    let work = dir.join("work");
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("call_1", "bash", json!({"command": "echo FIRST"})),
        Reply::text("The first answer."),
        Reply::text("The second answer."),
        Reply::text("The third answer."),
    ]);
    let mut first = editor_agent(
        &server,
        &dir,
        "",
        &[("DSH_PERMISSION_MODE", "danger-full-access")],
    );
    let (session, _) = first.open(&work);
    first.prompt(&session, "Say FIRST");
    first.close();
    assert_eq!(first.wait_exit(WAIT), Some(0));

    let mut second = editor_agent(
        &server,
        &dir,
        "",
        &[("DSH_PERMISSION_MODE", "danger-full-access")],
    );
    second.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let listed = second.call("session/list", json!({"cwd": work}));
    let sessions = listed["result"]["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["sessionId"], session.as_str());
    assert_eq!(sessions[0]["cwd"], work.to_str().unwrap());
    assert_eq!(sessions[0]["title"], "Say FIRST", "{listed}");
    let elsewhere = second.call("session/list", json!({"cwd": "/nowhere"}));
    assert_eq!(elsewhere["result"]["sessions"], json!([]), "{elsewhere}");

    let id = second.request(
        "session/load",
        json!({"sessionId": session, "cwd": work, "mcpServers": []}),
    );
    let loaded = second.response(id, WAIT);
    assert!(loaded["result"]["modes"].is_object(), "{loaded}");
    // The conversation came back as updates, all before the answer.
    let frames = second.frames();
    let answered = frames
        .iter()
        .position(|frame| frame["id"] == id && frame.get("result").is_some())
        .unwrap();
    let replayed: Vec<Value> = frames[..answered]
        .iter()
        .filter(|frame| frame["method"] == "session/update")
        .map(|frame| frame["params"]["update"].clone())
        .collect();
    let kinds: Vec<&str> = replayed
        .iter()
        .filter_map(|update| update["sessionUpdate"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ],
        "{replayed:#?}"
    );
    assert_eq!(replayed[0]["content"]["text"], "Say FIRST");
    assert_eq!(replayed[3]["content"]["text"], "The first answer.");
    // The loaded session goes on with its history.
    second.prompt(&session, "And again");
    let sent = server.requests();
    assert!(
        sent[2].user_texts().iter().any(|text| text == "Say FIRST"),
        "{:?}",
        sent[2].user_texts()
    );
    second.close();
    assert_eq!(second.wait_exit(WAIT), Some(0));

    let mut third = editor_agent(
        &server,
        &dir,
        "",
        &[("DSH_PERMISSION_MODE", "danger-full-access")],
    );
    third.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let resumed = third.call("session/resume", json!({"sessionId": session, "cwd": work}));
    assert!(resumed["result"]["modes"].is_object(), "{resumed}");
    assert!(
        third
            .updates(&session)
            .iter()
            .all(|update| update["sessionUpdate"] == "available_commands_update"),
        "resume replays nothing: {:?}",
        third.updates(&session)
    );
    let answer = third.prompt(&session, "Once more");
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert!(
        server.requests()[3]
            .user_texts()
            .iter()
            .any(|text| text == "And again")
    );
    let missing = third.call(
        "session/load",
        json!({"sessionId": "no-such-session", "cwd": work, "mcpServers": []}),
    );
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    third.close();
    assert_eq!(third.wait_exit(WAIT), Some(0));
}

#[test]
fn the_agent_preset_is_a_config_option_chosen_before_the_first_turn() {
    let dir = TestDir::new("acp-editor-preset");
    let folder = dir.home().join("agent-presets/reader");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("preset.yml"),
        "name: Reader\ntools:\n  allow: [read]\n",
    )
    .unwrap();
    std::fs::write(folder.join("agent.yml"), "[]\n").unwrap();
    let server = FakeDeepSeek::start(vec![Reply::text("reading")]);
    let mut agent = editor_agent(&server, &dir, "", &[]);
    let (session, opened) = agent.open(&dir.join("work"));
    let preset = config_option(&opened["result"]["configOptions"], "agent_preset");
    assert_eq!(preset["currentValue"], "standard", "{preset}");
    let offered = offered_values(preset);
    assert!(
        offered.contains(&"minimal") && offered.contains(&"reader"),
        "{offered:?}"
    );
    let set = agent.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "agent_preset", "value": "reader"}),
    );
    let chosen = config_option(&set["result"]["configOptions"], "agent_preset");
    assert_eq!(chosen["currentValue"], "reader", "{set}");
    let unknown = agent.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "agent_preset", "value": "nope"}),
    );
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("no agent preset `nope`"),
        "{unknown}"
    );
    agent.prompt(&session, "look");
    let sent = server.requests();
    let tools: Vec<&str> = sent[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read"], "{}", sent[0].body);
    let late = agent.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "agent_preset", "value": "standard"}),
    );
    assert!(
        late["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("before the first one"),
        "{late}"
    );
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}
