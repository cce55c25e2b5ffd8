//! Reload under load: the real web profile runs twenty sessions against the fake DeepSeek
//! server, each turn three steps (a `bash` call, a `read`, a streamed answer), and while every
//! session is mid-turn the libraries of `tool-bash` (after a truncated copy the host must
//! refuse), `llm-deepseek`, `tools`, `agent-loop` and then all four at once are replaced by
//! copies dropped into `$DSH_HOME/plugins` (first in lookup, watched). Gates hold each turn in
//! the step a round wants (a `bash` call waiting for a file, an answer held mid-stream), so no
//! timing is guessed. Every turn ends completed or with a named reason, every stored log checks
//! sound with no event lost or doubled, nothing of the old copies keeps listening or running,
//! and a last turn completes on the new copies in every session.

mod logs;
mod model;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use dsh_tests::fake_deepseek::FakeDeepSeek;
use dsh_tests::sessions::PLAIN_STORE;
use dsh_tests::web::{Web, WebHost, fake_model_layer};
use dsh_tests::{TestDir, install_library, plugin_lib, run_host};
use serde_json::Value;

use logs::{assert_nothing_lost_or_doubled, logs_by_session, turn_end, turn_reasons};
use model::{open_gate, prompt_all, reply_for, step_of, wait_bash_started, wait_step};

/// The sessions running at once.
const SESSIONS: usize = 20;
/// The libraries replaced under load (each also the name of its row in the agent bundle).
const LIBRARIES: [&str; 4] = ["tools", "tool-bash", "agent-loop", "llm-deepseek"];
/// The turn after every reload, which must complete everywhere.
const LAST: usize = 8;

fn status_json(home: &Path) -> Value {
    let out = run_host(home, &["status", "--json"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    serde_json::from_str(out.stdout.lines().next().unwrap_or("")).unwrap()
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
