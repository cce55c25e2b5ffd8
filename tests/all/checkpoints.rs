//! The durability checkpoints of the shipped headless profile, seen through a crash: the host is
//! killed (`kill -9`) while the model is asked, and the log on disk must already hold everything
//! that request carried; a resumed session then goes on from it with nothing lost.

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::sessions::{PLAIN_STORE, stored_logs, stored_session_ids};
use dsh_tests::{HostProcess, TestDir, WAIT, run_host_with_env};
use serde_json::{Value, json};

/// The headless arguments of one run against `patch` in `work`.
fn headless_args(patch: &str, work: &str, task: &str, resume: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> = [
        "--patch",
        patch,
        "--profile",
        "headless",
        "--",
        "--cwd",
        work,
        "--model",
        "deepseek-official/deepseek-v4-flash",
    ]
    .map(str::to_owned)
    .to_vec();
    if let Some(id) = resume {
        args.extend(["--resume".to_owned(), id.to_owned()]);
    }
    args.push(task.to_owned());
    args
}

/// The texts of the `tool` messages of a chat-completions body.
fn tool_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Two bash steps, then the third request hangs and the host is killed: the log on disk holds
/// both results the hanging request carried (synced at the pre-step; the request's own
/// checkpoint had only the step's marker left to write), and a resumed turn sends them again,
/// not as calls whose outcome is unknown.
#[test]
fn a_crash_while_the_model_is_asked_keeps_everything_the_request_carried() {
    let call = |id: &str, command: &str| {
        let arguments = json!({"command": command, "description": "say a word"}).to_string();
        Reply::tool_calls(&[(id, "bash", &arguments)])
    };
    let server = FakeDeepSeek::start(vec![
        call("call_one", "echo first-result"),
        call("call_two", "echo second-result"),
        Reply::Stall { ms: 30_000 },
        Reply::text("picked up"),
    ]);
    let dir = TestDir::new("checkpoints-crash");
    dir.write("home/cordis.patch.yml", PLAIN_STORE);
    let patch = dir.write(
        "fake.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n",
            server.url()
        ),
    );
    let (patch, work) = (patch.display().to_string(), dir.join("work"));
    std::fs::create_dir_all(&work).unwrap();
    let work = work.display().to_string();
    let key = [("DEEPSEEK_API_KEY", "sk-test")];

    let first = headless_args(&patch, &work, "say two words", None);
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    let mut host = HostProcess::start_with_env(&dir.home(), &first, &key);
    let asked = server.wait_requests(3, WAIT);
    host.signal(9);
    host.wait_exit(WAIT);

    let carried = tool_texts(&asked[2].body);
    assert_eq!(carried.len(), 2, "{:?}", asked[2].body);
    assert!(
        carried[0].contains("first-result") && carried[1].contains("second-result"),
        "{carried:?}"
    );
    let logs = stored_logs(&dir.home());
    assert_eq!(logs.len(), 1, "{logs:?}");
    let on_disk: Vec<String> = logs[0]
        .1
        .iter()
        .filter(|event| event["type"] == "tool/result")
        .map(|event| event["data"]["message"]["content"][0]["content"][0]["text"].to_string())
        .collect();
    for (text, word) in carried.iter().zip(["first-result", "second-result"]) {
        assert!(text.contains(word), "{text}");
        assert!(
            on_disk.iter().any(|stored| stored.contains(word)),
            "`{word}` was sent to the model but is not on disk: {on_disk:?}"
        );
    }
    let second_end = logs[0]
        .1
        .iter()
        .any(|event| event["type"] == "step/end" && event["data"]["step"] == 2);
    assert!(second_end, "step 2 not closed on disk: {:?}", logs[0].1);

    let ids = stored_session_ids(&dir.home());
    let again = headless_args(&patch, &work, "go on", Some(&ids[0]));
    let again: Vec<&str> = again.iter().map(String::as_str).collect();
    let out = run_host_with_env(&dir.home(), &again, &key);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, "picked up");
    let requests = server.requests();
    let resumed = &requests.last().unwrap().body;
    let resent = tool_texts(resumed);
    assert!(
        resent.iter().any(|text| text.contains("first-result"))
            && resent.iter().any(|text| text.contains("second-result")),
        "{resent:?}"
    );
    assert!(
        !resumed.to_string().contains("Its outcome is unknown"),
        "{resumed}"
    );
}

/// Killed while the first request is asked: the prompt that request carried is on disk, and a
/// resume sends it again.
#[test]
fn a_crash_during_the_first_request_keeps_the_prompt() {
    let server = FakeDeepSeek::start(vec![Reply::Stall { ms: 30_000 }, Reply::text("back again")]);
    let dir = TestDir::new("checkpoints-first");
    dir.write("home/cordis.patch.yml", PLAIN_STORE);
    let patch = dir.write(
        "fake.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n",
            server.url()
        ),
    );
    let (patch, work) = (patch.display().to_string(), dir.join("work"));
    std::fs::create_dir_all(&work).unwrap();
    let work = work.display().to_string();
    let key = [("DEEPSEEK_API_KEY", "sk-test")];

    let first = headless_args(&patch, &work, "remember the word zebra", None);
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    let mut host = HostProcess::start_with_env(&dir.home(), &first, &key);
    server.wait_requests(1, WAIT);
    host.signal(9);
    host.wait_exit(WAIT);

    let logs = stored_logs(&dir.home());
    assert_eq!(logs.len(), 1, "{logs:?}");
    let prompt_on_disk = logs[0]
        .1
        .iter()
        .any(|event| event["type"] == "user/message" && event.to_string().contains("zebra"));
    assert!(prompt_on_disk, "{:?}", logs[0].1);

    let ids = stored_session_ids(&dir.home());
    let again = headless_args(&patch, &work, "and now?", Some(&ids[0]));
    let again: Vec<&str> = again.iter().map(String::as_str).collect();
    let out = run_host_with_env(&dir.home(), &again, &key);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, "back again");
    let resumed = server.requests().last().unwrap().body.to_string();
    assert!(
        resumed.contains("zebra") && resumed.contains("and now?"),
        "{resumed}"
    );
}
