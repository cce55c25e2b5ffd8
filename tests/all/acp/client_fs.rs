//! The client's files in editor mode: with the row's `clientFs` (the bundle's), a client that
//! says it reads and writes text files, and a full-access session, the file tools read the
//! editor's buffers (unsaved text included) and write into them through `fs/read_text_file`
//! and `fs/write_text_file`, leaving the disk to the editor; a file the editor refuses, and a
//! file that is not UTF-8 text, are the disk's. Without the row's ask, without both of the
//! client's offers, or in a sandboxed session, the files are the disk's and no `fs/*` request
//! is sent.

use dsh_tests::acp::{AcpClient, editor_agent};
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::{TestDir, WAIT};
use serde_json::{Value, json};

const READS_AND_WRITES: &str = r#"{"fs": {"readTextFile": true, "writeTextFile": true}}"#;

/// The paths the agent asked the client about with `method`, in order.
fn asked(agent: &AcpClient, method: &str) -> Vec<String> {
    agent
        .frames()
        .iter()
        .filter(|frame| frame["method"] == method)
        .filter_map(|frame| frame["params"]["path"].as_str().map(str::to_owned))
        .collect()
}

/// A turn that reads `notes.txt`, edits a line of it that only the buffer has, writes a new
/// file, reads a file the editor refuses and one that is not UTF-8.
fn script() -> Vec<Reply> {
    vec![
        Reply::tool_call("call_read", "read", json!({"file_path": "notes.txt"})),
        Reply::tool_call(
            "call_edit",
            "edit",
            json!({"file_path": "notes.txt", "old_string": "unsaved three", "new_string": "four"}),
        ),
        Reply::tool_call(
            "call_write",
            "write",
            json!({"file_path": "fresh.txt", "content": "fresh\n"}),
        ),
        Reply::tool_call(
            "call_refused",
            "read",
            json!({"file_path": "forbidden.txt"}),
        ),
        Reply::tool_call("call_latin", "read", json!({"file_path": "latin.txt"})),
        Reply::text("Done."),
    ]
}

fn prepared(name: &str) -> (TestDir, std::path::PathBuf) {
    let dir = TestDir::new(name);
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "one\ntwo\n").unwrap();
    std::fs::write(work.join("forbidden.txt"), "secret\n").unwrap();
    std::fs::write(work.join("latin.txt"), b"caf\xe9\n").unwrap();
    (dir, work)
}

#[test]
fn the_file_tools_read_and_write_the_editors_buffers() {
    let (dir, work) = prepared("acp-client-fs");
    let server = FakeDeepSeek::start(script());
    let mut agent = editor_agent(
        &server,
        &dir,
        "",
        &[("DSH_PERMISSION_MODE", "danger-full-access")],
    );
    let notes = work.join("notes.txt").display().to_string();
    let fresh = work.join("fresh.txt").display().to_string();
    let latin = work.join("latin.txt").display().to_string();
    agent
        .buffers
        .lock()
        .unwrap()
        .insert(notes.clone(), "one\ntwo\nunsaved three\n".to_owned());
    let capabilities: Value = serde_json::from_str(READS_AND_WRITES).unwrap();
    let (session, _) = agent.open_with(&work, capabilities);
    let answer = agent.prompt(&session, "Tidy the notes");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");

    let sent = server.requests().last().unwrap().tool_texts();
    assert!(sent[0].contains("unsaved three"), "the read: {}", sent[0]);
    assert!(!sent[1].contains("rror"), "the edit: {}", sent[1]);
    assert!(!sent[2].contains("rror"), "the write: {}", sent[2]);
    // The editor refused it (outside its project): the disk's file.
    assert!(sent[3].contains("secret"), "the refused read: {}", sent[3]);
    // Not UTF-8 on disk: read there, and refused as the read tool refuses such a file.
    assert!(sent[4].contains("invalid UTF-8"), "{}", sent[4]);
    // The edit and the new file are in the editor's buffers; the disk is as it was.
    let buffers = agent.buffers.lock().unwrap().clone();
    assert_eq!(buffers[&notes], "one\ntwo\nfour\n");
    assert_eq!(buffers[&fresh], "fresh\n");
    assert_eq!(
        std::fs::read_to_string(work.join("notes.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert!(!work.join("fresh.txt").exists());
    let reads = asked(&agent, "fs/read_text_file");
    assert!(reads.contains(&notes), "{reads:?}");
    assert!(!reads.contains(&latin), "{reads:?}");
    assert_eq!(asked(&agent, "fs/write_text_file"), [notes.clone(), fresh]);
    // The editor shows the edit as a diff of the buffer's text.
    let updates = agent.updates(&session);
    let closed = updates
        .iter()
        .rfind(|update| update["toolCallId"] == "call_edit")
        .unwrap();
    let diff = &closed["content"][0];
    assert_eq!(
        (&diff["type"], &diff["path"]),
        (&json!("diff"), &json!(notes)),
        "{closed}"
    );
    assert!(
        diff["oldText"].as_str().unwrap().contains("unsaved three")
            && diff["newText"].as_str().unwrap().contains("four"),
        "{diff}"
    );
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

/// An editor that never answers a read: past the row's bound the request is withdrawn with
/// `$/cancel_request` (naming it), the read fails with the bound in its words, and the turn
/// goes on.
#[test]
fn a_request_the_editor_leaves_unanswered_is_withdrawn_at_the_rows_bound() {
    let (dir, work) = prepared("acp-client-fs-unanswered");
    std::fs::write(work.join("unanswered.txt"), "on disk\n").unwrap();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("call_hung", "read", json!({"file_path": "unanswered.txt"})),
        Reply::text("Done."),
    ]);
    let mut agent = editor_agent(
        &server,
        &dir,
        // A row's config is replaced whole by a patch: `clientFs` is said again.
        "- id: acp\n  config:\n    clientFs: true\n    clientFsTimeoutMs: 400\n",
        &[("DSH_PERMISSION_MODE", "danger-full-access")],
    );
    let capabilities: Value = serde_json::from_str(READS_AND_WRITES).unwrap();
    let (session, _) = agent.open_with(&work, capabilities);
    let started = std::time::Instant::now();
    let answer = agent.prompt(&session, "Read it");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(started.elapsed() < WAIT, "{:?}", started.elapsed());
    let frames = agent.frames();
    let asked: Vec<&Value> = frames
        .iter()
        .filter(|frame| frame["method"] == "fs/read_text_file")
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let withdrawn: Vec<&Value> = frames
        .iter()
        .filter(|frame| frame["method"] == "$/cancel_request")
        .collect();
    assert_eq!(withdrawn.len(), 1, "{withdrawn:?}");
    assert_eq!(withdrawn[0]["params"]["requestId"], asked[0]["id"]);
    let sent = server.requests().last().unwrap().tool_texts();
    assert!(
        sent[0].contains("no answer within"),
        "the read: {}",
        sent[0]
    );
    assert!(!sent[0].contains("on disk"), "the read: {}", sent[0]);
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

/// Runs the script on an agent with `rows` whose sessions run under `mode` and whose client
/// says it can do `capabilities`, and checks that the files were the disk's.
fn disk_run(name: &str, rows: &str, mode: &str, capabilities: &str) {
    let (dir, work) = prepared(name);
    let server = FakeDeepSeek::start(script());
    let mut agent = editor_agent(&server, &dir, rows, &[("DSH_PERMISSION_MODE", mode)]);
    let (session, _) = agent.open_with(&work, serde_json::from_str(capabilities).unwrap());
    let answer = agent.prompt(&session, "Tidy the notes");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let sent = server.requests().last().unwrap().tool_texts();
    // The disk's notes have no unsaved line: the edit fails, the write and the read land.
    assert!(
        sent[1].contains("old_string was not found"),
        "{name}: the edit: {}",
        sent[1]
    );
    assert!(sent[3].contains("secret"), "{name}: the read: {}", sent[3]);
    assert_eq!(
        std::fs::read_to_string(work.join("fresh.txt")).unwrap(),
        "fresh\n",
        "{name}"
    );
    assert!(asked(&agent, "fs/read_text_file").is_empty(), "{name}");
    assert!(asked(&agent, "fs/write_text_file").is_empty(), "{name}");
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

#[test]
fn without_the_rows_ask_both_offers_or_full_access_the_files_are_the_disks() {
    let full = "danger-full-access";
    disk_run(
        "acp-client-fs-no-row",
        "- id: acp\n  config:\n    clientFs: false\n",
        full,
        READS_AND_WRITES,
    );
    disk_run("acp-client-fs-no-offer", "", full, "{}");
    disk_run(
        "acp-client-fs-reads-only",
        "",
        full,
        r#"{"fs": {"readTextFile": true}}"#,
    );
}

/// A sandboxed session's writes must land where the sandbox checked them, which an editor
/// writing in the person's own process cannot promise: its files stay on the disk.
#[test]
fn a_sandboxed_session_keeps_the_disk() {
    disk_run(
        "acp-client-fs-sandboxed",
        "",
        "workspace-write",
        READS_AND_WRITES,
    );
}
