//! The reasoning-effort choice through the web profile against the fake DeepSeek server: the
//! catalog lists each model's efforts and its default, a session chooses one with its model
//! (`session.selectModel`), `session.models` says which, and the session's next requests carry
//! it on the wire (`off`: thinking disabled); an effort the model does not offer is refused,
//! naming what it offers; another model drops the choice; a choice outlives a restart.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::web::{start, turn_ended};
use serde_json::json;

const FLASH: &str = "deepseek-official/deepseek-v4-flash";
const PRO: &str = "deepseek-official/deepseek-v4-pro";

#[test]
fn a_session_chooses_its_models_reasoning_effort() {
    let server = FakeDeepSeek::start(vec![
        Reply::text("thought hard"),
        Reply::text("did not think"),
        Reply::text("on another model"),
    ]);
    let dir = TestDir::new("reasoning-effort");
    let mut web = start(&server, &dir);
    let listed = web.call("session.models", &json!({}));
    let flash = listed["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|model| model["route"] == FLASH)
        .cloned()
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(
        flash["efforts"],
        json!(["off", "low", "high", "max"]),
        "{flash}"
    );
    assert_eq!(flash["defaultEffort"], "high", "{flash}");

    let (session, mut socket) = web.followed_session();
    web.call(
        "session.selectModel",
        &json!({"sessionId": session, "model": FLASH, "effort": "max"}),
    );
    let now = web.call("session.models", &json!({"sessionId": session}));
    assert_eq!(
        (now["current"].as_str(), now["effort"].as_str()),
        (Some(FLASH), Some("max")),
        "{now}"
    );
    web.prompt(&session, "think hard");
    socket.until(300, turn_ended);
    let sent = server.requests();
    assert_eq!(sent[0].body["reasoning_effort"], "max", "{}", sent[0].body);
    assert_eq!(
        sent[0].body["thinking"],
        json!({"type": "enabled"}),
        "{}",
        sent[0].body
    );

    // `off` turns thinking off.
    web.call(
        "session.selectModel",
        &json!({"sessionId": session, "model": FLASH, "effort": "off"}),
    );
    web.prompt(&session, "do not think");
    socket.until(300, turn_ended);
    let sent = server.requests();
    assert_eq!(
        sent[1].body["thinking"],
        json!({"type": "disabled"}),
        "{}",
        sent[1].body
    );
    assert!(
        sent[1].body.get("reasoning_effort").is_none(),
        "{}",
        sent[1].body
    );

    // An effort the model does not offer is refused, naming what it offers.
    let refused = web.try_call(
        "session.selectModel",
        &json!({"sessionId": session, "model": FLASH, "effort": "extreme"}),
    );
    assert_eq!(refused["error"]["code"], "bad-request", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`extreme`") && message.contains("off, low, high, max"),
        "{message}"
    );
    let still = web.call("session.models", &json!({"sessionId": session}));
    assert_eq!(
        still["effort"], "off",
        "a refused choice changes nothing: {still}"
    );

    // Another model without an effort: the choice is dropped, the adapter's default applies
    // (the endpoint's own: nothing sent).
    web.call(
        "session.selectModel",
        &json!({"sessionId": session, "model": PRO}),
    );
    let moved = web.call("session.models", &json!({"sessionId": session}));
    assert!(moved.get("effort").is_none(), "{moved}");
    web.prompt(&session, "and now");
    socket.until(300, turn_ended);
    let sent = server.requests();
    assert_eq!(sent[2].body["model"], "deepseek-v4-pro");
    assert!(
        sent[2].body.get("reasoning_effort").is_none(),
        "the chosen `off` stayed with Flash: {}",
        sent[2].body
    );
    server.assert_no_violations();
    assert_eq!(web.host.stop(), Some(0));
}

/// The choice is logged (`model/effort`): after a restart the resumed session's requests
/// still carry it, and `session.models` says so.
#[test]
fn a_chosen_effort_outlives_a_restart() {
    let server = FakeDeepSeek::start(vec![Reply::text("low effort"), Reply::text("still low")]);
    let dir = TestDir::new("reasoning-effort-restart");
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.selectModel",
        &json!({"sessionId": session, "model": FLASH, "effort": "low"}),
    );
    web.prompt(&session, "first");
    socket.until(300, turn_ended);
    assert_eq!(server.requests()[0].body["reasoning_effort"], "low");
    assert_eq!(web.host.stop(), Some(0));

    let mut web = start(&server, &dir);
    let mut socket = web.events();
    socket.send(&json!({"type": "subscribe", "sessionId": session}));
    socket.until(50, |frame| frame["type"] == "session/subscribed");
    web.prompt(&session, "second");
    socket.until(300, turn_ended);
    let sent = server.requests();
    assert_eq!(sent[1].body["reasoning_effort"], "low", "{}", sent[1].body);
    let now = web.call("session.models", &json!({"sessionId": session}));
    assert_eq!(
        (now["current"].as_str(), now["effort"].as_str()),
        (Some(FLASH), Some("low")),
        "{now}"
    );
    assert_eq!(web.host.stop(), Some(0));
}
