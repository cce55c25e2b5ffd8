//! The PostgreSQL session store against the JSONL one, in one run (`dsh-bench postgres`, run
//! only when named: it starts a throwaway cluster, with fsync on, under the temp dir, on the
//! same disk as the JSONL logs it is compared with):
//! - appends per second in batches of 1 and of 1,000, each batch durable before the next (a
//!   synced JSONL write; the store's one statement a batch, `dsh_append`);
//! - loading a 100,000-event session (read and parsed into the log, history derived);
//! - a step's overhead with the checkpoints, a real headless turn of the instant model;
//! - 1,000 sessions of the instant model across two hosts on one database: steps per second,
//!   the p99 latency from an event's commit in the log to its row, events lost or doubled;
//! - how long after a `kill -9` of the holder another host can take a session (2 s leases).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_pg_cluster::Cluster;
use dsh_session_jsonl::{Encoding, SessionHeader, read_session};
use dsh_session_log::{SessionEvent, SessionLog, TypeRegistry};

use crate::agent::{JSONL_STORE, step_gaps_on};
use crate::process::{Host, scratch};
use crate::session::{build_log, write_session};
use crate::{median, report};

/// Steps of the turn the step figures come from.
const STEPS: usize = 1_000;
/// Sessions in the two-host run, and steps in each one's turn.
const SESSIONS: usize = 1_000;
const SESSION_STEPS: usize = 5;
/// The lease the takeover figure is taken with.
const LEASE_MS: u64 = 2_000;

fn store_rows(url: &str, lease_ms: u64) -> String {
    format!(
        "- id: session-persistence-jsonl\n  disabled: true\n- insert:\n    - id: session-persistence-postgres\n      name: session-persistence-postgres\n      config:\n        url: \"{url}\"\n        leaseMs: {lease_ms}\n"
    )
}

pub(crate) fn run() -> anyhow::Result<()> {
    let cluster = Cluster::start("bench", true).map_err(|reason| anyhow::anyhow!(reason))?;
    let dir = scratch("postgres")?;
    appends(&cluster, &dir)?;
    loads(&cluster, &dir)?;
    let work = dir.join("work");
    std::fs::create_dir_all(&work)?;
    let jsonl_home = dir.join("jsonl-home");
    std::fs::create_dir_all(&jsonl_home)?;
    let (early, late) = step_gaps_on(&jsonl_home, &work, STEPS, JSONL_STORE, true)?;
    report("jsonl_step_with_checkpoints_at_step_10", early, "us");
    report("jsonl_step_with_checkpoints_at_step_1000", late, "us");
    let pg_home = dir.join("pg-home");
    std::fs::create_dir_all(&pg_home)?;
    let rows = store_rows(&cluster.url(), 10_000);
    let (early, late) = step_gaps_on(&pg_home, &work, STEPS, &rows, true)?;
    report("pg_step_with_checkpoints_at_step_10", early, "us");
    report("pg_step_with_checkpoints_at_step_1000", late, "us");
    two_hosts(&cluster, &dir)?;
    takeover(&cluster, &dir, &work)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A client of `cluster` on a runtime of its own, with the store's tables.
fn connect(cluster: &Cluster) -> anyhow::Result<(tokio::runtime::Runtime, tokio_postgres::Client)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let client = runtime.block_on(async {
        let (client, connection) =
            tokio_postgres::connect(&cluster.url(), tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        client
            .batch_execute(&dsh_session_pg::STATEMENTS.join(";\n"))
            .await?;
        anyhow::Ok(client)
    })?;
    Ok((runtime, client))
}

/// The events of a 100,000-event log, as the store writes them.
fn events() -> anyhow::Result<Vec<SessionEvent>> {
    let log = build_log(100_000)?;
    Ok(log.events().iter().map(|event| (**event).clone()).collect())
}

fn appends(cluster: &Cluster, dir: &Path) -> anyhow::Result<()> {
    let events = events()?;
    for (batch, count) in [(1_usize, 500_usize), (1_000, 20_000)] {
        let slice = &events[..count];
        let root = dir.join(format!("append-{batch}"));
        let started = Instant::now();
        write_session(&root, "bench", slice, Encoding::Raw, batch)?;
        let rate = count as f64 / started.elapsed().as_secs_f64();
        report(&format!("jsonl_append_batch_{batch}"), rate, "events/s");
        let rate = pg_appends(cluster, &format!("append-{batch}"), slice, batch)?;
        report(&format!("pg_append_batch_{batch}"), rate, "events/s");
    }
    Ok(())
}

/// Events per second written to session `id` in batches of `batch` events, each committed as
/// the store commits one: `dsh_append` (the lease held, the rows, the announcement).
fn pg_appends(
    cluster: &Cluster,
    id: &str,
    events: &[SessionEvent],
    batch: usize,
) -> anyhow::Result<f64> {
    let (runtime, client) = connect(cluster)?;
    runtime.block_on(async {
        let header = SessionHeader::new(id, 1).to_line();
        let lines: Vec<String> = events
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<_, _>>()?;
        let started = Instant::now();
        for (index, chunk) in events.chunks(batch).enumerate() {
            let from = index * batch;
            let seqs: Vec<i64> = chunk.iter().map(|e| e.seq as i64).collect();
            let kinds: Vec<&str> = chunk.iter().map(|e| e.kind.as_str()).collect();
            let times: Vec<i64> = chunk.iter().map(|e| e.time).collect();
            let texts: Vec<&str> = lines[from..from + chunk.len()]
                .iter()
                .map(String::as_str)
                .collect();
            // The session's row with its first batch, as the store writes it.
            let first = index == 0;
            let (hdr, created) = match first {
                true => (Some(header.as_str()), Some(1_i64)),
                false => (None, None),
            };
            client
                .query(
                    dsh_session_pg::APPEND_BATCH,
                    &[
                        &id,
                        &"bench",
                        &10_000_i64,
                        &seqs,
                        &kinds,
                        &times,
                        &texts,
                        &None::<&str>,
                        &None::<i64>,
                        &hdr,
                        &None::<&str>,
                        &created,
                    ],
                )
                .await?;
        }
        anyhow::Ok(events.len() as f64 / started.elapsed().as_secs_f64())
    })
}

/// Loading a 100,000-event session: read, parsed into the log, history derived; median of 5.
fn loads(cluster: &Cluster, dir: &Path) -> anyhow::Result<()> {
    let events = events()?;
    let path = write_session(&dir.join("load"), "load", &events, Encoding::Raw, 1_000)?;
    let mut samples = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let read = read_session(&path)?;
        let log = SessionLog::from_events(read.events, Arc::new(TypeRegistry::new()))?;
        std::hint::black_box(log.derive_messages().len());
        samples.push(started.elapsed().as_secs_f64() * 1e3);
    }
    report("jsonl_load_100k", median(samples), "ms");
    pg_appends(cluster, "load", &events, 1_000)?;
    let (runtime, client) = connect(cluster)?;
    let mut samples = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let rows = runtime.block_on(client.query(dsh_session_pg::SELECT_LINES, &[&"load"]))?;
        let events = rows
            .iter()
            .map(|row| serde_json::from_str::<SessionEvent>(row.get::<_, &str>(1)))
            .collect::<Result<Vec<_>, _>>()?;
        let log = SessionLog::from_events(events, Arc::new(TypeRegistry::new()))?;
        std::hint::black_box(log.derive_messages().len());
        samples.push(started.elapsed().as_secs_f64() * 1e3);
    }
    report("pg_load_100k", median(samples), "ms");
    Ok(())
}

/// `SESSIONS` sessions of the instant model, half in each of two hosts on one database.
fn two_hosts(cluster: &Cluster, dir: &Path) -> anyhow::Result<()> {
    // One patch a host: the same store, sessions of their own.
    let patch_of = |name: &str| -> anyhow::Result<String> {
        let patch = dir.join(format!("{name}.patch.yml"));
        std::fs::write(
            &patch,
            format!(
                "- insert:\n    - id: bench-model\n      name: bench-model\n      inject: [agent_loop, sessions, session_persistence]\n      config:\n        steps: {SESSION_STEPS}\n        concurrent: {}\n        sessionPrefix: {name}\n{}- id: headless\n  disabled: true\n",
                SESSIONS / 2,
                store_rows(&cluster.url(), 10_000)
            ),
        )?;
        Ok(patch.display().to_string())
    };
    // What the run stores is told apart from the rows before it by when it was stored.
    let before = cluster
        .psql("SELECT coalesce(max(stored_at), 0) FROM dsh_events")
        .map_err(anyhow::Error::msg)?;
    let started = Instant::now();
    let hosts = ["host-a", "host-b"]
        .iter()
        .map(|name| {
            let home = dir.join(name);
            std::fs::create_dir_all(&home)?;
            let patch = patch_of(name)?;
            Host::start(
                &home,
                &["--patch", &patch, "--profile", "headless", "--no-watch"],
            )
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    for host in &hosts {
        host.line_after("bench concurrent_done")?;
    }
    let wall = started.elapsed().as_secs_f64();
    for host in hosts {
        host.stop();
    }
    let steps = (SESSIONS * SESSION_STEPS) as f64;
    report("pg_two_hosts_steps_per_s", steps / wall, "steps/s");
    let run = format!("SELECT DISTINCT session FROM dsh_events WHERE stored_at > {before}");
    let query = |sql: String| cluster.psql(&sql).map_err(anyhow::Error::msg);
    let sessions = query(format!("SELECT count(*) FROM ({run}) r"))?;
    let unsound = query(format!(
        "SELECT count(*) FROM (SELECT session, count(*) AS n, max(seq) AS last \
         FROM dsh_events WHERE session IN ({run}) GROUP BY session) s WHERE n <> last + 1"
    ))?;
    let ended = query(format!(
        "SELECT count(*) FROM dsh_events WHERE kind = 'turn/end' AND session IN ({run})"
    ))?;
    report(
        "pg_two_hosts_sessions_stored",
        sessions.parse()?,
        "sessions",
    );
    report("pg_two_hosts_turns_ended", ended.parse()?, "turns");
    report(
        "pg_two_hosts_sessions_with_gaps_or_doubles",
        unsound.parse()?,
        "sessions",
    );
    let p99 = query(format!(
        "SELECT percentile_disc(0.99) WITHIN GROUP (ORDER BY stored_at - time) \
         FROM dsh_events WHERE stored_at > {before}"
    ))?;
    report("pg_two_hosts_p99_commit_to_row", p99.parse()?, "ms");
    Ok(())
}

/// A host holding a session mid-turn is killed; the time until another can take its lease.
fn takeover(cluster: &Cluster, dir: &Path, work: &Path) -> anyhow::Result<()> {
    let home = dir.join("takeover-home");
    std::fs::create_dir_all(&home)?;
    let patch = dir.join("takeover.patch.yml");
    std::fs::write(
        &patch,
        format!(
            "- insert:\n    - id: bench-model\n      name: bench-model\n      config:\n        steps: 1000000\n{}- id: agent-loop\n  config:\n    maxSteps: 1000010\n",
            store_rows(&cluster.url(), LEASE_MS)
        ),
    )?;
    let mut samples = Vec::new();
    for _ in 0..3 {
        let host = Host::instant_turn(&home, &patch, work)?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let session = loop {
            let held = cluster
                .psql("SELECT session FROM dsh_leases WHERE owner NOT LIKE 'bench-%' LIMIT 1")
                .map_err(anyhow::Error::msg)?;
            if !held.is_empty() {
                break held;
            }
            anyhow::ensure!(Instant::now() < deadline, "no lease was taken");
            std::thread::sleep(Duration::from_millis(20));
        };
        host.kill()?;
        let killed = Instant::now();
        loop {
            let taken = cluster.psql(&format!(
                "SELECT dsh_hold_lease('{session}', 'bench-taker', {LEASE_MS})"
            ));
            if taken.is_ok() {
                break;
            }
            anyhow::ensure!(
                killed.elapsed() < Duration::from_secs(60),
                "never taken over"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        samples.push(killed.elapsed().as_secs_f64() * 1e3);
        cluster
            .psql("DELETE FROM dsh_leases")
            .map_err(anyhow::Error::msg)?;
    }
    report("pg_lease_takeover_after_kill", median(samples), "ms");
    Ok(())
}
