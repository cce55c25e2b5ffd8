//! The durability checkpoints of the shipped headless profile, seen through a crash: the host is
//! killed (`kill -9`) while the model is asked or a tool runs, and the log on disk must already
//! hold everything the request carried, or the call that started; a resumed session then goes on
//! from it with nothing lost.

use dsh_tests::fake_deepseek::{FakeDeepSeek, RecordedRequest, Reply};
use dsh_tests::sessions::{PLAIN_STORE, stored_logs, stored_session_ids};
use dsh_tests::{HostProcess, TestDir, WAIT, run_host_with_env};
use serde_json::{Value, json};

/// A headless session against a scripted fake model, killed while the model is asked.
struct Crash {
    server: FakeDeepSeek,
    dir: TestDir,
    patch: String,
    work: String,
}

const KEY: [(&str, &str); 1] = [("DEEPSEEK_API_KEY", "sk-test")];

impl Crash {
    /// A home whose store writes plain JSONL, and the patch that points at `script`'s server.
    fn new(name: &str, script: Vec<Reply>) -> Self {
        let server = FakeDeepSeek::start(script);
        let dir = TestDir::new(name);
        dir.write("home/cordis.patch.yml", PLAIN_STORE);
        let patch = dir.write(
            "fake.patch.yml",
            &format!(
                "- id: llm-deepseek\n  config:\n    baseURL: {}\n",
                server.url()
            ),
        );
        let work = dir.join("work");
        std::fs::create_dir_all(&work).unwrap();
        Self {
            server,
            patch: patch.display().to_string(),
            work: work.display().to_string(),
            dir,
        }
    }

    fn args(&self, task: &str, resume: Option<&str>) -> Vec<String> {
        let mut args: Vec<String> = [
            "--patch",
            &self.patch,
            "--profile",
            "headless",
            "--",
            "--cwd",
            &self.work,
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

    /// Starts a headless run of `task`.
    fn start(&self, task: &str) -> HostProcess {
        let args = self.args(task, None);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        HostProcess::start_with_env(&self.dir.home(), &args, &KEY)
    }

    /// Kills `host` (`kill -9`); answers the one session's log on disk.
    fn kill(&self, mut host: HostProcess) -> Vec<Value> {
        host.signal(9);
        host.wait_exit(WAIT);
        let mut logs = stored_logs(&self.dir.home());
        assert_eq!(logs.len(), 1, "{logs:?}");
        logs.remove(0).1
    }

    /// Runs `task` until the server has seen `requests` requests (the last of them hangs),
    /// then kills the host: answers what the server saw and the log on disk.
    fn kill_when_asked(&self, task: &str, requests: usize) -> (Vec<RecordedRequest>, Vec<Value>) {
        let host = self.start(task);
        let asked = self.server.wait_requests(requests, WAIT);
        (asked, self.kill(host))
    }

    /// Resumes the session with `task`; answers the body of the request that resumed it.
    fn resume(&self, task: &str, answer: &str) -> Value {
        let ids = stored_session_ids(&self.dir.home());
        let args = self.args(task, Some(&ids[0]));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run_host_with_env(&self.dir.home(), &args, &KEY);
        assert_eq!(out.code, Some(0), "{out:?}");
        assert_eq!(out.stdout, answer);
        self.server.requests().last().unwrap().body.clone()
    }
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
    let crash = Crash::new(
        "checkpoints-crash",
        vec![
            call("call_one", "echo first-result"),
            call("call_two", "echo second-result"),
            Reply::Stall { ms: 30_000 },
            Reply::text("picked up"),
        ],
    );
    let (asked, events) = crash.kill_when_asked("say two words", 3);

    let carried = tool_texts(&asked[2].body);
    assert_eq!(carried.len(), 2, "{:?}", asked[2].body);
    let on_disk: Vec<String> = events
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
    let second_end = events
        .iter()
        .any(|event| event["type"] == "step/end" && event["data"]["step"] == 2);
    assert!(second_end, "step 2 not closed on disk: {events:?}");

    let resumed = crash.resume("go on", "picked up");
    let resent = tool_texts(&resumed);
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
    let crash = Crash::new(
        "checkpoints-first",
        vec![Reply::Stall { ms: 30_000 }, Reply::text("back again")],
    );
    let (_, events) = crash.kill_when_asked("remember the word zebra", 1);
    let prompt_on_disk = events
        .iter()
        .any(|event| event["type"] == "user/message" && event.to_string().contains("zebra"));
    assert!(prompt_on_disk, "{events:?}");

    let resumed = crash.resume("and now?", "back again").to_string();
    assert!(
        resumed.contains("zebra") && resumed.contains("and now?"),
        "{resumed}"
    );
}

/// Killed while a tool runs: the log was flushed before the body started, so the closers tell
/// the model the outcome is unknown, and the new turn runs.
#[test]
fn a_crash_mid_tool_resumes_with_the_outcome_marked_unknown() {
    let arguments =
        json!({"command": "touch started; sleep 30", "description": "start and hang"}).to_string();
    let crash = Crash::new(
        "checkpoints-mid-tool",
        vec![
            Reply::tool_calls(&[("call_crash", "bash", &arguments)]),
            Reply::text("resumed fine"),
        ],
    );
    let host = crash.start("start the long job");
    let started = std::path::Path::new(&crash.work).join("started");
    let deadline = std::time::Instant::now() + WAIT;
    while !started.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(started.exists(), "{:?}", host.stderr());
    let events = crash.kill(host);
    assert!(
        events.iter().any(|event| event["type"] == "tool/call"),
        "{events:?}"
    );

    let resumed = crash.resume("what happened?", "resumed fine");
    assert_eq!(crash.server.requests().len(), 2);
    let resumed = resumed["messages"].to_string();
    assert!(
        resumed.contains("call_crash") && resumed.contains("what happened?"),
        "{resumed}"
    );
    // The model reads the reference's closer text for a call that started: outcome unknown.
    assert!(
        resumed.contains("Its outcome is unknown") && !resumed.contains("never ran"),
        "{resumed}"
    );
}
