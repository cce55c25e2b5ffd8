//! Following on PostgreSQL: a page on a second host follows a turn the first host runs, with
//! nothing missed or doubled (checked by seq); a session nobody on the second host follows any
//! more (its page left) is no longer read there.

use std::time::{Duration, Instant};

use dsh_tests::WAIT;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent, first_chunk};
use serde_json::{Value, json};

use crate::postgres::{cluster, held, held_answer, home_on, session_of};

/// The history of `id` through `web`, once the store answers (it mounts beside the server).
fn history_when_ready(web: &dsh_tests::web::Web, id: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let answer = web.try_call("session.history", &json!({"sessionId": id}));
        if answer["ok"] == true {
            return answer["value"].clone();
        }
        assert!(Instant::now() < deadline, "no history: {answer}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_page_on_a_second_host_follows_a_turn_the_first_host_runs() {
    let Some(cluster) = cluster("postgres_follow::a_page_on_a_second_host") else {
        return;
    };
    // Two hosts: two homes, one database.
    let dir_a = home_on("pg-host-a", &cluster, 10_000);
    let dir_b = home_on("pg-host-b", &cluster, 10_000);
    let gate = dir_a.join("gate");
    let mut tail: Vec<SseEvent> = (0..30)
        .map(|n| SseEvent::content(&format!("after{n} ")))
        .collect();
    tail.push(SseEvent::Done);
    let mut script = vec![
        first_chunk(),
        SseEvent::content("PARTIAL_ONE "),
        SseEvent::content("PARTIAL_TWO "),
        SseEvent::Gate(gate.clone()),
    ];
    script.extend(tail);
    let server = FakeDeepSeek::start(vec![Reply::Sse(script)]);
    let mut host_a = held(&dir_a, &server);
    let id = session_of(&host_a.stdout());

    let mut web = dsh_tests::web::start(&server, &dir_b);
    // The page's way in: the history, then a subscription after its last seq.
    let history = history_when_ready(&web, &id);
    assert_eq!(history["running"], true, "host A's turn runs: {history}");
    let last_seq = history["lastSeq"].as_u64().unwrap();
    let mut socket = web.events();
    socket.send(&json!({"type": "subscribe", "sessionId": id, "afterSeq": last_seq}));
    let subscribed = socket.until(50, |frame| frame["type"] == "session/subscribed");
    assert_eq!(
        subscribed.last().unwrap()["lastSeq"].as_u64(),
        Some(last_seq),
        "{subscribed:?}"
    );
    // A prompt on host B is refused: host A holds the session.
    let refused = web.try_call(
        "session.prompt",
        &json!({"sessionId": id, "text": "me too"}),
    );
    assert_eq!(refused["ok"], false, "{refused}");

    std::fs::write(&gate, "").unwrap();
    let frames = socket.until(2_000, dsh_tests::web::turn_ended);
    assert!(
        frames.last().is_some_and(dsh_tests::web::turn_ended),
        "host B's page did not see the turn end: {:?}",
        frames.iter().rev().take(3).collect::<Vec<_>>()
    );
    assert_eq!(host_a.wait_exit(WAIT), Some(0));
    let seqs: Vec<u64> = frames
        .iter()
        .filter(|frame| frame["type"] == "session/update")
        .filter_map(|frame| frame["seq"].as_u64())
        .collect();
    assert!(
        seqs.first().is_some_and(|first| *first > last_seq),
        "an update the page had: {seqs:?} after {last_seq}"
    );
    assert!(
        seqs.windows(2).all(|pair| pair[0] < pair[1]),
        "an update doubled or out of order: {seqs:?}"
    );
    let stored_last = cluster
        .psql(&format!(
            "SELECT max(seq) FROM dsh_events WHERE session = '{id}'"
        ))
        .unwrap();
    assert_eq!(
        seqs.last().unwrap().to_string(),
        stored_last,
        "the last update is the last event"
    );
    let text = frames
        .iter()
        .map(|frame| frame.to_string())
        .collect::<Vec<_>>()
        .join("");
    for n in 0..30 {
        assert!(text.contains(&format!("after{n}")), "delta after{n} missed");
    }
    // Host A gave the session back: host B opens it now (and may log its opening).
    let after = web.call("session.history", &json!({"sessionId": id}));
    assert!(after["lastSeq"].as_u64().unwrap() >= stored_last.parse::<u64>().unwrap());
    assert_eq!(after["running"], false, "{after}");
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_session_nobody_here_follows_any_more_is_no_longer_read() {
    let Some(cluster) = cluster("postgres_follow::a_session_nobody_here_follows") else {
        return;
    };
    let dir_a = home_on("pg-unfollow-a", &cluster, 10_000);
    let dir_b = home_on("pg-unfollow-b", &cluster, 10_000);
    let gate = dir_a.join("gate");
    let server = FakeDeepSeek::start(vec![held_answer(&gate, "AFTER_GATE")]);
    let mut host_a = held(&dir_a, &server);
    let id = session_of(&host_a.stdout());

    let mut web = dsh_tests::web::start(&server, &dir_b);
    let history = history_when_ready(&web, &id);
    let last_seq = history["lastSeq"].as_u64().unwrap();
    let mut socket = web.events();
    socket.send(&json!({"type": "subscribe", "sessionId": id, "afterSeq": last_seq}));
    let subscribed = socket.until(50, |frame| frame["type"] == "session/subscribed");
    assert!(subscribed.last().is_some(), "{subscribed:?}");
    // A view read only for the history may have ended already (a commit came before the
    // subscription); the one the subscription took lasts while the page follows.
    let said = format!("session `{id}`: nobody here follows it any more");
    let count = |web: &dsh_tests::web::Web| {
        web.host
            .stderr()
            .iter()
            .filter(|line| line.contains(&said))
            .count()
    };
    let while_followed = count(&web);
    // The page leaves; host A goes on committing.
    socket.send(&json!({"type": "unsubscribe", "sessionId": id}));
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(&gate, "").unwrap();
    assert_eq!(host_a.wait_exit(WAIT), Some(0));
    let deadline = Instant::now() + WAIT;
    while count(&web) == while_followed {
        assert!(
            Instant::now() < deadline,
            "host B still reads the commits of a session nobody there follows; its log:\n{}",
            web.host.stderr().join("\n")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Nothing is lost by it: host B opens the finished session whole.
    let stored_last = cluster
        .psql(&format!(
            "SELECT max(seq) FROM dsh_events WHERE session = '{id}'"
        ))
        .unwrap();
    let after = web.call("session.history", &json!({"sessionId": id}));
    assert!(
        after["lastSeq"].as_u64().unwrap() >= stored_last.parse::<u64>().unwrap(),
        "{after}"
    );
    assert_eq!(web.host.stop(), Some(0));
}
