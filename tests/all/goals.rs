//! Goals through the real `dsh-host` (web profile) and the scripted fake DeepSeek: `/goal TEXT`
//! starts rounds that run until the model marks the goal complete in one of them; the round
//! cap blocks it; `/goal pause` stops the rounds and `goal.resume` goes on; a session opened
//! again by a new host shows its goal (from the log, disarmed) and can take it up; a stale
//! revision, an unknown goal id and bad values are refused by name, to the page and the model.

use std::time::Duration;

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent, first_chunk, usage};
use dsh_tests::http::{Socket, envelope, send};
use dsh_tests::web::{Web, start, turn_ended};
use serde_json::{Value, json};

/// The goal projection frames among `frames`, as their `goal` values.
fn is_goal(frame: &Value, phase: &str) -> bool {
    frame["type"] == "session/projection"
        && frame["key"] == "goal"
        && frame["value"]["goal"]["phase"] == phase
}

/// Waits for a goal projection of `phase`; answers its goal.
fn goal_frame(socket: &mut Socket, phase: &str) -> Value {
    let frames = socket.until(400, |frame| is_goal(frame, phase));
    let last = frames.last().cloned().unwrap_or_default();
    assert!(is_goal(&last, phase), "no `{phase}` goal frame: {frames:?}");
    last["value"]["goal"].clone()
}

/// Waits until the agent of `session` is idle.
fn idle(socket: &mut Socket, session: &str) {
    socket.until(400, |frame| {
        frame["type"] == "host/session-status"
            && frame["sessionId"] == session
            && frame["running"] == false
    });
}

/// The error of a call that must fail: `(code, message)`.
fn refused(web: &Web, method: &str, payload: &Value) -> (String, String) {
    let response = send(
        &web.address,
        "POST",
        &format!("/api/{method}"),
        &[
            ("Authorization", &web.bearer),
            ("Content-Type", "application/json"),
        ],
        &envelope(method, payload),
    );
    let body = response.json();
    assert_eq!(body["result"]["ok"], false, "{method} should fail: {body}");
    let error = &body["result"]["error"];
    (
        error["code"].as_str().unwrap_or_default().to_owned(),
        error["message"].as_str().unwrap_or_default().to_owned(),
    )
}

/// No more model requests come within a while (the rounds stopped).
fn quiet(server: &FakeDeepSeek, count: usize) {
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(
        server.requests().len(),
        count,
        "a round ran after the goal stopped"
    );
}

/// The goal-round texts the model was sent, in order.
fn round_prompts(server: &FakeDeepSeek) -> Vec<String> {
    let mut rounds: Vec<String> = Vec::new();
    for request in server.requests() {
        for text in request.user_texts() {
            if text.contains("<goal_round>") && !rounds.contains(&text) {
                rounds.push(text);
            }
        }
    }
    rounds
}

fn update(goal: &Value, revision: u64, action: &str) -> Value {
    json!({"goal_id": goal["id"], "revision": revision, "action": action})
}

#[test]
fn a_goal_drives_rounds_until_the_model_completes_it() {
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("call_get", "get_goal", json!({})),
        Reply::text("Round 1: two tests still fail."),
    ]);
    let dir = TestDir::new("goals-complete");
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    let set = web.prompt(&session, "/goal Make the build green");
    assert_eq!(set["command"]["kind"], "success", "{set}");
    let text = set["command"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Goal created\nStatus: active") && text.contains("Rounds: 0/256"),
        "{text}"
    );
    let goal = web.call("goal.get", &json!({"sessionId": session}))["goal"].clone();
    assert_eq!(goal["revision"], 1, "{goal}");
    // Round 2: a stale revision is refused, then the exact one completes the goal (and ends
    // the round's turn: no answer is asked for after it).
    server.push(vec![
        Reply::tool_call("call_stale", "update_goal", update(&goal, 7, "complete")),
        Reply::tool_call("call_done", "update_goal", update(&goal, 1, "complete")),
    ]);
    let done = goal_frame(&mut socket, "complete");
    assert_eq!(done["roundsStarted"], 2, "{done}");
    assert_eq!(done["activation"], "disarmed", "{done}");
    idle(&mut socket, &session);
    quiet(&server, 4);
    let requests = server.requests();
    let read = requests[1].tool_texts().pop().unwrap();
    let read: Value = serde_json::from_str(&read).unwrap();
    assert_eq!(read["goal"]["objective"], "Make the build green", "{read}");
    assert_eq!(read["goal"]["roundsStarted"], 1, "{read}");
    assert_eq!(read["activation"], "armed", "{read}");
    let stale = requests[3].tool_texts().pop().unwrap();
    assert!(
        stale.contains("GOAL_STALE_REVISION") && stale.contains("revision 7 is stale"),
        "{stale}"
    );
    let rounds = round_prompts(&server);
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    assert!(
        rounds[0].contains("Objective: \"Make the build green\"\nRound: 1/256"),
        "{rounds:?}"
    );
    assert!(rounds[1].contains("Round: 2/256"), "{rounds:?}");
    // The page's history shows the rounds as what started each turn, and `/goal` reads the
    // goal back.
    let shown = web.prompt(&session, "/goal");
    let text = shown["command"]["text"].as_str().unwrap();
    assert!(
        text.contains("Status: complete") && text.contains("Rounds: 2/256"),
        "{text}"
    );
    server.assert_no_violations();
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn the_round_cap_blocks_the_goal() {
    let server = FakeDeepSeek::start(vec![
        Reply::text("Round 1 done; more to do."),
        Reply::text("Round 2 done; more to do."),
    ]);
    let dir = TestDir::new("goals-cap");
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    let created = web.call(
        "goal.create",
        &json!({"sessionId": session, "objective": "Port the parser", "maxGoalRounds": 2}),
    );
    assert_eq!(created["goal"]["activation"], "armed", "{created}");
    let blocked = goal_frame(&mut socket, "blocked");
    assert_eq!(blocked["roundsStarted"], 2, "{blocked}");
    assert_eq!(blocked["blockedReason"]["code"], "round-limit", "{blocked}");
    assert_eq!(
        blocked["blockedReason"]["message"], "Goal reached its configured limit of 2 rounds.",
        "{blocked}"
    );
    quiet(&server, 2);
    // Used up, it cannot be resumed before its cap is raised.
    let (code, message) = refused(
        &web,
        "goal.resume",
        &json!({"sessionId": session, "goalId": blocked["id"], "revision": blocked["revision"]}),
    );
    assert_eq!(code, "session-conflict", "{message}");
    assert!(message.contains("used all 2 of its rounds"), "{message}");
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn pausing_stops_the_rounds_and_resuming_goes_on() {
    // Round 1 takes a while, so the person pauses it while it runs.
    let slow = Reply::Sse(vec![
        first_chunk(),
        SseEvent::Pause(Duration::from_millis(1500)),
        SseEvent::content("Round 1: halfway."),
        SseEvent::finish_with_usage("stop", &usage(10, 5, 0, None)),
        SseEvent::Done,
    ]);
    let server = FakeDeepSeek::start(vec![slow]);
    let dir = TestDir::new("goals-pause");
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.prompt(&session, "/goal Translate the manual");
    server.wait_requests(1, Duration::from_secs(30));
    let paused = web.prompt(&session, "/goal pause");
    let text = paused["command"]["text"].as_str().unwrap();
    assert!(text.starts_with("Goal paused\nStatus: paused"), "{text}");
    socket.until(400, turn_ended);
    idle(&mut socket, &session);
    quiet(&server, 1);
    let goal = web.call("goal.get", &json!({"sessionId": session}))["goal"].clone();
    assert_eq!(goal["phase"], "paused", "{goal}");
    assert_eq!(goal["roundsStarted"], 1, "{goal}");
    server.push(vec![
        Reply::text("Round 2: nearly there."),
        Reply::tool_call(
            "call_done",
            "update_goal",
            update(&goal, goal["revision"].as_u64().unwrap() + 1, "complete"),
        ),
    ]);
    let resumed = web.call(
        "goal.resume",
        &json!({"sessionId": session, "goalId": goal["id"], "revision": goal["revision"]}),
    );
    assert_eq!(resumed["goal"]["phase"], "active", "{resumed}");
    let done = goal_frame(&mut socket, "complete");
    assert_eq!(done["roundsStarted"], 3, "{done}");
    idle(&mut socket, &session);
    quiet(&server, 3);
    let rounds = round_prompts(&server);
    assert!(rounds[2].contains("Round: 3/256"), "{rounds:?}");
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_reopened_session_shows_its_goal_and_takes_it_up_again() {
    let server = FakeDeepSeek::start(vec![Reply::text("Round 1: the outline exists.")]);
    let dir = TestDir::new("goals-reopen");
    let mut first = start(&server, &dir);
    let (session, mut socket) = first.followed_session();
    first.call(
        "goal.create",
        &json!({"sessionId": session, "objective": "Write the guide", "maxGoalRounds": 1}),
    );
    let blocked = goal_frame(&mut socket, "blocked");
    idle(&mut socket, &session);
    assert_eq!(first.host.stop(), Some(0));
    // A new host reads the goal back from the log: blocked, one round started, disarmed.
    let mut second = start(&server, &dir);
    let goal = second.call("goal.get", &json!({"sessionId": session}))["goal"].clone();
    assert_eq!(goal["id"], blocked["id"], "{goal}");
    assert_eq!(goal["phase"], "blocked", "{goal}");
    assert_eq!(goal["roundsStarted"], 1, "{goal}");
    assert_eq!(goal["activation"], "disarmed", "{goal}");
    let mut socket = second.events();
    socket.send(&json!({"type": "subscribe", "sessionId": session}));
    let pushed = goal_frame(&mut socket, "blocked");
    assert_eq!(pushed["revision"], goal["revision"], "{pushed}");
    let shown = second.prompt(&session, "/goal");
    let text = shown["command"]["text"].as_str().unwrap();
    assert!(
        text.contains("Status: blocked\nBlocker: round-limit:")
            && text.contains("Objective: Write the guide"),
        "{text}"
    );
    // A raised cap and a resume take it up again.
    let revision = goal["revision"].as_u64().unwrap();
    let edited = second.call(
        "goal.edit",
        &json!({"sessionId": session, "goalId": goal["id"], "revision": revision, "maxGoalRounds": 3}),
    );
    assert_eq!(edited["goal"]["maxGoalRounds"], 3, "{edited}");
    server.push(vec![Reply::tool_call(
        "call_done",
        "update_goal",
        update(&goal, revision + 2, "complete"),
    )]);
    second.call(
        "goal.resume",
        &json!({"sessionId": session, "goalId": goal["id"], "revision": revision + 1}),
    );
    let done = goal_frame(&mut socket, "complete");
    assert_eq!(done["roundsStarted"], 2, "{done}");
    assert_eq!(second.host.stop(), Some(0));
}

#[test]
fn bad_goal_input_is_refused_by_name() {
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "call_unknown",
            "update_goal",
            json!({"goal_id": "goal-nope", "revision": 1, "action": "pause"}),
        ),
        Reply::tool_call(
            "call_create",
            "create_goal",
            json!({"objective": "Tidy the repo", "max_goal_rounds": 999}),
        ),
        Reply::text("Both refused."),
    ]);
    let dir = TestDir::new("goals-bad");
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    // The model: an unknown goal id, a round cap over the limit.
    web.prompt(&session, "Tidy the repo, keep at it until it is clean.");
    socket.until(400, turn_ended);
    let requests = server.requests();
    let unknown = requests[1].tool_texts().pop().unwrap();
    assert!(
        unknown.contains("GOAL_NOT_FOUND") && unknown.contains("goal-nope"),
        "{unknown}"
    );
    let cap = requests[2].tool_texts().pop().unwrap();
    assert!(
        cap.contains("GOAL_INVALID_MAX_ROUNDS") && cap.contains("between 1 and 256, not 999"),
        "{cap}"
    );
    // A person, through the page and the command.
    let (code, message) = refused(
        &web,
        "goal.create",
        &json!({"sessionId": session, "objective": "   "}),
    );
    assert_eq!(code, "bad-request", "{message}");
    assert!(message.contains("GOAL_INVALID_OBJECTIVE"), "{message}");
    let (_, message) = refused(
        &web,
        "goal.pause",
        &json!({"sessionId": session, "goalId": "goal-nope", "revision": 1}),
    );
    assert!(
        message.contains("GOAL_NOT_FOUND") && message.contains("the session has no goal"),
        "{message}"
    );
    let (code, message) = refused(
        &web,
        "goal.pause",
        &json!({"sessionId": session, "goalId": "goal-nope"}),
    );
    assert_eq!(code, "bad-request", "{message}");
    assert!(message.contains("revision"), "{message}");
    let no_goal = web.prompt(&session, "/goal pause");
    assert_eq!(no_goal["command"]["kind"], "error", "{no_goal}");
    let edit = web.prompt(&session, "/goal edit");
    assert!(
        edit["command"]["text"]
            .as_str()
            .unwrap()
            .contains("needs the new objective"),
        "{edit}"
    );
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_persons_prompt_comes_before_the_next_round() {
    let slow = Reply::Sse(vec![
        first_chunk(),
        SseEvent::Pause(Duration::from_millis(1500)),
        SseEvent::content("Round 1: the parser is half ported."),
        SseEvent::finish_with_usage("stop", &usage(10, 5, 0, None)),
        SseEvent::Done,
    ]);
    let server = FakeDeepSeek::start(vec![slow, Reply::text("The README says so now.")]);
    let dir = TestDir::new("goals-precedence");
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.prompt(&session, "/goal Port the parser");
    server.wait_requests(1, Duration::from_secs(30));
    // Said while round 1 runs: it is the next turn, before round 2.
    web.prompt(&session, "Also mention the port in the README.");
    let goal = web.call("goal.get", &json!({"sessionId": session}))["goal"].clone();
    server.push(vec![Reply::tool_call(
        "call_done",
        "update_goal",
        update(&goal, 1, "complete"),
    )]);
    goal_frame(&mut socket, "complete");
    idle(&mut socket, &session);
    quiet(&server, 3);
    let said = |index: usize| server.requests()[index].user_texts().join("\n---\n");
    assert!(said(0).contains("Round: 1/256"), "{}", said(0));
    let second = said(1);
    assert!(
        second.contains("Also mention the port in the README.") && !second.contains("Round: 2/256"),
        "{second}"
    );
    assert!(said(2).contains("Round: 2/256"), "{}", said(2));
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_stale_revision_and_an_early_blocked_report_are_refused_by_name() {
    let server = FakeDeepSeek::start(Vec::new());
    let dir = TestDir::new("goals-stale");
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    // A goal whose revision moved on refuses the old one, naming both.
    let created = web.call(
        "goal.create",
        &json!({"sessionId": session, "objective": "Tidy", "maxGoalRounds": 2}),
    )["goal"]
        .clone();
    // In round 1 the model may not report it blocked yet (3 rounds first).
    let mut blocked_early = update(&created, 1, "blocked");
    blocked_early["blocked_reason"] = json!("the linter is missing");
    server.push(vec![
        Reply::tool_call("call_block", "update_goal", blocked_early),
        Reply::text("Round 1."),
        Reply::text("Round 2."),
    ]);
    let blocked = goal_frame(&mut socket, "blocked");
    assert_eq!(blocked["blockedReason"]["code"], "round-limit", "{blocked}");
    let (code, message) = refused(
        &web,
        "goal.complete",
        &json!({"sessionId": session, "goalId": created["id"], "revision": 1}),
    );
    assert_eq!(code, "session-conflict", "{message}");
    assert!(
        message.contains("GOAL_STALE_REVISION")
            && message.contains(&format!("the current revision is {}", blocked["revision"])),
        "{message}"
    );
    let threshold = server.requests()[1].tool_texts().pop().unwrap();
    assert!(
        threshold.contains("GOAL_TOOL_BLOCK_THRESHOLD")
            && threshold.contains("at least 3 consecutive goal rounds; current round is 1"),
        "{threshold}"
    );
    let again = refused(
        &web,
        "goal.create",
        &json!({"sessionId": session, "objective": "Another"}),
    );
    assert!(again.1.contains("GOAL_ALREADY_EXISTS"), "{again:?}");
    assert_eq!(web.host.stop(), Some(0));
}
