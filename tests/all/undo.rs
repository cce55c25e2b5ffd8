//! Undo through the web profile: a turn's `write`, `edit` and `bash` changes (files created,
//! changed, removed, re-moded, a directory tree made and one removed, a link) are put back
//! exactly by `/undo` while `.git` is left as it is; `session.rewind` reverts every turn from
//! a given one; a file changed since by someone else stops the undo naming it, and so does a
//! missing snapshot, with nothing touched; each change and each undo is a session event, so a
//! session reopened by another host can still undo.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::sessions::{PLAIN_STORE, stored_logs};
use dsh_tests::web::{Web, start_in_workspace, turn_ended};
use serde_json::{Value, json};

fn bash(command: &str) -> (&'static str, Value) {
    (
        "bash",
        json!({"command": command, "description": "change files"}),
    )
}

/// A turn of one call per step, then a closing text.
fn turn(calls: &[(&str, Value)]) -> Vec<Reply> {
    Reply::one_call_per_step(calls.iter().map(|(tool, args)| (*tool, args)), "Done.")
}

fn text(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// Prompts `session` and waits for its turn to end.
fn run_turn(web: &Web, socket: &mut dsh_tests::http::Socket, session: &str, prompt: &str) {
    web.prompt(session, prompt);
    socket.until(400, turn_ended);
    socket.until(300, |frame| {
        frame["type"] == "host/session-status" && frame["running"] == false
    });
}

fn command(web: &Web, session: &str, line: &str) -> (String, String) {
    let answer = web.prompt(session, line);
    (
        answer["command"]["kind"].as_str().unwrap_or("").to_owned(),
        answer["command"]["text"].as_str().unwrap_or("").to_owned(),
    )
}

fn all_events(dir: &TestDir) -> Vec<Value> {
    stored_logs(&dir.home())
        .into_iter()
        .flat_map(|(_, events)| events)
        .collect()
}

fn of_type(events: &[Value], kind: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|event| event["type"] == kind)
        .cloned()
        .collect()
}

#[test]
fn a_turn_of_writes_edits_and_commands_is_undone_exactly() {
    let dir = TestDir::new("undo-turn");
    dir.write("home/cordis.patch.yml", PLAIN_STORE);
    let work = dir.join("work");
    dir.write("work/keep.txt", "keep\n");
    dir.write("work/edit.txt", "one\ntwo\nthree\n");
    dir.write("work/gone.txt", "bye\n");
    dir.write("work/olddir/inner/old.txt", "old\n");
    dir.write("work/mode.sh", "#!/bin/sh\n");
    dir.write("work/.git/HEAD", "ref: refs/heads/main\n");
    std::fs::set_permissions(work.join("mode.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut script = turn(&[
        (
            "write",
            json!({"file_path": "new.txt", "content": "fresh\n"}),
        ),
        ("read", json!({"file_path": "edit.txt"})),
        (
            "edit",
            json!({"file_path": "edit.txt", "old_string": "two", "new_string": "TWO"}),
        ),
        bash(
            "echo changed > keep.txt && rm gone.txt && rm -r olddir && mkdir -p made/inner \
             && echo x > made/inner/f.txt && chmod 755 mode.sh && ln -s keep.txt link \
             && echo extra >> .git/HEAD",
        ),
    ]);
    script.push(Reply::text("Nothing more."));
    let server = FakeDeepSeek::start(script);
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    run_turn(&web, &mut socket, &session, "Change the files.");
    // The turn did what it was asked.
    assert_eq!(text(&work.join("new.txt")).as_deref(), Some("fresh\n"));
    assert_eq!(
        text(&work.join("edit.txt")).as_deref(),
        Some("one\nTWO\nthree\n")
    );
    assert_eq!(text(&work.join("keep.txt")).as_deref(), Some("changed\n"));
    assert!(!work.join("gone.txt").exists() && !work.join("olddir").exists());
    assert_eq!(mode(&work.join("mode.sh")), 0o755);
    assert!(work.join("link").symlink_metadata().is_ok());

    let (kind, said) = command(&web, &session, "/undo");
    assert_eq!(kind, "success", "{said}");
    assert!(said.starts_with("Undid turn "), "{said}");
    assert!(!work.join("new.txt").exists());
    assert_eq!(
        text(&work.join("edit.txt")).as_deref(),
        Some("one\ntwo\nthree\n")
    );
    assert_eq!(text(&work.join("keep.txt")).as_deref(), Some("keep\n"));
    assert_eq!(text(&work.join("gone.txt")).as_deref(), Some("bye\n"));
    assert_eq!(
        text(&work.join("olddir/inner/old.txt")).as_deref(),
        Some("old\n")
    );
    assert!(!work.join("made").exists(), "a directory the turn made");
    assert!(work.join("link").symlink_metadata().is_err());
    assert_eq!(mode(&work.join("mode.sh")), 0o644);
    // A repository is left as it is.
    assert_eq!(
        text(&work.join(".git/HEAD")).as_deref(),
        Some("ref: refs/heads/main\nextra\n")
    );
    // Undone once: nothing is left to undo.
    let (kind, said) = command(&web, &session, "/undo");
    assert_eq!(kind, "error", "{said}");
    assert!(said.contains("nothing to undo"), "{said}");
    // The next turn's model request carries no trace of the undo.
    assert_eq!(web.host.stop(), Some(0));
    let events = all_events(&dir);
    let changes = of_type(&events, "undo/change");
    let tools: Vec<&str> = changes
        .iter()
        .map(|event| event["data"]["tool"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["write", "edit", "bash"], "{changes:?}");
    assert_eq!(changes[0]["ignorable"], true, "{:?}", changes[0]);
    let reverts = of_type(&events, "undo/revert");
    assert_eq!(reverts.len(), 1, "{reverts:?}");
    server.assert_no_violations();
}

#[test]
fn rewind_reverts_every_turn_from_the_one_given() {
    let dir = TestDir::new("undo-rewind");
    let work = dir.join("work");
    dir.write("work/a.txt", "v0\n");
    let mut script = turn(&[bash("echo v1 > a.txt")]);
    script.extend(turn(&[
        ("write", json!({"file_path": "b.txt", "content": "b\n"})),
        bash("echo v2 > a.txt"),
    ]));
    script.extend(turn(&[bash("echo c > c.txt && echo v3 > a.txt")]));
    let server = FakeDeepSeek::start(script);
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    for prompt in ["First.", "Second.", "Third."] {
        run_turn(&web, &mut socket, &session, prompt);
    }
    assert_eq!(text(&work.join("a.txt")).as_deref(), Some("v3\n"));
    // /undo takes back the third turn alone, and tells its number.
    let (kind, said) = command(&web, &session, "/undo");
    assert_eq!(kind, "success", "{said}");
    let third: u64 = said
        .trim_start_matches("Undid turn ")
        .split(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(!work.join("c.txt").exists());
    assert_eq!(text(&work.join("a.txt")).as_deref(), Some("v2\n"));
    // Rewinding to the first turn takes back the first two, through the client method.
    let rewound = web.call(
        "session.rewind",
        &json!({"sessionId": session, "turn": third - 2}),
    );
    assert_eq!(rewound["kind"], "success", "{rewound}");
    let said = rewound["text"].as_str().unwrap();
    assert!(
        said.contains(&format!("turns {}, {}", third - 2, third - 1)),
        "{said}"
    );
    assert_eq!(text(&work.join("a.txt")).as_deref(), Some("v0\n"));
    assert!(!work.join("b.txt").exists());
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_file_changed_since_stops_the_undo_naming_it() {
    let dir = TestDir::new("undo-conflict");
    let work = dir.join("work");
    dir.write("work/mine.txt", "mine\n");
    dir.write("work/theirs.txt", "theirs\n");
    let server = FakeDeepSeek::start(turn(&[bash(
        "echo agent > mine.txt && echo agent > theirs.txt && echo n > new.txt",
    )]));
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    run_turn(&web, &mut socket, &session, "Change them.");
    // Someone edits one of the files afterwards.
    std::fs::write(work.join("theirs.txt"), "a person's edit\n").unwrap();
    let (kind, said) = command(&web, &session, "/undo");
    assert_eq!(kind, "error", "{said}");
    assert!(said.contains("theirs.txt"), "{said}");
    assert!(!said.contains("mine.txt"), "{said}");
    // Nothing was touched.
    assert_eq!(text(&work.join("mine.txt")).as_deref(), Some("agent\n"));
    assert_eq!(
        text(&work.join("theirs.txt")).as_deref(),
        Some("a person's edit\n")
    );
    assert!(work.join("new.txt").exists());
    // Put back as the turn left it, the undo goes through.
    std::fs::write(work.join("theirs.txt"), "agent\n").unwrap();
    let (kind, said) = command(&web, &session, "/undo");
    assert_eq!(kind, "success", "{said}");
    assert_eq!(text(&work.join("theirs.txt")).as_deref(), Some("theirs\n"));
    assert_eq!(text(&work.join("mine.txt")).as_deref(), Some("mine\n"));
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn an_undo_whose_snapshot_is_gone_is_refused_naming_the_files() {
    let dir = TestDir::new("undo-missing");
    let work = dir.join("work");
    dir.write("work/precious.txt", "the only copy of this text\n");
    dir.write("work/other.txt", "other\n");
    let server = FakeDeepSeek::start(turn(&[bash(
        "echo overwritten > precious.txt && echo changed > other.txt",
    )]));
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    run_turn(&web, &mut socket, &session, "Overwrite it.");
    // The store loses the earlier content of one file.
    let objects = dir.home().join("undo/objects");
    let hash = sha256_hex(b"the only copy of this text\n");
    let object = objects.join(&hash[..2]).join(&hash);
    assert!(
        object.is_file(),
        "the pre-image is stored at {}",
        object.display()
    );
    std::fs::remove_file(&object).unwrap();
    let (kind, said) = command(&web, &session, "/undo");
    assert_eq!(kind, "error", "{said}");
    assert!(
        said.contains("no snapshot") && said.contains("precious.txt"),
        "{said}"
    );
    assert!(!said.contains("other.txt"), "{said}");
    assert_eq!(
        text(&work.join("precious.txt")).as_deref(),
        Some("overwritten\n")
    );
    assert_eq!(text(&work.join("other.txt")).as_deref(), Some("changed\n"));
    assert_eq!(web.host.stop(), Some(0));
}

/// The store's object name of `bytes`, computed with the system's `sha256sum`.
fn sha256_hex(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8(output.stdout).unwrap()[..64].to_owned()
}

/// The web profile working in `dir/work` as [`start_in_workspace`] starts it, with `extra`
/// appended to its patch layer.
fn start_patched(server: &FakeDeepSeek, dir: &TestDir, extra: &str) -> Web {
    let layer = format!(
        "- id: llm-deepseek\n  config:\n    baseURL: {}\n- id: sandbox\n  config:\n    protected: [{}]\n{extra}",
        server.url(),
        dir.join("").display()
    );
    let work = dir.join("work");
    Web::from(dsh_tests::web::WebHost::start(
        dir,
        &layer,
        &["--cwd", work.to_str().unwrap()],
        &[("DEEPSEEK_API_KEY", "sk-test")],
    ))
}

/// Milliseconds between each `tool/call` and its `tool/result` in `events` (one call per
/// step, so they pair in order).
fn call_times(events: &[Value]) -> Vec<f64> {
    let time = |event: &Value| event["time"].as_i64().unwrap() as f64;
    of_type(events, "tool/call")
        .iter()
        .zip(&of_type(events, "tool/result"))
        .map(|(call, result)| time(result) - time(call))
        .collect()
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// One turn of `steps` bash calls in a workspace of `files` files, the undo row on or off:
/// the milliseconds of the first call's body (tool/call to tool/result; the recorder's first
/// snapshot of the workspace), the median of the others', and the mean of a whole step.
fn bash_steps(recorded: bool, files: usize, steps: usize) -> (f64, f64, f64) {
    let dir = TestDir::new(if recorded {
        "undo-cost-on"
    } else {
        "undo-cost-off"
    });
    dir.write("home/cordis.patch.yml", PLAIN_STORE);
    for index in 0..files {
        dir.write(&format!("work/src/m{}/f{index}.txt", index % 20), "line\n");
    }
    let calls: Vec<(&str, Value)> = (0..steps)
        .map(|index| bash(&format!("echo {index} > out{index}.txt")))
        .collect();
    let server = FakeDeepSeek::start(turn(&calls));
    let off = if recorded {
        ""
    } else {
        "- id: undo\n  disabled: true\n"
    };
    let mut web = start_patched(&server, &dir, off);
    let (session, mut socket) = web.followed_session();
    let started = std::time::Instant::now();
    run_turn(&web, &mut socket, &session, "Go.");
    let step = started.elapsed().as_secs_f64() * 1000.0 / steps as f64;
    assert_eq!(web.host.stop(), Some(0));
    let events = all_events(&dir);
    assert_eq!(
        of_type(&events, "undo/change").len(),
        if recorded { steps } else { 0 }
    );
    let times = call_times(&events);
    (times[0], median(&times[1..]), step)
}

/// The time a `bash` step takes in a workspace of 1,000 files with the undo row and without
/// it, and the time `/undo` takes over a turn that changed 1,000 files. Measured, not
/// asserted: `cargo test -p dsh-tests --test all -- undo::costs --ignored --nocapture`.
#[test]
#[ignore = "a measurement: run it by name"]
fn costs() {
    const STEPS: usize = 20;
    for files in [1_000, 10_000] {
        // The first run warms the page cache and the libraries for both.
        let _ = bash_steps(false, files, 3);
        let (off_first, off_call, off_step) = bash_steps(false, files, STEPS);
        let (on_first, on_call, on_step) = bash_steps(true, files, STEPS);
        println!(
            "undo cost, {files} files: bash call (median) {off_call:.1} ms without recording, \
             {on_call:.1} ms with (+{:.1}%); first call {off_first:.0} ms without, {on_first:.0} ms \
             with (the first snapshot); whole step (mean) {off_step:.1} ms without, {on_step:.1} ms with",
            (on_call / off_call - 1.0) * 100.0,
        );
    }
    // Undo of a turn that changed 1,000 files.
    let dir = TestDir::new("undo-cost-revert");
    for index in 0..1_000 {
        dir.write(
            &format!("work/src/m{}/f{index}.txt", index % 20),
            "before\n",
        );
    }
    let server = FakeDeepSeek::start(turn(&[bash(
        "for f in src/*/*.txt; do echo after > \"$f\"; done",
    )]));
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    run_turn(&web, &mut socket, &session, "Change all.");
    let started = std::time::Instant::now();
    let (kind, said) = command(&web, &session, "/undo");
    let took = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(kind, "success", "{said}");
    assert!(said.contains("1000 path(s)"), "{said}");
    assert_eq!(
        text(&dir.join("work/src/m7/f7.txt")).as_deref(),
        Some("before\n")
    );
    println!(
        "undo cost: /undo of a turn that changed 1,000 files took {took:.0} ms (the command's round trip)"
    );
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_reopened_session_can_still_undo_its_last_turn() {
    let dir = TestDir::new("undo-reopen");
    let work = dir.join("work");
    dir.write("work/kept.txt", "first\n");
    let server = FakeDeepSeek::start(turn(&[bash("echo second > kept.txt && echo n > new.txt")]));
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    run_turn(&web, &mut socket, &session, "Change it.");
    assert_eq!(web.host.stop(), Some(0));
    // Another host on the same home: the log alone says what the turn changed.
    let mut web = start_in_workspace(&server, &dir);
    let (kind, said) = command(&web, &session, "/undo");
    assert_eq!(kind, "success", "{said}");
    assert_eq!(text(&work.join("kept.txt")).as_deref(), Some("first\n"));
    assert!(!work.join("new.txt").exists());
    assert_eq!(web.host.stop(), Some(0));
}
