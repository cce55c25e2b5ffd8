//! A second client on an editor's live session, through the real `dsh-host --profile acp`: a
//! process attached to the host's client socket finds the editor's session, follows its turn
//! (the ask and its answer included), and prompts it, and the editor sees that turn as it
//! happens (the attached client's message included); a model chosen on either side shows on
//! the other. An ask of the editor's session goes to the editor and to the attached clients
//! that answer asks: the first answer wins, a later one is not accepted, and when an attached
//! client answers first the editor's question is withdrawn with `$/cancel_request`.

use std::time::{Duration, Instant};

use dsh_tests::acp::{asking_editor, config_option, editor_agent};
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::line_client::{LineClient, client_socket};
use dsh_tests::web::{turn_ended, undecided_card};
use dsh_tests::{TestDir, WAIT};
use serde_json::{Value, json};

const PRO: &str = "deepseek-official/deepseek-v4-pro";
const FLASH: &str = "deepseek-official/deepseek-v4-flash";

/// The last card of `kind` among `frames`, as it stands after them.
fn last_card(frames: &[Value], kind: &str) -> Option<Value> {
    frames
        .iter()
        .flat_map(|frame| frame["ops"].as_array().cloned().unwrap_or_default())
        .map(|op| op["item"].clone())
        .rfind(|item| item["kind"] == kind)
}

#[test]
fn a_socket_client_follows_and_prompts_an_editors_live_session() {
    let dir = TestDir::new("acp-attached");
    let command = json!({"command": "echo attached", "description": "Say it"});
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("call_1", "bash", command),
        Reply::text("first done"),
        Reply::text("second done"),
    ]);
    let mut agent = asking_editor(&server, &dir, "allow_once");
    let (session, _) = agent.open(&dir.join("work"));

    let path = client_socket(&dir.home(), agent.pid());
    let mut attached = LineClient::connect(&path);
    let hello = attached.call(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "second", "version": "0"},
               "features": ["approvals", "questions"]}),
    );
    assert_eq!(hello["host"]["profile"], "acp", "{hello}");
    assert_eq!(
        hello["features"],
        json!(["approvals", "questions"]),
        "an attached client may answer this host's asks: {hello}"
    );
    let listed = attached.call("session.list", json!({}));
    assert!(
        listed.to_string().contains(&session),
        "the editor's session is listed: {listed}"
    );
    attached.call("session.subscribe", json!({"sessionId": session}));
    attached.until(50, |frame| frame["type"] == "session/subscribed");

    // The editor's turn, with an ask the editor answers; the attached client follows it.
    let answer = agent.prompt(&session, "run it");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let asked = agent
        .frames()
        .into_iter()
        .filter(|frame| frame["method"] == "session/request_permission")
        .count();
    assert_eq!(asked, 1, "the editor was asked once");
    let mut seen = attached.until(300, |frame| {
        undecided_card(std::slice::from_ref(frame), "approval").is_some()
    });
    let ask = undecided_card(&seen, "approval").expect("the attached client sees the ask");
    seen.extend(attached.until(300, turn_ended));
    let decided = last_card(&seen, "approval").expect("the ask's card");
    assert_eq!(decided["outcome"], "allowed-once", "{decided}");
    let tool = last_card(&seen, "tool").expect("the call's card");
    assert_eq!(tool["status"], "ok", "{tool}");
    // The editor answered first: a later answer is not taken.
    let late = attached.call(
        "approval.respond",
        json!({"approvalId": ask["id"], "outcome": "rejected"}),
    );
    assert_eq!(late["accepted"], false, "{late}");

    // A model chosen on either side shows on the other.
    attached.call(
        "session.selectModel",
        json!({"sessionId": session, "model": PRO}),
    );
    let options = agent.wait_frame("the model the attached client chose", WAIT, |frame| {
        frame["params"]["update"]["sessionUpdate"] == "config_option_update"
    });
    let model = &options["params"]["update"]["configOptions"][0];
    assert_eq!(
        (&model["id"], &model["currentValue"]),
        (&json!("model"), &json!(PRO)),
        "{options}"
    );
    let set = agent.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "model", "value": FLASH}),
    );
    assert_eq!(
        set["result"]["configOptions"][0]["currentValue"], FLASH,
        "{set}"
    );
    let shown = attached.until(50, |frame| {
        frame["type"] == "session/projection" && frame["value"]["model"] == FLASH
    });
    assert_eq!(shown.last().unwrap()["sessionId"], session.as_str());
    let announced = agent
        .frames()
        .iter()
        .filter(|frame| frame["params"]["update"]["sessionUpdate"] == "config_option_update")
        .count();
    assert_eq!(
        announced, 1,
        "the editor's own choice is answered, not announced"
    );

    // The attached client prompts; the editor sees its message and the answer stream in.
    let before = agent.updates(&session).len();
    attached.call(
        "session.prompt",
        json!({"sessionId": session, "text": "and again"}),
    );
    attached.until(300, turn_ended);
    let deadline = Instant::now() + WAIT;
    let (said, answered) = loop {
        let updates = agent.updates(&session);
        let texts = |kind: &str| -> String {
            updates[before..]
                .iter()
                .filter(|update| update["sessionUpdate"] == kind)
                .filter_map(|update| update["content"]["text"].as_str())
                .collect()
        };
        let (said, answered) = (texts("user_message_chunk"), texts("agent_message_chunk"));
        if answered == "second done" || Instant::now() > deadline {
            break (said, answered);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        (said.as_str(), answered.as_str()),
        ("and again", "second done"),
        "the editor sees the attached client's turn"
    );
    // Its own prompts are not echoed back to it.
    let echoed = agent
        .updates(&session)
        .iter()
        .any(|update| update["content"]["text"] == "run it");
    assert!(!echoed, "the editor's own prompt is not sent back to it");
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
    assert!(!path.exists(), "the socket goes with the host");
}

#[test]
fn an_agent_preset_an_attached_client_chooses_shows_in_the_editor() {
    let dir = TestDir::new("acp-attached-preset");
    let server = FakeDeepSeek::start(Vec::new());
    let mut agent = editor_agent(&server, &dir, "", &[]);
    let (session, _) = agent.open(&dir.join("work"));
    let mut attached = LineClient::connect(&client_socket(&dir.home(), agent.pid()));
    attached.call(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "second", "version": "0"}}),
    );
    attached.call(
        "agentPreset.select",
        json!({"sessionId": session, "presetId": "minimal"}),
    );
    let update = agent.wait_frame("the preset the attached client chose", WAIT, |frame| {
        frame["params"]["update"]["sessionUpdate"] == "config_option_update"
    });
    let options = &update["params"]["update"]["configOptions"];
    assert_eq!(
        config_option(options, "agent_preset")["currentValue"],
        "minimal",
        "{update}"
    );
    // The editor's own choice is answered, not announced as well.
    let set = agent.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "agent_preset", "value": "code"}),
    );
    assert_eq!(
        config_option(&set["result"]["configOptions"], "agent_preset")["currentValue"],
        "code",
        "{set}"
    );
    let announced = agent
        .frames()
        .iter()
        .filter(|frame| frame["params"]["update"]["sessionUpdate"] == "config_option_update")
        .count();
    assert_eq!(announced, 1, "{:#?}", agent.frames());
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

#[test]
fn an_attached_client_answers_first_and_the_editors_question_is_withdrawn() {
    let dir = TestDir::new("acp-attached-answers");
    let command = json!({"command": "echo answered elsewhere", "description": "Say it"});
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("call_1", "bash", command),
        Reply::text("done"),
    ]);
    // An editor that shows the question and leaves it open.
    let mut agent = asking_editor(&server, &dir, "ignore");
    let (session, _) = agent.open(&dir.join("work"));
    let mut attached = LineClient::connect(&client_socket(&dir.home(), agent.pid()));
    attached.call(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "second", "version": "0"},
               "features": ["approvals"]}),
    );
    attached.call("session.subscribe", json!({"sessionId": session}));
    attached.until(50, |frame| frame["type"] == "session/subscribed");

    let prompt = agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "run it"}]}),
    );
    let mut seen = attached.until(300, |frame| {
        undecided_card(std::slice::from_ref(frame), "approval").is_some()
    });
    let ask = undecided_card(&seen, "approval").expect("the attached client sees the ask");
    let question = agent.wait_frame("the editor's question", WAIT, |frame| {
        frame["method"] == "session/request_permission"
    });
    let taken = attached.call(
        "approval.respond",
        json!({"approvalId": ask["id"], "outcome": "allowed-once"}),
    );
    assert_eq!(taken["accepted"], true, "{taken}");
    let answer = agent.response(prompt, WAIT);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    seen.extend(attached.until(300, turn_ended));
    let decided = last_card(&seen, "approval").expect("the ask's card");
    assert_eq!(decided["outcome"], "allowed-once", "{decided}");
    let tool = last_card(&seen, "tool").expect("the call's card");
    assert_eq!(tool["status"], "ok", "{tool}");
    // The editor's question is withdrawn, by its id.
    let withdrawn = agent.wait_frame("the question withdrawn", WAIT, |frame| {
        frame["method"] == "$/cancel_request"
    });
    assert_eq!(
        withdrawn["params"]["requestId"], question["id"],
        "{withdrawn}"
    );
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}
