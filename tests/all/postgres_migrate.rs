//! `dsh-host session migrate`: sessions made on the JSONL store copied into a throwaway
//! PostgreSQL cluster (rows counted against the logs, one resumed on the database store), then
//! copied back into a fresh home as logs that `session check` finds sound and `session derive`
//! derives as before; a second migration refuses each session by name; a bad `--to`, a bad
//! URL and an unreachable server are errors that name them.

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::{Output, TestDir, run_host, run_host_with_env};
use serde_json::Value;

use crate::postgres::{check_stored, cluster, postgres_patch};

/// A headless run in `dir`'s home (`extra` before the task): its output, shown events and session.
fn run(
    dir: &TestDir,
    server: &FakeDeepSeek,
    extra: &[&str],
    task: &str,
) -> (Output, Vec<Value>, String) {
    let mut args = dsh_tests::headless::patched_args_at(&server.url(), dir, "");
    args.extend(["--output", "stream-json"].map(str::to_owned));
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    args.push(task.to_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_host_with_env(&dir.home(), &args, &[("DEEPSEEK_API_KEY", "sk-test")]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .collect();
    let session = lines
        .iter()
        .find_map(|line| line["sessionId"].as_str().map(str::to_owned))
        .unwrap();
    let events = lines
        .iter()
        .filter(|line| line["type"] == "session_event")
        .map(|line| line["event"].clone())
        .collect();
    (out, events, session)
}

/// `dsh-host session ARGS` in `home`, asserting its exit code.
fn session(home: &std::path::Path, args: &[&str], code: i32) -> Output {
    let mut all = vec!["session"];
    all.extend_from_slice(args);
    let out = run_host(home, &all);
    assert_eq!(
        out.code,
        Some(code),
        "session {args:?}: {}{}",
        out.stdout,
        out.stderr
    );
    out
}

/// The number of events `session show` counts in session `id` of `home`.
fn event_count(home: &std::path::Path, id: &str) -> u64 {
    let shown = session(home, &["show", id, "--json"], 0);
    let shown: Value = serde_json::from_str(shown.stdout.trim()).unwrap();
    shown["summary"]["events"].as_u64().unwrap()
}

/// A plain log of session `id` beside session `beside`'s, its header `beside`'s with the id
/// changed, then `body`.
fn plant_log(home: &std::path::Path, beside: &str, id: &str, body: &str) {
    let shown = session(home, &["show", beside, "--json"], 0);
    let shown: Value = serde_json::from_str(shown.stdout.trim()).unwrap();
    let project = std::path::Path::new(shown["path"].as_str().unwrap())
        .parent()
        .and_then(std::path::Path::parent)
        .unwrap()
        .to_path_buf();
    let mut header = shown["header"].clone();
    header["id"] = Value::from(id);
    let dir = project.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("session.jsonl"), format!("{header}\n{body}")).unwrap();
}

#[test]
fn sessions_migrate_to_postgres_resume_there_and_migrate_back_with_the_same_history() {
    let Some(cluster) = cluster("postgres_migrate::sessions_migrate") else {
        return;
    };
    let url = cluster.url();
    let dir = TestDir::new("pg-migrate");
    let server = FakeDeepSeek::start(vec![
        Reply::text("The marmot answer."),
        Reply::text("The otter answer."),
        Reply::text("Resumed on the database."),
    ]);
    // Two sessions on the home's default store, the JSONL logs.
    let (_, _, marmots) = run(&dir, &server, &[], "Tell me about marmots");
    let (_, _, otters) = run(&dir, &server, &[], "Tell me about otters");
    let home = dir.home();
    let ids = [marmots.as_str(), otters.as_str()];
    let counts = ids.map(|id| event_count(&home, id));
    let derived = ids.map(|id| session(&home, &["derive", id], 0).stdout);
    assert!(derived[0].contains("The marmot answer."), "{}", derived[0]);

    let migrated = session(&home, &["migrate", "--to", "postgres", &url], 0);
    for (id, count) in ids.iter().zip(counts) {
        assert!(
            migrated
                .stdout
                .contains(&format!("migrated {id}: {count} events, history verified")),
            "{}",
            migrated.stdout
        );
        let rows = check_stored(&cluster, &dir, id);
        assert_eq!(rows as u64, count, "every event of {id} is a row");
    }
    assert!(
        migrated.stdout.contains("2 of 2 session(s) migrated"),
        "{}",
        migrated.stdout
    );
    let title = cluster
        .psql(&format!(
            "SELECT title FROM dsh_sessions WHERE id = '{marmots}'"
        ))
        .unwrap();
    assert!(
        title.contains("marmots"),
        "the listing's title came along: {title}"
    );

    // A second migration writes nothing over the rows: each session is refused by name, and
    // a log that does not read is named and skipped.
    // A line that is no JSON with a `turn/end` after it: damage inside committed history.
    let broken = "0badf00d-0000-4000-8000-000000000001";
    plant_log(
        &home,
        &marmots,
        broken,
        "{not json\n{\"type\":\"turn/end\",\"seq\":1}\n",
    );
    // The otters' events as the rows hold them, then half a line: a torn tail, left behind.
    let torn = "70e70e70-0000-4000-8000-000000000002";
    let rows = cluster
        .psql(&format!(
            "SELECT line FROM dsh_events WHERE session = '{otters}' ORDER BY seq"
        ))
        .unwrap();
    plant_log(
        &home,
        &marmots,
        torn,
        &format!("{rows}\n{{\"type\":\"assis"),
    );
    let again = session(&home, &["migrate", "--to", "postgres", &url], 1);
    assert!(
        again
            .stderr
            .contains(&format!("not migrated: session `{broken}`")),
        "{}",
        again.stderr
    );
    assert_eq!(
        cluster
            .psql(&format!(
                "SELECT count(*) FROM dsh_sessions WHERE id = '{broken}'"
            ))
            .unwrap(),
        "0"
    );
    assert!(
        again.stdout.contains(&format!(
            "migrated {torn}: {} events, history verified (the log's torn tail was left behind",
            counts[1]
        )),
        "{}",
        again.stdout
    );
    for id in ids {
        assert!(
            again
                .stderr
                .contains(&format!("session `{id}` is already stored in the database")),
            "{}",
            again.stderr
        );
    }
    assert!(
        again.stdout.contains("1 of 4 session(s) migrated"),
        "{}",
        again.stdout
    );

    // The database store resumes a migrated session where its log ended.
    dir.write("home/cordis.patch.yml", &postgres_patch(&url, 10_000));
    let (_, resumed, _) = run(&dir, &server, &["--resume", &marmots], "go on");
    let first_new = resumed
        .iter()
        .filter_map(|e| e["seq"].as_u64())
        .min()
        .unwrap();
    assert_eq!(
        first_new, counts[0],
        "the resumed turn appends after the migrated events"
    );
    let history = server.requests()[2].body["messages"].clone();
    assert!(
        history.to_string().contains("The marmot answer."),
        "the resumed request carries the migrated history: {history}"
    );
    let total = check_stored(&cluster, &dir, &marmots) as u64;
    assert_eq!(total, counts[0] + resumed.len() as u64);

    // Back into a fresh home as logs: sound, and deriving what the rows derive.
    let back = TestDir::new("pg-migrate-back");
    let fresh = back.home();
    let written = session(&fresh, &["migrate", "--to", "jsonl", &url], 0);
    assert!(
        written.stdout.contains("3 of 3 session(s) migrated"),
        "{}",
        written.stdout
    );
    assert!(
        written.stdout.contains(&format!(
            "migrated {marmots}: {total} events, history verified"
        )),
        "{}",
        written.stdout
    );
    for (id, before) in ids.iter().zip(&derived) {
        let checked = session(&fresh, &["check", id], 0);
        assert!(checked.stdout.starts_with("sound:"), "{}", checked.stdout);
        let rows = dir.join(&format!("exported/{id}/session.jsonl"));
        let of_rows = session(&home, &["derive", rows.to_str().unwrap()], 0).stdout;
        let after = session(&fresh, &["derive", id], 0).stdout;
        assert_eq!(after, of_rows, "session {id} derives what its rows derive");
        assert!(
            after.starts_with(before.as_str()),
            "session {id} lost history"
        );
    }
    assert_eq!(
        session(&fresh, &["derive", &otters], 0).stdout,
        derived[1],
        "the untouched session derives exactly as before the round trip"
    );

    // Again into the same home: refused by name, nothing written over the logs.
    let twice = session(&fresh, &["migrate", "--to", "jsonl", &url], 1);
    for id in ids {
        assert!(
            twice
                .stderr
                .contains(&format!("session `{id}` is already stored in")),
            "{}",
            twice.stderr
        );
    }

    // A session open elsewhere is refused by name: one a host holds a lease of...
    cluster
        .psql(&format!(
            "INSERT INTO dsh_leases (session, owner, expires_at) \
             VALUES ('{otters}', 'host-x', dsh_now_ms() + 600000)"
        ))
        .unwrap();
    let third = TestDir::new("pg-migrate-leased").home();
    let leased = session(&third, &["migrate", "--to", "jsonl", &url], 1);
    assert!(
        leased
            .stderr
            .contains(&format!("session `{otters}` is open in host `host-x`")),
        "{}",
        leased.stderr
    );
    assert!(
        leased.stdout.contains("2 of 3 session(s) migrated"),
        "{}",
        leased.stdout
    );
    // ...and a log whose lock a process holds (this one, as the JSONL store takes it).
    let shown = session(&third, &["show", &marmots, "--json"], 0);
    let shown: Value = serde_json::from_str(shown.stdout.trim()).unwrap();
    let lock_path =
        std::path::Path::new(shown["path"].as_str().unwrap()).with_file_name("session.lock");
    std::fs::write(&lock_path, std::process::id().to_string()).unwrap();
    let lock = std::fs::File::open(&lock_path).unwrap();
    lock.try_lock().unwrap();
    let locked = session(&third, &["migrate", "--to", "postgres", &url], 1);
    assert!(
        locked.stderr.contains(&format!(
            "session `{marmots}` is open in process {}",
            std::process::id()
        )),
        "{}",
        locked.stderr
    );
    drop(lock);
}

#[test]
fn a_bad_destination_url_or_server_is_named() {
    let dir = TestDir::new("pg-migrate-bad");
    let home = dir.home();
    let bad_to = session(&home, &["migrate", "--to", "mysql", "postgresql:///dsh"], 1);
    assert!(
        bad_to
            .stderr
            .contains("--to is `postgres` or `jsonl`, not `mysql`"),
        "{}",
        bad_to.stderr
    );
    let bad_url = session(
        &home,
        &[
            "migrate",
            "--to",
            "postgres",
            "postgresql://localhost:notaport/dsh",
        ],
        1,
    );
    assert!(
        bad_url
            .stderr
            .contains("connection string `postgresql://localhost:notaport/dsh`"),
        "{}",
        bad_url.stderr
    );
    let compressed_rows = session(
        &home,
        &[
            "migrate",
            "--to",
            "postgres",
            "postgresql:///dsh",
            "--compression",
            "none",
        ],
        1,
    );
    assert!(
        compressed_rows
            .stderr
            .contains("--compression is for `--to jsonl`"),
        "{}",
        compressed_rows.stderr
    );
    // A socket folder where no server listens.
    let nowhere = format!(
        "postgresql:///dsh?host={}&user=postgres",
        dir.join("no-server").display()
    );
    let unreachable = session(&home, &["migrate", "--to", "jsonl", &nowhere], 1);
    assert!(
        unreachable
            .stderr
            .contains(&format!("the database `{nowhere}` cannot be reached")),
        "{}",
        unreachable.stderr
    );
}

#[test]
fn a_trashed_session_migrates_to_postgres_and_back_still_in_the_trash() {
    let Some(cluster) = cluster("postgres_migrate::a_trashed_session") else {
        return;
    };
    let url = cluster.url();
    let dir = TestDir::new("pg-migrate-trash");
    let server = FakeDeepSeek::start(vec![
        Reply::text("The kept answer."),
        Reply::text("The deleted answer."),
    ]);
    let (_, _, kept) = run(&dir, &server, &[], "Keep this one");
    let (_, _, gone) = run(&dir, &server, &[], "Delete this one");
    let home = dir.home();
    let count = event_count(&home, &gone);
    let derived = session(&home, &["derive", &gone], 0).stdout;
    // Deleted as the page deletes it: into the store's trash.
    let mut web = dsh_tests::web::start(&server, &dir);
    web.call("session.delete", &serde_json::json!({"sessionId": gone}));
    assert_eq!(web.host.stop(), Some(0));
    let entry = std::fs::read_dir(home.join("trash"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .find(|name| name.starts_with(&format!("{gone}-")))
        .expect("the deleted session is in the trash");

    let migrated = session(&home, &["migrate", "--to", "postgres", &url], 0);
    assert!(
        migrated.stdout.contains(&format!(
            "migrated {gone} (in the trash): {count} events, history verified"
        )),
        "{}",
        migrated.stdout
    );
    assert!(
        migrated.stdout.contains("2 of 2 session(s) migrated"),
        "{}",
        migrated.stdout
    );
    let trashed = |id: &str| {
        cluster
            .psql(&format!(
                "SELECT trashed_at FROM dsh_sessions WHERE id = '{id}'"
            ))
            .unwrap()
    };
    assert_eq!(
        format!("{gone}-{}", trashed(&gone)),
        entry,
        "trashed when it was"
    );
    assert_eq!(trashed(&kept), "", "the kept session is listed");

    // Back as logs into a fresh home: the trashed one lands in the trash, not the listing.
    let back = TestDir::new("pg-migrate-trash-back");
    let fresh = back.home();
    let written = session(&fresh, &["migrate", "--to", "jsonl", &url], 0);
    assert!(
        written.stdout.contains("2 of 2 session(s) migrated"),
        "{}",
        written.stdout
    );
    let listed = session(&fresh, &["list"], 0).stdout;
    assert!(
        listed.contains(&kept) && !listed.contains(&gone),
        "{listed}"
    );
    let returned = fresh.join("trash").join(&entry);
    let log = ["session.jsonl.zstd", "session.jsonl"]
        .map(|name| returned.join(name))
        .into_iter()
        .find(|path| path.is_file())
        .expect("a log in the trash entry");
    let again = session(&fresh, &["derive", log.to_str().unwrap()], 0).stdout;
    assert_eq!(again, derived, "the trashed session derives as before");
}
