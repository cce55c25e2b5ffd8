//! Faults of the PostgreSQL session store: the server restarted while a turn is held (the turn
//! completes, every event stored once), the server down when the turn's events are committed
//! (a named error, the host ends the run non-zero, the events committed before it kept), the
//! database unreachable at start (the run is refused before a turn), and a lease taken over
//! under a running host (its next batch refused, named, nothing written over the new holder's).

use std::time::{Duration, Instant};

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::postgres::Cluster;
use dsh_tests::{HostProcess, TestDir, WAIT};
use serde_json::Value;

use super::kit::{QUICK_RETRY, args, tail};
use super::{Fault, Seen};
use crate::postgres::{check_stored, held_answer, postgres_patch};

pub(crate) fn faults() -> Vec<Fault> {
    vec![
        Fault {
            name: "postgres: server restarted mid-turn",
            expected: "the turn completes; every shown event stored once",
            run: restarted_mid_turn,
        },
        Fault {
            name: "postgres: server down at the turn's commit",
            expected: "named error (unreachable), exit != 0, earlier rows kept",
            run: down_at_commit,
        },
        Fault {
            name: "postgres: database unreachable at start",
            expected: "run refused before a turn: named, exit 1",
            run: unreachable_at_start,
        },
        Fault {
            name: "postgres: lease taken over under a running host",
            expected: "its next batch refused, named; the new holder's rows kept",
            run: lease_taken_over,
        },
    ]
}

/// A cluster, or the row's skip.
fn cluster(name: &str) -> Result<Cluster, Seen> {
    Cluster::start(name, false).map_err(Seen::Skipped)
}

/// A headless run on `cluster` held mid-answer at a gate; its dir, server, host and gate.
fn held_on(
    name: &str,
    cluster: &Cluster,
) -> (TestDir, FakeDeepSeek, HostProcess, std::path::PathBuf) {
    let dir = TestDir::new(&format!("fault-{name}"));
    dir.write(
        "home/cordis.patch.yml",
        &format!("{QUICK_RETRY}{}", postgres_patch(&cluster.url(), 10_000)),
    );
    let gate = dir.join("gate");
    let server = FakeDeepSeek::start(vec![held_answer(&gate, "AFTER")]);
    let all = args(&dir, &server.url(), "", "hello");
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let host = HostProcess::start_with_env(&dir.home(), &all, &[("DEEPSEEK_API_KEY", "sk-test")]);
    host.wait_stdout("PARTIAL_TWO", WAIT);
    (dir, server, host, gate)
}

fn session_of(host: &HostProcess) -> String {
    host.stdout()
        .iter()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find_map(|line| line["sessionId"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn shown_events(host: &HostProcess) -> usize {
    host.stdout()
        .iter()
        .filter(|line| line.contains("\"session_event\""))
        .count()
}

/// Waits until `cluster` holds `count` events of `id`.
fn stored_reaches(cluster: &Cluster, id: &str, count: usize) -> bool {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        let stored = cluster
            .psql(&format!(
                "SELECT count(*) FROM dsh_events WHERE session = '{id}'"
            ))
            .unwrap_or_default();
        if stored == count.to_string() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn restarted_mid_turn() -> Seen {
    let cluster = match cluster("fault-pg-restart") {
        Ok(cluster) => cluster,
        Err(skip) => return skip,
    };
    let (dir, _server, mut host, gate) = held_on("pg-restart", &cluster);
    let id = session_of(&host);
    assert!(stored_reaches(&cluster, &id, shown_events(&host)));
    cluster.stop_server().unwrap();
    cluster.start_server().unwrap();
    std::fs::write(&gate, "").unwrap();
    let code = host.wait_exit(WAIT);
    assert_eq!(code, Some(0), "{}", tail(&host.stderr().join("\n")));
    let shown = shown_events(&host);
    let stored = check_stored(&cluster, &dir, &id);
    assert_eq!(stored, shown, "every shown event stored once");
    Seen::Held(format!(
        "exit 0 after a restart (immediate stop); {stored} events stored, sound"
    ))
}

fn down_at_commit() -> Seen {
    let cluster = match cluster("fault-pg-down") {
        Ok(cluster) => cluster,
        Err(skip) => return skip,
    };
    let (dir, _server, mut host, gate) = held_on("pg-down", &cluster);
    let id = session_of(&host);
    let before = shown_events(&host);
    assert!(stored_reaches(&cluster, &id, before));
    cluster.stop_server().unwrap();
    std::fs::write(&gate, "").unwrap();
    let code = host.wait_exit(WAIT);
    let stderr = host.stderr().join("\n");
    assert_ne!(code, Some(0), "the run claims a turn it could not store");
    let said = stderr
        .lines()
        .find(|line| line.contains("session database is unreachable"))
        .unwrap_or_else(|| panic!("not named: {}", tail(&stderr)))
        .to_owned();
    cluster.start_server().unwrap();
    let stored = check_stored(&cluster, &dir, &id);
    assert!(
        stored >= before,
        "rows committed before the fault were lost"
    );
    Seen::Held(format!(
        "exit {code:?}, `{}`; {stored} earlier events kept, sound",
        super::cell(said.trim(), 60)
    ))
}

fn unreachable_at_start() -> Seen {
    let dir = TestDir::new("fault-pg-unreachable");
    let nowhere = dir.join("no-server");
    dir.write(
        "home/cordis.patch.yml",
        &postgres_patch(
            &format!("postgresql:///dsh?host={}&user=postgres", nowhere.display()),
            10_000,
        ),
    );
    let server = FakeDeepSeek::start(vec![Reply::text("never")]);
    let run = super::kit::run_in(dir, &server.url(), "", "hello", &[]);
    assert_eq!(run.out.code, Some(1), "{}", tail(&run.out.stderr));
    let said = run
        .out
        .stderr
        .lines()
        .find(|line| line.contains("cannot reach the session database"))
        .unwrap_or_else(|| panic!("not named: {}", tail(&run.out.stderr)))
        .to_owned();
    assert_eq!(server.requests().len(), 0, "a turn ran");
    Seen::Held(format!("exit 1, `{}`", super::cell(said.trim(), 70)))
}

fn lease_taken_over() -> Seen {
    let cluster = match cluster("fault-pg-lease") {
        Ok(cluster) => cluster,
        Err(skip) => return skip,
    };
    let (_dir, _server, mut host, gate) = held_on("pg-lease", &cluster);
    let id = session_of(&host);
    assert!(stored_reaches(&cluster, &id, shown_events(&host)));
    // Another host takes the lease (as one would after this one's expired).
    cluster
        .psql(&format!(
            "UPDATE dsh_leases SET owner = 'other-host', expires_at = dsh_now_ms() + 60000 \
             WHERE session = '{id}'"
        ))
        .unwrap();
    let before = cluster
        .psql(&format!(
            "SELECT count(*) FROM dsh_events WHERE session = '{id}'"
        ))
        .unwrap();
    std::fs::write(&gate, "").unwrap();
    let code = host.wait_exit(WAIT);
    let stderr = host.stderr().join("\n");
    assert_ne!(code, Some(0));
    let said = stderr
        .lines()
        .find(|line| line.contains("is held by host `other-host`"))
        .unwrap_or_else(|| panic!("not named: {}", tail(&stderr)))
        .to_owned();
    let after = cluster
        .psql(&format!(
            "SELECT count(*) FROM dsh_events WHERE session = '{id}'"
        ))
        .unwrap();
    assert_eq!(
        before, after,
        "a batch was written under another host's lease"
    );
    Seen::Held(format!(
        "exit {code:?}, `{}`; no row written",
        super::cell(said.trim(), 60)
    ))
}
