//! `ask_user_question` through the real `dsh-host`: headless, with no one to ask, the call
//! fails at once and the model is told to go on; in the web profile a person answers it over
//! the API (`question.respond`), the first answer wins, and the history keeps the card decided.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use serde_json::json;

use crate::escalation::tool_texts;
use crate::headless::against;

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
    let texts = tool_texts(&server);
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(
        texts[0].starts_with("\"Error: no person can be asked in this session")
            && texts[0].contains("state the open question in your answer"),
        "{texts:?}"
    );
}
