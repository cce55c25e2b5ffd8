//! Background jobs through the web profile: `bash` with `run_in_background` answers at once
//! with a job id, `job_output` reads what the job printed, `job_kill` stops one (nothing of it
//! is left running), and a job that ends wakes its idle agent with a message saying so.

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
        call("c3", "job_output", json!({"job_id": "job-1"})),
        call("c4", "job_kill", json!({"job_id": "job-2"})),
        call("c5", "job_list", json!({})),
        Reply::text("both started"),
        // The second turn, opened by job-1's end.
        Reply::text("noted that it finished"),
    ]);
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "start them"}),
    );
    socket.until(400, turn_ended);
    let texts = tool_texts(&server);
    assert!(
        texts[0].contains("Started background job job-1"),
        "{texts:?}"
    );
    assert!(
        texts[1].contains("Started background job job-2"),
        "{texts:?}"
    );
    assert!(
        texts[2].contains("job-1 [running]") && texts[2].contains("first-line"),
        "{texts:?}"
    );
    assert!(texts[3].contains("job-2 killed"), "{texts:?}");
    assert!(texts[4].contains("job-2 [killed (job_kill)]"), "{texts:?}");
    // job-1 ends about a second later and wakes the agent: a turn of its own.
    socket.until(600, turn_ended);
    let requests = server.requests();
    assert_eq!(requests.len(), 7, "the job's end did not start a turn");
    let woken = requests[6].body["messages"].to_string();
    assert!(
        woken.contains("Background job job-1")
            && woken.contains("exited with code 0")
            && woken.contains("finished"),
        "{woken}"
    );
    assert!(!dir.join("work/survived").exists());
    server.assert_no_violations();
    assert_eq!(web.host.stop(), Some(0));
}
