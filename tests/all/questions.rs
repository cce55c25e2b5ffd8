//! `ask_user_question` through the real `dsh-host`: headless, with no one to ask, the call
//! fails at once and the model is told to go on; in the web profile a person answers it over
//! the API (`question.respond`), the first answer wins, and the history keeps the card decided.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::against;
use dsh_tests::web::{start, turn_ended, undecided_card};
use serde_json::json;

fn questions() -> String {
    json!({"questions": [
        {"id": "db", "header": "Storage", "question": "Which database should the service use?",
         "options": [{"label": "SQLite", "description": "one file, no server"}, {"label": "Postgres"}]},
        {"id": "extras", "question": "Which extras are wanted?", "multi_select": true,
         "options": [{"label": "Metrics"}, {"label": "Tracing"}, {"label": "Backups"}]},
        {"id": "name", "question": "What should the service be called?"}
    ]})
    .to_string()
}

#[test]
fn headless_refuses_at_once_and_tells_the_model_to_go_on() {
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_q", "ask_user_question", &questions())]),
        Reply::text("went on without an answer"),
    ]);
    let dir = TestDir::new("questions-headless");
    let out = against(&server, &dir, &["plan the service"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, "went on without an answer");
    let requests = server.requests();
    assert!(
        requests[0].body["tools"]
            .to_string()
            .contains("\"ask_user_question\""),
        "the tool is on by default"
    );
    let texts = server.last_tool_texts();
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(
        texts[0].starts_with("Error: no person can be asked in this session")
            && texts[0].contains("state the open question in your answer"),
        "{texts:?}"
    );
}

#[test]
fn a_person_answers_over_the_api_and_the_history_keeps_it_decided() {
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_q", "ask_user_question", &questions())]),
        Reply::text("SQLite it is"),
    ]);
    let dir = TestDir::new("questions-web");
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "plan the service"}),
    );
    let frames = socket.until(300, |frame| {
        undecided_card(std::slice::from_ref(frame), "question").is_some()
    });
    let card = undecided_card(&frames, "question").unwrap();
    assert_eq!(card["questions"][0]["header"], "Storage");
    assert_eq!(card["questions"][1]["multi_select"], true);
    let answers = json!([
        {"id": "db", "selected": ["SQLite"]},
        {"id": "extras", "selected": ["Metrics", "Backups"]},
        {"id": "name", "text": "ledger"}
    ]);
    let receipt = web.call(
        "question.respond",
        &json!({"questionId": card["id"], "answers": answers}),
    );
    assert_eq!(receipt["accepted"], true, "{receipt}");
    socket.until(300, turn_ended);
    let late = web.call(
        "question.respond",
        &json!({"questionId": card["id"], "cancelled": true}),
    );
    assert_eq!(late["accepted"], false, "the first answer wins: {late}");
    let texts = server.last_tool_texts();
    assert_eq!(
        texts[0],
        "The person answered:\n\n[db] Which database should the service use?\nAnswer: SQLite\n\n[extras] Which extras are wanted?\nAnswer: Metrics, Backups\n\n[name] What should the service be called?\nAnswer: ledger"
    );
    // A reload shows the card decided, with what was answered.
    let history = web.call("session.history", &json!({"sessionId": session}));
    let item = history["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["kind"] == "question")
        .cloned()
        .unwrap_or_else(|| panic!("no question card: {history}"));
    assert_eq!(item["outcome"]["outcome"], "answered", "{item}");
    assert_eq!(item["outcome"]["answers"], answers, "{item}");
    assert_eq!(web.host.stop(), Some(0));
}
