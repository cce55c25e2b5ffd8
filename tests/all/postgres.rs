//! Sessions on PostgreSQL (`session-persistence-postgres`, chosen by one patch): the real host
//! against a throwaway cluster on a Unix socket. A headless turn stored as rows and resumed; the
//! listing, search, archive and trash; a session held by a running host refused to another
//! with the holder named, then taken over after the holder is killed (its lease expired) with
//! the crash closers applied; a second writer of a seq refused; every stored log sound by
//! `dsh-host session check` on its rows written out as a log. Following across hosts is in
//! `postgres_follow`.

use std::time::{Duration, Instant};

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent, first_chunk};
use dsh_tests::postgres::Cluster;
use dsh_tests::{HostProcess, TestDir, WAIT, run_host, run_host_with_env, skip};
use serde_json::{Value, json};

/// The one-row patch: the JSONL store off, the PostgreSQL store on `url`, leases of `lease_ms`.
pub(crate) fn postgres_patch(url: &str, lease_ms: u64) -> String {
    format!(
        "- id: session-persistence-jsonl\n  disabled: true\n\
         - insert:\n    - id: session-persistence-postgres\n      name: session-persistence-postgres\n      \
         config:\n        url: \"{url}\"\n        leaseMs: {lease_ms}\n        batchMs: 20\n"
    )
}

/// A cluster for `test`, or the skip said.
pub(crate) fn cluster(test: &str) -> Option<Cluster> {
    match Cluster::start(test, false) {
        Ok(cluster) => Some(cluster),
        Err(reason) => {
            skip(test, &reason);
            None
        }
    }
}

/// A home whose patch layer stores sessions in `cluster`.
pub(crate) fn home_on(name: &str, cluster: &Cluster, lease_ms: u64) -> TestDir {
    let dir = TestDir::new(name);
    dir.write(
        "home/cordis.patch.yml",
        &postgres_patch(&cluster.url(), lease_ms),
    );
    dir
}

fn args(dir: &TestDir, url: &str, extra: &[&str], task: &str) -> Vec<String> {
    let mut args = dsh_tests::headless::patched_args_at(url, dir, "");
    args.extend(["--output", "stream-json"].map(str::to_owned));
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    args.push(task.to_owned());
    args
}

/// A finished run: its exit code, the events it showed, its stderr and its session.
struct Ran {
    code: Option<i32>,
    events: Vec<Value>,
    stderr: String,
    session: String,
}

fn run(dir: &TestDir, url: &str, extra: &[&str], task: &str) -> Ran {
    let args = args(dir, url, extra, task);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_host_with_env(&dir.home(), &args, &[("DEEPSEEK_API_KEY", "sk-test")]);
    let lines: Vec<String> = out.stdout.lines().map(str::to_owned).collect();
    let events = out
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["type"] == "session_event")
        .map(|line| line["event"].clone())
        .collect();
    Ran {
        code: out.code,
        events,
        stderr: out.stderr,
        session: session_of(&lines),
    }
}

/// The session a run's stream-json lines are of.
pub(crate) fn session_of(lines: &[String]) -> String {
    lines
        .iter()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find_map(|line| line["sessionId"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The session's rows written out as a log (header, then every event by seq) and checked by
/// `dsh-host session check`; answers the number of events.
pub(crate) fn check_stored(cluster: &Cluster, dir: &TestDir, id: &str) -> usize {
    let header = cluster
        .psql(&format!(
            "SELECT header FROM dsh_sessions WHERE id = '{id}'"
        ))
        .unwrap();
    assert!(!header.is_empty(), "no row for session {id}");
    let lines = cluster
        .psql(&format!(
            "SELECT line FROM dsh_events WHERE session = '{id}' ORDER BY seq"
        ))
        .unwrap();
    let seqs = cluster
        .psql(&format!(
            "SELECT count(*) = coalesce(max(seq) + 1, 0) FROM dsh_events WHERE session = '{id}'"
        ))
        .unwrap();
    assert_eq!(seqs, "t", "the seqs of {id} are not contiguous from 0");
    let log = dir.write(
        &format!("exported/{id}/session.jsonl"),
        &format!("{header}\n{lines}\n"),
    );
    let check = run_host(&dir.home(), &["session", "check", log.to_str().unwrap()]);
    assert_eq!(
        check.code,
        Some(0),
        "unsound: {}{}",
        check.stdout,
        check.stderr
    );
    lines.lines().count()
}

#[test]
fn a_turn_is_stored_as_rows_and_resumes_lists_searches_and_trashes() {
    let Some(cluster) = cluster("postgres::a_turn_is_stored_as_rows") else {
        return;
    };
    let dir = home_on("pg-turn", &cluster, 10_000);
    let server = FakeDeepSeek::start(vec![
        Reply::text("The marmot answer."),
        Reply::text("Second answer."),
    ]);
    let Ran {
        code,
        events,
        stderr,
        session: id,
    } = run(&dir, &server.url(), &[], "Tell me about marmots");
    assert_eq!(code, Some(0), "{stderr}");
    let stored = check_stored(&cluster, &dir, &id);
    assert_eq!(stored, events.len(), "every shown event is a row");
    // No JSONL log was written: the store is the database.
    assert!(!dir.home().join("sessions").exists());
    // The lease was given back when the run ended.
    assert_eq!(
        cluster
            .psql(&format!(
                "SELECT count(*) FROM dsh_leases WHERE session = '{id}'"
            ))
            .unwrap(),
        "0"
    );

    let Ran {
        code,
        events: resumed,
        stderr,
        ..
    } = run(&dir, &server.url(), &["--resume", &id], "go on");
    assert_eq!(code, Some(0), "{stderr}");
    let first_new = resumed
        .iter()
        .filter_map(|event| event["seq"].as_u64())
        .min()
        .unwrap();
    assert_eq!(
        first_new as usize, stored,
        "the resumed turn appends after the stored events"
    );
    let total = check_stored(&cluster, &dir, &id);
    assert_eq!(total, stored + resumed.len());
    let second = &server.requests()[1];
    let history = second.body["messages"].as_array().unwrap();
    assert!(
        history
            .iter()
            .any(|message| message["content"] == "The marmot answer."),
        "the resumed request carries the stored history: {history:?}"
    );

    // The listing, search, archive and trash of a web host on the same database.
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let mut web = dsh_tests::web::start(&server, &dir);
    let listed = |web: &dsh_tests::web::Web| -> Vec<Value> {
        web.call("session.list", &json!({}))["sessions"]
            .as_array()
            .unwrap()
            .clone()
    };
    // The store mounts beside the web server (it connects first): poll until it lists.
    let deadline = Instant::now() + WAIT;
    let row = loop {
        let rows = listed(&web);
        if let Some(row) = rows.iter().find(|row| row["id"] == id.as_str()) {
            break row.clone();
        }
        assert!(
            Instant::now() < deadline,
            "the stored session is not listed: {rows:?}: {}",
            web.host.stderr().join("\n")
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        row["title"]
            .as_str()
            .unwrap_or_default()
            .contains("marmots"),
        "the listing carries its title: {row}"
    );
    assert!(row["activeAt"].as_i64().is_some(), "{row}");
    let hits = web.call("session.search", &json!({"query": "MARMOT answer"}))["hits"].clone();
    assert_eq!(hits[0]["sessionId"], id.as_str(), "{hits}");
    assert!(
        hits[0]["snippet"]
            .as_str()
            .unwrap()
            .contains("marmot answer"),
        "{hits}"
    );
    let none = web.call("session.search", &json!({"query": "zebras"}))["hits"].clone();
    assert_eq!(none, json!([]));
    web.call(
        "session.archive",
        &json!({"sessionId": id, "archived": true}),
    );
    let row = listed(&web)
        .into_iter()
        .find(|row| row["id"] == id.as_str())
        .unwrap();
    assert_eq!(row["archived"], true, "{row}");
    web.call("session.delete", &json!({"sessionId": id}));
    assert!(
        !listed(&web).iter().any(|row| row["id"] == id.as_str()),
        "trashed but listed"
    );
    assert_eq!(
        cluster
            .psql(&format!(
                "SELECT count(*) FROM dsh_events WHERE session = '{id}'"
            ))
            .unwrap(),
        total.to_string(),
        "nothing is erased by the trash"
    );
    web.call("session.restore", &json!({"sessionId": id}));
    assert!(
        listed(&web).iter().any(|row| row["id"] == id.as_str()),
        "restored but not listed"
    );
    // The page's download: the archive made from the rows loads into a home on JSONL.
    let (head, body) = crate::export::web::get_bytes(
        &web.address,
        &format!("/export?session={id}"),
        &[("Authorization", &web.bearer)],
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let inside = crate::export::entries(&body);
    let manifest: Value = serde_json::from_slice(&inside[0].1).unwrap();
    assert_eq!(manifest["session"], id.as_str());
    assert!(String::from_utf8_lossy(&inside[1].1).contains("marmot answer"));
    let file = dir.join("downloaded.tar.zst");
    std::fs::write(&file, &body).unwrap();
    let imported = crate::export::host(
        &dir.join("other-home"),
        &["session", "import", file.to_str().unwrap()],
    );
    assert_eq!(imported.code, Some(0), "{imported:?}");
    assert_eq!(web.host.stop(), Some(0));
}

/// The model's answer held at `gate` after two deltas (`PARTIAL_TWO` tells it arrived), then
/// `after` once the gate opens.
pub(crate) fn held_answer(gate: &std::path::Path, after: &str) -> Reply {
    Reply::Sse(vec![
        first_chunk(),
        SseEvent::content("PARTIAL_ONE "),
        SseEvent::content("PARTIAL_TWO "),
        SseEvent::Gate(gate.to_path_buf()),
        SseEvent::content(after),
        SseEvent::Done,
    ])
}

/// A run held mid-answer at a gate, on the database.
pub(crate) fn held(dir: &TestDir, server: &FakeDeepSeek) -> HostProcess {
    let all = args(dir, &server.url(), &[], "hello");
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let host = HostProcess::start_with_env(&dir.home(), &all, &[("DEEPSEEK_API_KEY", "sk-test")]);
    host.wait_stdout("PARTIAL_TWO", WAIT);
    host
}

#[test]
fn a_held_session_is_refused_elsewhere_and_taken_over_after_its_host_is_killed() {
    let Some(cluster) = cluster("postgres::a_held_session_is_refused") else {
        return;
    };
    let lease_ms = 1_500;
    let dir = home_on("pg-lease", &cluster, lease_ms);
    let gate = dir.join("gate");
    let server = FakeDeepSeek::start(vec![held_answer(&gate, "never"), Reply::text("RESUMED")]);
    let mut host_a = held(&dir, &server);
    let id = session_of(&host_a.stdout());
    // Host B (another process on the same database) may not write the session A holds.
    let Ran { code, stderr, .. } = run(&dir, &server.url(), &["--resume", &id], "go on");
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains("is held by host") && stderr.contains(&id),
        "the refusal names the holder: {stderr}"
    );

    host_a.signal(libc::SIGKILL);
    host_a.wait_exit(WAIT);
    std::fs::write(&gate, "").unwrap();
    let killed_at = Instant::now();
    // Until the lease ends the session stays A's; after it, B takes it over.
    let resumed = loop {
        let Ran {
            code,
            events,
            stderr,
            ..
        } = run(&dir, &server.url(), &["--resume", &id], "go on");
        if code == Some(0) {
            break events;
        }
        assert!(stderr.contains("is held by host"), "{stderr}");
        assert!(
            killed_at.elapsed() < Duration::from_millis(lease_ms * 6),
            "not taken over in {:?}",
            killed_at.elapsed()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let took = killed_at.elapsed();
    assert!(
        took >= Duration::from_millis(lease_ms / 2),
        "taken over before the lease ended"
    );
    // The interrupted turn was closed by the crash closers before the new one.
    let kinds: Vec<&str> = resumed.iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(kinds.contains(&"turn/end"), "{kinds:?}");
    let ends = cluster
        .psql(&format!(
            "SELECT count(*) FROM dsh_events WHERE session = '{id}' AND kind = 'turn/end'"
        ))
        .unwrap();
    assert_eq!(ends, "2", "the killed turn closed, the resumed one ended");
    check_stored(&cluster, &dir, &id);
}

#[test]
fn a_second_writer_of_a_seq_is_refused_and_reported() {
    let Some(cluster) = cluster("postgres::a_second_writer") else {
        return;
    };
    let dir = home_on("pg-seq", &cluster, 10_000);
    let gate = dir.join("gate");
    let server = FakeDeepSeek::start(vec![held_answer(&gate, "after the gate")]);
    let mut host = held(&dir, &server);
    let id = session_of(&host.stdout());
    // Another writer takes the next seq while the host's turn is held.
    let deadline = Instant::now() + WAIT;
    let next = loop {
        let stored = cluster
            .psql(&format!(
                "SELECT count(*) FROM dsh_events WHERE session = '{id}'"
            ))
            .unwrap();
        let shown = host
            .stdout()
            .iter()
            .filter(|l| l.contains("session_event"))
            .count();
        if stored == shown.to_string() {
            break stored;
        }
        assert!(
            Instant::now() < deadline,
            "the shown events were not committed"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    cluster
        .psql(&format!(
            "INSERT INTO dsh_events (session, seq, kind, time, line) VALUES \
             ('{id}', {next}, 'intruder/event', 0, '{{}}')"
        ))
        .unwrap();
    std::fs::write(&gate, "").unwrap();
    let code = host.wait_exit(WAIT);
    let stderr = host.stderr().join("\n");
    assert_ne!(code, Some(0), "the run claims a turn it could not store");
    assert!(
        stderr.contains("another writer already wrote these seqs") && stderr.contains(&id),
        "the refusal is named: {stderr}"
    );
    // The intruder's row stands; the host wrote nothing over it.
    assert_eq!(
        cluster
            .psql(&format!(
                "SELECT kind FROM dsh_events WHERE session = '{id}' AND seq = {next}"
            ))
            .unwrap(),
        "intruder/event"
    );
}

#[test]
fn a_session_another_host_only_showed_is_free_again_after_a_lease() {
    let Some(cluster) = cluster("postgres::a_session_another_host_only_showed") else {
        return;
    };
    let lease_ms = 1_500;
    let dir_a = home_on("pg-shown-a", &cluster, lease_ms);
    let dir_b = home_on("pg-shown-b", &cluster, lease_ms);
    let server = FakeDeepSeek::start(vec![Reply::text("first"), Reply::text("second")]);
    let ran = run(&dir_a, &server.url(), &[], "hello");
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let id = ran.session;
    // Host B's page shows the session: B opens it (and so holds its lease), writes nothing.
    let mut web = dsh_tests::web::start(&server, &dir_b);
    let deadline = Instant::now() + WAIT;
    loop {
        let answer = web.try_call("session.history", &json!({"sessionId": id}));
        if answer["ok"] == true {
            break;
        }
        assert!(Instant::now() < deadline, "no history: {answer}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let holder = cluster
        .psql(&format!(
            "SELECT owner FROM dsh_leases WHERE session = '{id}'"
        ))
        .unwrap();
    assert!(!holder.is_empty(), "host B holds the session it opened");
    // Host A goes on with it once B's idle lease lapses (B runs no turn in it).
    let shown_at = Instant::now();
    let resumed = loop {
        let resumed = run(&dir_a, &server.url(), &["--resume", &id], "go on");
        if resumed.code == Some(0) {
            break resumed;
        }
        assert!(
            resumed.stderr.contains("is held by host"),
            "{}",
            resumed.stderr
        );
        assert!(
            shown_at.elapsed() < Duration::from_millis(lease_ms * 8),
            "host B kept the session it only showed"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        resumed
            .events
            .iter()
            .any(|event| event["type"] == "turn/end"),
        "the resumed turn ran"
    );
    check_stored(&cluster, &dir_a, &id);
    assert_eq!(web.host.stop(), Some(0));
}
