//! Reload under load: the real web profile runs twenty sessions against the fake DeepSeek
//! server, each turn three steps (a `bash` call, a `read`, a slowly streamed answer), and while
//! they are mid-turn the libraries of `tools`, `tool-bash`, `agent-loop` and `llm-deepseek` are
//! replaced by copies dropped into `$DSH_HOME/plugins` (first in lookup, watched), one of them
//! first by a truncated file the host must refuse. Every turn then has ended with a named
//! reason, every stored log checks sound with no event lost or doubled, and a next turn on the
//! new code completes in every session.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent, first_chunk, usage};
use dsh_tests::sessions::{PLAIN_STORE, read_log, session_logs};
use dsh_tests::web::{Web, WebHost, fake_model_layer};
use dsh_tests::{TestDir, install_library, plugin_lib, run_host};
use serde_json::{Value, json};

const SESSIONS: usize = 20;
/// The libraries replaced under load (each also the name of its row in the agent bundle).
const LIBRARIES: [&str; 4] = ["tools", "tool-bash", "agent-loop", "llm-deepseek"];
/// The turn after every reload, which must complete everywhere.
const LAST: usize = 8;
/// How long a whole round of turns may take before the test calls one stuck.
const TURNS_WITHIN: Duration = Duration::from_secs(40);

/// The marker a prompt carries, by which the fake model knows the session and the turn.
fn marker(session: usize, turn: usize) -> String {
    format!("[load s{session} t{turn}]")
}

/// The session and turn of the last prompt marker in `messages`, and how many tool results
/// follow it: which step of which turn this request is.
fn step_of(body: &Value) -> Option<(usize, usize, usize)> {
    let messages = body["messages"].as_array()?;
    let (at, session, turn) = messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, message)| message["role"] == "user")
        .find_map(|(at, message)| {
            let text = message["content"].to_string();
            let start = text.find("[load s")?;
            let rest = &text[start + "[load s".len()..];
            let end = rest.find(']')?;
            let (session, turn) = rest[..end].split_once(" t")?;
            Some((at, session.parse().ok()?, turn.parse().ok()?))
        })?;
    let results = messages[at..]
        .iter()
        .filter(|message| message["role"] == "tool")
        .count();
    Some((session, turn, results))
}

/// The answer to one step: `bash` first, then `read` of `work/notes.txt`, then a streamed
/// closing text. The test holds each turn where it wants it with two gates (files under
/// `work/gates`, which the test creates): the `bash` call marks itself started and waits for
/// `bash-t<turn>`, the answer streams its first piece and waits for `answer-t<turn>`.
fn reply_for(body: &Value, work: &Path) -> Option<Reply> {
    let (session, turn, done) = step_of(body)?;
    let id = |tool: &str| format!("s{session}_t{turn}_{tool}");
    let (gates, started) = (work.join("gates"), work.join("started"));
    Some(match done {
        0 => {
            let command = format!(
                "touch {started}/s{session}-t{turn}; for i in $(seq 600); do [ -e {gate} ] && break; sleep 0.05; done; echo bash s{session}-t{turn}",
                started = started.display(),
                gate = gates.join(format!("bash-t{turn}")).display(),
            );
            Reply::tool_call(
                &id("bash"),
                "bash",
                json!({"command": command, "description": "wait for the test"}),
            )
        }
        1 => Reply::tool_call(
            &id("read"),
            "read",
            json!({"file_path": work.join("notes.txt").display().to_string()}),
        ),
        _ => {
            let mut events = vec![first_chunk()];
            for piece in 0..6 {
                events.push(SseEvent::content(&format!(
                    "answer s{session}-t{turn} part {piece}. "
                )));
                if piece == 0 {
                    events.push(SseEvent::Gate(gates.join(format!("answer-t{turn}"))));
                }
                events.push(SseEvent::Pause(Duration::from_millis(20)));
            }
            events.push(SseEvent::finish_with_usage("stop", &usage(40, 12, 0, None)));
            events.push(SseEvent::Done);
            Reply::Sse(events)
        }
    })
}

/// Lets every session past gate `name` of [`reply_for`].
fn open_gate(work: &Path, name: &str) {
    std::fs::write(work.join("gates").join(name), "").unwrap();
}

/// Waits until every session's `bash` call of turn `turn` runs (each marked itself started).
fn wait_bash_started(work: &Path, sessions: usize, turn: usize) {
    let suffix = format!("-t{turn}");
    let deadline = Instant::now() + dsh_tests::WAIT;
    loop {
        let started = std::fs::read_dir(work.join("started"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| entry.file_name().to_string_lossy().ends_with(&suffix))
            .count();
        if started == sessions {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "turn {turn}: {started} of {sessions} bash calls started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn status_json(home: &Path) -> Value {
    let out = run_host(home, &["status", "--json"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    serde_json::from_str(out.stdout.lines().next().unwrap_or("")).unwrap()
}

/// The stored log of every session, by session id (the folder holding `session.jsonl`).
fn logs_by_session(home: &Path) -> BTreeMap<String, (PathBuf, Vec<Value>)> {
    session_logs(&home.join("sessions"))
        .into_iter()
        .filter_map(|path| {
            let id = path.parent()?.file_name()?.to_string_lossy().into_owned();
            let (_, events) = read_log(&path);
            Some((id, (path, events)))
        })
        .collect()
}

/// The `turn/end` of turn `turn` in `events`.
fn turn_end(events: &[Value], turn: u64) -> Option<&Value> {
    events
        .iter()
        .find(|event| event["type"] == "turn/end" && event["data"]["turn"] == turn)
}

/// Waits until every session's log holds the end of turn `turn`; panics naming the sessions
/// still running after [`TURNS_WITHIN`].
fn wait_turn_ends(web: &Web, home: &Path, sessions: &[String], turn: u64) {
    let deadline = Instant::now() + TURNS_WITHIN;
    loop {
        let logs = logs_by_session(home);
        let open: Vec<&String> = sessions
            .iter()
            .filter(|id| {
                logs.get(*id)
                    .is_none_or(|(_, events)| turn_end(events, turn).is_none())
            })
            .collect();
        if open.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            let tails: Vec<String> = open
                .iter()
                .map(|id| {
                    let events = logs
                        .get(*id)
                        .map(|(_, events)| events.as_slice())
                        .unwrap_or_default();
                    let tail: Vec<String> = events
                        .iter()
                        .skip(events.len().saturating_sub(12))
                        .map(|event| {
                            format!("{} {}", event["type"], event["data"])
                                .chars()
                                .take(300)
                                .collect()
                        })
                        .collect();
                    format!("{id}:\n    {}", tail.join("\n    "))
                })
                .collect();
            let noted: Vec<String> = web
                .host
                .stderr()
                .into_iter()
                .filter(|line| !line.contains(" INFO ") && !line.contains("session-title"))
                .collect();
            panic!(
                "turn {turn} never ended in {} session(s): {open:?}\n{}\nhost:\n{}",
                open.len(),
                tails.join("\n"),
                noted.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The seqs one stored line stands for: an event's own, or the run a packed chunk row
/// (`text-chunks`, `reasoning-chunks`, `tool-call-chunks`) holds from its `seq0`.
fn seqs_of(id: &str, line: &Value) -> Vec<u64> {
    if let Some(seq) = line["seq"].as_u64() {
        return vec![seq];
    }
    let seq0 = line["seq0"]
        .as_u64()
        .unwrap_or_else(|| panic!("{id}: a line with neither seq nor seq0: {line}"));
    let members = line["data"]["texts"]
        .as_array()
        .or_else(|| line["data"]["args"].as_array())
        .map_or(0, Vec::len);
    assert!(members > 0, "{id}: an empty packed row: {line}");
    (seq0..seq0 + members as u64).collect()
}

/// What a sound log promises beyond the host's own check: contiguous seqs, each tool call
/// answered exactly once, each turn started and ended once.
fn assert_nothing_lost_or_doubled(id: &str, events: &[Value]) {
    let seqs: Vec<u64> = events.iter().flat_map(|event| seqs_of(id, event)).collect();
    assert_eq!(seqs.first(), Some(&0), "{id}: the log starts at seq 0");
    for pair in seqs.windows(2) {
        assert_eq!(pair[1], pair[0] + 1, "{id}: seqs not contiguous: {seqs:?}");
    }
    let mut results: BTreeMap<String, usize> = BTreeMap::new();
    for event in events.iter().filter(|event| event["type"] == "tool/result") {
        for part in event["data"]["message"]["content"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let call = part["toolCallId"].as_str().unwrap_or_default().to_owned();
            *results.entry(call).or_default() += 1;
        }
    }
    let calls: BTreeSet<String> = events
        .iter()
        .filter(|event| event["type"] == "tool/call")
        .map(|event| {
            event["data"]["callId"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    let call_count = events
        .iter()
        .filter(|event| event["type"] == "tool/call")
        .count();
    assert_eq!(call_count, calls.len(), "{id}: a tool call logged twice");
    for call in &calls {
        assert_eq!(
            results.get(call),
            Some(&1),
            "{id}: call {call} has {:?} results",
            results.get(call)
        );
    }
    assert_eq!(
        results.len(),
        calls.len(),
        "{id}: a result without its call: {results:?}"
    );
    for kind in ["turn/start", "turn/end"] {
        let turns: Vec<u64> = events
            .iter()
            .filter(|event| event["type"] == kind)
            .filter_map(|event| event["data"]["turn"].as_u64())
            .collect();
        assert_eq!(
            turns,
            (1..=LAST as u64).collect::<Vec<_>>(),
            "{id}: {kind} per turn"
        );
    }
}

/// Prompts every session with turn `turn`.
fn prompt_all(web: &Web, sessions: &[String], turn: usize) {
    for (n, session) in sessions.iter().enumerate() {
        web.prompt(session, &format!("{} run, read, answer", marker(n, turn)));
    }
}

/// Waits until every session has asked for step `step` (0: the `bash` call, 1: the `read`,
/// 2: the answer) of turn `turn`: all of them are then mid-turn, in that step.
fn wait_step(server: &FakeDeepSeek, sessions: usize, turn: usize, step: usize) {
    let deadline = Instant::now() + dsh_tests::WAIT;
    loop {
        let asking: BTreeSet<usize> = server
            .requests()
            .iter()
            .filter_map(|request| step_of(&request.body))
            .filter(|(_, of, done)| *of == turn && *done == step)
            .map(|(session, _, _)| session)
            .collect();
        if asking.len() == sessions {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "turn {turn}: only {} session(s) reached step {step}",
            asking.len()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// How every session's turn `turn` ended, counted by reason (`completed`, or the kind and its
/// named cause, such as `aborted/disposed`); panics on an end that names no reason.
fn turn_reasons(web: &Web, home: &Path, sessions: &[String], turn: u64) -> BTreeMap<String, usize> {
    wait_turn_ends(web, home, sessions, turn);
    let logs = logs_by_session(home);
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for session in sessions {
        let end = turn_end(&logs[session].1, turn).unwrap();
        let reason = &end["data"]["reason"];
        let named = match reason["kind"].as_str().unwrap_or_default() {
            "completed" => "completed".to_owned(),
            kind @ ("aborted" | "error") => {
                let why = reason["reason"]["kind"]
                    .as_str()
                    .or_else(|| reason["message"].as_str())
                    .unwrap_or_default();
                assert!(
                    !why.is_empty(),
                    "{session}: turn {turn} ended without a named reason: {end}"
                );
                format!("{kind}/{why}")
            }
            _ => panic!("{session}: turn {turn} ended with an unknown reason: {end}"),
        };
        *reasons.entry(named).or_default() += 1;
    }
    reasons
}

/// Drops copies of the built `libraries` into `$DSH_HOME/plugins` at once while every session
/// is in turn `turn`, and waits until the host remounted each of them.
fn replace(web: &Web, home: &Path, sessions: &[String], turn: u64, libraries: &[&str]) {
    let logs = logs_by_session(home);
    let ended: Vec<&String> = sessions
        .iter()
        .filter(|id| {
            logs.get(*id)
                .is_some_and(|(_, events)| turn_end(events, turn).is_some())
        })
        .collect();
    assert!(
        ended.is_empty(),
        "{libraries:?} would be replaced after turn {turn} ended in {ended:?}: not under load"
    );
    let plugins = home.join("plugins");
    let needles: Vec<String> = libraries
        .iter()
        .map(|library| {
            let file = plugins.join(format!("lib{}.so", library.replace('-', "_")));
            format!("reloaded {} (", file.display())
        })
        .collect();
    let count = |needle: &String| {
        web.host
            .stderr()
            .iter()
            .filter(|line| line.contains(needle.as_str()))
            .count()
    };
    let before: Vec<usize> = needles.iter().map(count).collect();
    for library in libraries {
        let file = format!("lib{}.so", library.replace('-', "_"));
        install_library(&plugin_lib(library), &plugins.join(file));
    }
    let installed = Instant::now();
    let deadline = Instant::now() + dsh_tests::WAIT;
    while needles
        .iter()
        .zip(&before)
        .any(|(needle, seen)| count(needle) <= *seen)
    {
        assert!(
            Instant::now() < deadline,
            "{libraries:?} not all reloaded: {:?}",
            web.host.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "reload-load: {libraries:?} remounted {:?} after the drop",
        installed.elapsed()
    );
}

/// The fiber of each row in a status answer.
fn fibers_by_row(status: &Value) -> BTreeMap<String, u64> {
    status["fibers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|fiber| Some((fiber["row"].as_str()?.to_owned(), fiber["fiber"].as_u64()?)))
        .collect()
}

#[test]
fn twenty_sessions_mid_turn_survive_replaced_libraries() {
    let dir = TestDir::new("reload-load");
    let work = dir.join("work");
    dir.write("work/notes.txt", "notes the model reads\n");
    std::fs::create_dir_all(work.join("gates")).unwrap();
    std::fs::create_dir_all(work.join("started")).unwrap();
    let served = work.clone();
    let server = FakeDeepSeek::start(Vec::new()).route(move |body| reply_for(body, &served));
    dir.write("home/cordis.patch.yml", PLAIN_STORE);
    let mut web = Web::from(WebHost::start(
        &dir,
        &fake_model_layer(&server.url(), ""),
        &["--cwd", work.to_str().unwrap()],
        &[("DEEPSEEK_API_KEY", "sk-test")],
    ));
    let home = dir.home();
    let plugins = home.join("plugins");
    let before = status_json(&home);
    let sessions: Vec<String> = (0..SESSIONS).map(|_| web.new_session()).collect();
    let started = Instant::now();

    // Turn 1: `tool-bash` is replaced while every session's `bash` call runs, first by a
    // half-written library, which is refused (the running version stays).
    open_gate(&work, "answer-t1");
    prompt_all(&web, &sessions, 1);
    wait_bash_started(&work, SESSIONS, 1);
    let bash = std::fs::read(plugin_lib("tool-bash")).unwrap();
    let truncated = dir.join("libtool_bash.truncated");
    std::fs::write(&truncated, &bash[..bash.len() / 3]).unwrap();
    install_library(&truncated, &plugins.join("libtool_bash.so"));
    let refused = web
        .host
        .wait_stderr("keeping the running version", dsh_tests::WAIT);
    assert!(refused.contains("libtool_bash.so"), "{refused}");
    replace(&web, &home, &sessions, 1, &["tool-bash"]);
    open_gate(&work, "bash-t1");
    let mut ends = vec![turn_reasons(&web, &home, &sessions, 1)];

    // Turn 2: the model adapter is replaced while every session's answer is held mid-stream.
    open_gate(&work, "bash-t2");
    prompt_all(&web, &sessions, 2);
    wait_step(&server, SESSIONS, 2, 2);
    replace(&web, &home, &sessions, 2, &["llm-deepseek"]);
    open_gate(&work, "answer-t2");
    ends.push(turn_reasons(&web, &home, &sessions, 2));
    let settled = status_json(&home);

    // Turn 3: the tool registry; turn 4: the driver itself; turn 5: all four at once, in one
    // burst of file events. Each while every session's `bash` call runs.
    let rounds: [(usize, &[&str]); 3] = [(3, &["tools"]), (4, &["agent-loop"]), (5, &LIBRARIES)];
    for (turn, libraries) in rounds {
        open_gate(&work, &format!("answer-t{turn}"));
        prompt_all(&web, &sessions, turn);
        wait_bash_started(&work, SESSIONS, turn);
        replace(&web, &home, &sessions, turn as u64, libraries);
        open_gate(&work, &format!("bash-t{turn}"));
        ends.push(turn_reasons(&web, &home, &sessions, turn as u64));
    }
    // Turns 6 and 7: the driver, then all four, while every answer is held mid-stream.
    let streaming: [(usize, &[&str]); 2] = [(6, &["agent-loop"]), (7, &LIBRARIES)];
    for (turn, libraries) in streaming {
        open_gate(&work, &format!("bash-t{turn}"));
        prompt_all(&web, &sessions, turn);
        wait_step(&server, SESSIONS, turn, 2);
        replace(&web, &home, &sessions, turn as u64, libraries);
        open_gate(&work, &format!("answer-t{turn}"));
        ends.push(turn_reasons(&web, &home, &sessions, turn as u64));
    }
    eprintln!("reload-load: how turns 1-7 ended: {ends:?}");
    // A leaf plugin replaced mid-call lets the call it runs finish (the old version is disposed
    // to quiescence) and the turn goes on: nothing there may end a turn.
    for (turn, library) in [(0, "tool-bash"), (1, "llm-deepseek")] {
        assert_eq!(
            ends[turn].get("completed"),
            Some(&SESSIONS),
            "turn {} under a {library} reload: {:?}",
            turn + 1,
            ends[turn]
        );
    }

    // The last turn runs on the new code, all three steps, in every session.
    open_gate(&work, &format!("answer-t{LAST}"));
    open_gate(&work, &format!("bash-t{LAST}"));
    prompt_all(&web, &sessions, LAST);
    let last = turn_reasons(&web, &home, &sessions, LAST as u64);
    assert_eq!(last.get("completed"), Some(&SESSIONS), "{last:?}");
    let logs = logs_by_session(&home);
    for (n, session) in sessions.iter().enumerate() {
        let texts: Vec<String> = logs[session]
            .1
            .iter()
            .filter(|event| event["type"] == "tool/result" && event["data"]["turn"] == LAST)
            .map(|event| event["data"]["message"]["content"][0]["content"][0]["text"].to_string())
            .collect();
        assert_eq!(texts.len(), 2, "{session}: {texts:?}");
        assert!(
            texts[0].contains(&format!("bash s{n}-t{LAST}")),
            "{session}: {texts:?}"
        );
        assert!(
            texts[1].contains("notes the model reads"),
            "{session}: {texts:?}"
        );
    }
    let after = status_json(&home);
    // Five rounds of disposal later, nothing of the old copies still listens or runs.
    assert_eq!(
        after["listeners"], settled["listeners"],
        "{settled}\n{after}"
    );
    // A task that ends a moment after its turn (a connection closing) may still count.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut tasks = after["live_tasks"].as_u64();
    while tasks > settled["live_tasks"].as_u64() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        tasks = status_json(&home)["live_tasks"].as_u64();
    }
    assert!(
        tasks <= settled["live_tasks"].as_u64(),
        "tasks left behind: {tasks:?} now\n{settled}\n{after}"
    );
    // The model was asked each step of a completed turn exactly once: no request was lost
    // to a reload and then sent again.
    let mut asked: BTreeMap<(usize, usize, usize), usize> = BTreeMap::new();
    for request in server.requests() {
        if let Some(step) = step_of(&request.body) {
            *asked.entry(step).or_default() += 1;
        }
    }
    for turn in [1, 2, LAST] {
        for session in 0..SESSIONS {
            for step in 0..3 {
                assert_eq!(
                    asked.get(&(session, turn, step)),
                    Some(&1),
                    "session {session} turn {turn} step {step}"
                );
            }
        }
    }
    let copies = |status: &Value| status["library_copies"].as_u64().unwrap();
    // Thirteen copies loaded anew (agent-loop four times, llm-deepseek, tools and tool-bash
    // three); the truncated file never became one.
    assert_eq!(
        copies(&after),
        copies(&before) + 13,
        "before {before}\nafter {after}"
    );
    let (old, new) = (fibers_by_row(&before), fibers_by_row(&after));
    for row in LIBRARIES {
        assert!(
            new.get(row) > old.get(row) && old.contains_key(row),
            "row {row} was not mounted anew: before {old:?}\nafter {new:?}"
        );
    }
    let fibers = after["fibers"].as_array().unwrap();
    assert!(
        fibers.iter().all(|fiber| fiber["state"] == "ACTIVE"),
        "{after}"
    );
    assert_eq!(fibers.len(), before["fibers"].as_array().unwrap().len());

    assert_eq!(web.host.stop(), Some(0), "{:?}", web.host.stderr());
    let logs = logs_by_session(&home);
    for session in &sessions {
        let check = run_host(&home, &["session", "check", session]);
        assert_eq!(check.code, Some(0), "{session}: {check:?}");
        assert_nothing_lost_or_doubled(session, &logs[session].1);
    }
    eprintln!("reload-load: whole run {:?}", started.elapsed());
}
