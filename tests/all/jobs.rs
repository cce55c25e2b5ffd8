//! Background jobs through the web profile: `bash` with `run_in_background` answers at once
//! with a job id (`bash-N`), `job_output` reads what the job printed since the last read,
//! `job_kill` stops one (nothing of it is left running, and no notice follows), and a job that
//! ends wakes its idle agent with the reference's notice.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use serde_json::json;

use crate::escalation::{start, tool_texts};
use crate::web_chat::turn_ended;

fn call(id: &str, tool: &str, arguments: serde_json::Value) -> Reply {
    Reply::tool_calls(&[(id, tool, &arguments.to_string())])
}

#[test]
fn a_background_job_is_read_killed_and_its_end_wakes_the_agent() {
    let dir = TestDir::new("jobs");
    let server = FakeDeepSeek::start(vec![
        call(
            "c1",
            "bash",
            json!({"command": "echo first-line; sleep 1.5; echo finished", "description": "slow job", "run_in_background": true}),
        ),
        call(
            "c2",
            "bash",
            json!({"command": "sleep 60; touch survived", "description": "endless job", "run_in_background": true}),
        ),
        call("c3", "job_output", json!({"job_id": "bash-1"})),
        call(
            "c4",
            "job_kill",
            json!({"job_id": "bash-2", "reason": "not needed"}),
        ),
        call("c5", "job_list", json!({})),
        call("c6", "job_output", json!({"job_id": "bash-1"})),
        Reply::text("both started"),
        // The second turn, opened by bash-1's end.
        Reply::text("noted that it finished"),
    ]);
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "start them"}),
    );
    socket.until(400, turn_ended);
    // The texts as the model read them (tool_texts answers them as JSON strings).
    let texts: Vec<String> = tool_texts(&server)
        .into_iter()
        .map(|text| serde_json::from_str(&text).unwrap_or(text))
        .collect();
    assert_eq!(texts[0], "started background job bash-1", "{texts:?}");
    assert_eq!(texts[1], "started background job bash-2", "{texts:?}");
    assert!(
        texts[2].starts_with("first-line") && texts[2].ends_with("[status: running]"),
        "{texts:?}"
    );
    assert_eq!(
        texts[3], "requested cancellation of job bash-2",
        "{texts:?}"
    );
    // The kill is asked for at once; the job settles once its group is gone.
    let listed = &texts[4];
    assert!(
        listed.contains("bash-1 [bash] running — echo first-line")
            && (listed.contains("bash-2 [bash] stopping — sleep 60")
                || listed.contains("bash-2 [bash] killed — sleep 60")),
        "{texts:?}"
    );
    // A stream read returns only what came since the previous one.
    assert_eq!(texts[5], "(no new output)\n[status: running]", "{texts:?}");
    // bash-1 ends about a second later and wakes the agent: a turn of its own.
    socket.until(600, turn_ended);
    let requests = server.requests();
    assert_eq!(requests.len(), 8, "the job's end did not start a turn");
    let woken = requests[7].body["messages"].to_string();
    assert!(
        woken.contains("background job bash-1 (bash: echo first-line")
            && woken.contains(
                "finished [status: completed, exit code: 0]. Read its output with job_output."
            ),
        "{woken}"
    );
    // bash-2 was killed: no notice of its end.
    assert!(!woken.contains("background job bash-2 ("), "{woken}");
    assert!(!dir.join("work/survived").exists());
    server.assert_no_violations();
    assert_eq!(web.host.stop(), Some(0));
}
