//! Background jobs through the web profile: `bash` with `run_in_background` answers at once
//! with a job id (`bash-N`), `job_output` reads what the job printed since the last read,
//! `job_kill` stops one (nothing of it is left running, and no notice follows), and a job that
//! ends wakes its idle agent with the reference's notice.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::against;
use dsh_tests::web::{start_in_workspace, turn_ended};
use serde_json::json;

#[test]
fn a_background_job_is_read_killed_and_its_end_wakes_the_agent() {
    let dir = TestDir::new("jobs");
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "c1",
            "bash",
            json!({"command": "echo first-line; sleep 1.5; echo finished", "description": "slow job", "run_in_background": true}),
        ),
        Reply::tool_call(
            "c2",
            "bash",
            json!({"command": "sleep 2; touch survived", "description": "endless job", "run_in_background": true}),
        ),
        Reply::tool_call("c3", "job_output", json!({"job_id": "bash-1"})),
        Reply::tool_call(
            "c4",
            "job_kill",
            json!({"job_id": "bash-2", "reason": "not needed"}),
        ),
        Reply::tool_call("c5", "job_list", json!({})),
        Reply::tool_call("c6", "job_output", json!({"job_id": "bash-1"})),
        Reply::text("both started"),
        // The second turn, opened by bash-1's end.
        Reply::text("noted that it finished"),
    ]);
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "start them"}),
    );
    let frames = socket.until(400, turn_ended);
    // The page following the session was pushed its jobs as they changed.
    let listed = frames
        .iter()
        .rfind(|frame| frame["type"] == "session/projection" && frame["key"] == "jobs")
        .map(|frame| frame["value"].clone())
        .unwrap_or_default();
    assert_eq!(listed[0]["id"], "bash-1", "{listed}");
    assert_eq!(listed[1]["id"], "bash-2", "{listed}");
    let texts = server.last_tool_texts();
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
            && (listed.contains("bash-2 [bash] stopping — sleep 2")
                || listed.contains("bash-2 [bash] killed — sleep 2")),
        "{texts:?}"
    );
    // A stream read returns only what came since the previous one.
    assert_eq!(texts[5], "(no new output)\n[status: running]", "{texts:?}");
    // bash-1 ends about a second later and wakes the agent: a turn of its own.
    socket.until(600, turn_ended);
    // The page's stop button on a job that already ended says so.
    let stopped = web.call(
        "session.killJob",
        &json!({"sessionId": session, "jobId": "bash-2"}),
    );
    assert_eq!(
        stopped["message"],
        "job bash-2 had already finished [status: killed]"
    );
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
    // Had the kill not reached it, bash-2 would have touched its file two seconds in.
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    assert!(!dir.join("work/survived").exists());
    server.assert_no_violations();
    assert_eq!(web.host.stop(), Some(0));
}

/// A job's end opens a turn on an idle agent only so many times (`maxConsecutiveWakes`, here
/// one) until a person writes again: a woken turn that starts the next job is not woken by
/// its end; that notice waits and reaches the model with the person's next message.
#[test]
fn waking_an_idle_agent_is_bounded_until_a_person_writes() {
    let dir = TestDir::new("jobs-wakes");
    dir.write(
        "home/cordis.patch.yml",
        "- id: jobs\n  config:\n    maxConsecutiveWakes: 1\n",
    );
    // Each ends after its turn did (one that ends during a turn joins that turn instead).
    let later =
        json!({"command": "sleep 0.5", "description": "later job", "run_in_background": true});
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("c1", "bash", later.clone()),
        Reply::text("first"),
        // Woken by bash-1's end: it starts bash-2.
        Reply::tool_call("c2", "bash", later),
        Reply::text("second"),
        // The person's next message, with bash-2's notice.
        Reply::text("third"),
    ]);
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "start one"}),
    );
    socket.until(400, turn_ended);
    socket.until(800, turn_ended);
    // bash-2 ends a second and a half later; no third turn opens.
    std::thread::sleep(std::time::Duration::from_millis(3_000));
    assert_eq!(
        server.requests().len(),
        4,
        "bash-2's end woke the agent again"
    );
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "anything new?"}),
    );
    socket.until(400, turn_ended);
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let last = requests[4].body["messages"].to_string();
    assert!(
        last.contains(
            "background job bash-2 (bash: sleep 0.5) finished [status: completed, exit code: 0]"
        ) && last.contains("anything new?"),
        "{last}"
    );
    server.assert_no_violations();
    assert_eq!(web.host.stop(), Some(0));
}

/// A session keeps `maxKeptPerSession` jobs (here two): beyond that the oldest that ended and
/// were read are forgotten, so a long session's finished jobs do not pile up.
#[test]
fn a_session_forgets_its_oldest_finished_jobs_beyond_the_cap() {
    let dir = TestDir::new("jobs-kept");
    dir.write(
        "home/cordis.patch.yml",
        "- id: jobs\n  config:\n    maxKeptPerSession: 2\n",
    );
    let quick = json!({"command": "true", "description": "quick", "run_in_background": true});
    let collect = |id: &str| json!({"job_id": id, "wait": true, "timeout_ms": 20000});
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("c1", "bash", quick.clone()),
        Reply::tool_call("c2", "job_output", collect("bash-1")),
        Reply::tool_call("c3", "bash", quick.clone()),
        Reply::tool_call("c4", "job_output", collect("bash-2")),
        Reply::tool_call("c5", "bash", quick),
        Reply::tool_call("c6", "job_list", json!({})),
        Reply::tool_call("c7", "job_output", json!({"job_id": "bash-1"})),
        Reply::text("done"),
    ]);
    let out = against(&server, &dir, &["keep a few"]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let texts = server.last_tool_texts();
    assert!(
        texts[5].contains("bash-2 [bash]") && texts[5].contains("bash-3 [bash]"),
        "{texts:?}"
    );
    assert!(!texts[5].contains("bash-1"), "{texts:?}");
    assert!(texts[6].contains("no background job `bash-1`"), "{texts:?}");
}
