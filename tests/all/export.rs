//! Export and import through the real `dsh-host`: a session whose subagent child the fake
//! DeepSeek server scripted is exported to one archive and imported into a fresh home, where
//! `session show`, `session derive` and the logs themselves are the same; bad archives (cut
//! short, of another format version, with an entry escaping the folder or a link, with a
//! checksum that differs) and an id the home already holds are refused by name with nothing
//! written, and `--new-ids` imports a copy whose child still names its parent; `/export` in a
//! web session writes the archive where it says, the page's download route sends it, and in
//! Chromium the session menu's Export downloads it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::{against, stream_json};
use dsh_tests::http::send;
use dsh_tests::sessions::{PLAIN_STORE, stored_logs};
use dsh_tests::web::{start_in_workspace, turn_ended};
use dsh_tests::{Output, TestDir, run_host};
use serde_json::{Value, json};

/// A headless run whose parent delegates one task to a child that waits for it; answers the
/// parent's id and the child's.
fn session_with_a_child(dir: &TestDir) -> (String, String) {
    dir.write("home/cordis.patch.yml", PLAIN_STORE);
    let arguments = json!({
        "description": "Say the word",
        "prompt": "Say KUMQUAT.",
        "run_in_background": false
    })
    .to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "subagent", &arguments)]),
        Reply::text("KUMQUAT"),
        Reply::text("The child said KUMQUAT."),
    ]);
    let out = against(
        &server,
        dir,
        &["--output", "stream-json", "Ask a child for the word."],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let (_, result) = stream_json(&out.stdout);
    let parent = result["sessionId"].as_str().unwrap().to_owned();
    let logs = stored_logs(&dir.home());
    let child = logs
        .iter()
        .find(|(header, _)| header["parentSession"] == parent.as_str())
        .map(|(header, _)| header["id"].as_str().unwrap().to_owned())
        .expect("the child's log");
    (parent, child)
}

fn host(home: &Path, args: &[&str]) -> Output {
    run_host(home, args)
}

/// The entries of an archive, in order.
fn entries(archive: &[u8]) -> Vec<(String, Vec<u8>)> {
    let tar_bytes = zstd::decode_all(archive).unwrap();
    let mut reader = tar::Archive::new(tar_bytes.as_slice());
    reader
        .entries()
        .unwrap()
        .map(|entry| {
            let mut entry = entry.unwrap();
            let path = String::from_utf8(entry.path_bytes().into_owned()).unwrap();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
            (path, bytes)
        })
        .collect()
}

/// An archive of `entries`; a path is written into the header as it is (no checks), and an
/// entry whose bytes start with `->` is a symbolic link to the rest.
fn pack(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, bytes) in entries {
        let mut header = tar::Header::new_old();
        let name = &mut header.as_old_mut().name;
        name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_mode(0o644);
        match bytes.strip_prefix(b"->") {
            Some(target) => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_size(0);
                header.as_old_mut().linkname[..target.len()].copy_from_slice(target);
                header.set_cksum();
                builder.append(&header, std::io::empty()).unwrap();
            }
            None => {
                header.set_size(bytes.len() as u64);
                header.set_cksum();
                builder.append(&header, bytes.as_slice()).unwrap();
            }
        }
    }
    zstd::encode_all(builder.into_inner().unwrap().as_slice(), 3).unwrap()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Every file under `dir` with its size, sorted: what "nothing written" is checked against.
fn files(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let path = entry.path();
            // The host's own run logs are written by any invocation.
            if path.ends_with("logs") {
                continue;
            }
            match path.is_dir() {
                true => stack.push(path),
                false => found.push((path.clone(), entry.metadata().unwrap().len())),
            }
        }
    }
    found.sort();
    found
}

/// `session show --json` without the path (the homes differ).
fn shown(home: &Path, id: &str) -> Value {
    let out = host(home, &["session", "show", id, "--json"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let mut value: Value = serde_json::from_str(&out.stdout).unwrap();
    value.as_object_mut().unwrap().remove("path");
    value
}

fn derived(home: &Path, id: &str) -> String {
    let out = host(home, &["session", "derive", id]);
    assert_eq!(out.code, Some(0), "{out:?}");
    out.stdout
}

#[test]
fn a_session_and_its_child_export_and_import_into_a_fresh_home_unchanged() {
    let dir = TestDir::new("export-roundtrip");
    let (parent, child) = session_with_a_child(&dir);
    let archive = dir.join("out/parent.tar.zst");
    std::fs::create_dir_all(archive.parent().unwrap()).unwrap();
    let out = host(
        &dir.home(),
        &[
            "session",
            "export",
            &parent,
            "--output",
            archive.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("2 session(s)"), "{}", out.stdout);
    let bytes = std::fs::read(&archive).unwrap();
    let inside = entries(&bytes);
    assert_eq!(inside[0].0, "manifest.json");
    let manifest: Value = serde_json::from_slice(&inside[0].1).unwrap();
    assert_eq!(manifest["format"], "dsh-session-archive");
    assert_eq!(manifest["version"], 1);
    assert_eq!(manifest["session"], parent.as_str());
    assert_eq!(manifest["sessions"][1]["id"], child.as_str());
    assert_eq!(manifest["sessions"][1]["parent"], parent.as_str());
    for (path, bytes) in &inside[1..] {
        let listed = manifest["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["path"] == path.as_str())
            .unwrap();
        assert_eq!(listed["sha256"], sha256_hex(bytes), "{path}");
    }

    let fresh = dir.join("fresh-home");
    let out = host(
        &fresh,
        &[
            "session",
            "import",
            archive.to_str().unwrap(),
            "--compression",
            "none",
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains(&format!("imported session {parent}")),
        "{}",
        out.stdout
    );
    for id in [&parent, &child] {
        assert_eq!(shown(&fresh, id), shown(&dir.home(), id), "session {id}");
        assert_eq!(
            derived(&fresh, id),
            derived(&dir.home(), id),
            "session {id}"
        );
        let out = host(&fresh, &["session", "check", id]);
        assert_eq!(out.code, Some(0), "{out:?}");
    }
    // The logs are the same, event for event: exported again from the fresh home, each log's
    // entry has the same bytes.
    let again = dir.join("out/again.tar.zst");
    let out = host(
        &fresh,
        &[
            "session",
            "export",
            &parent,
            "--output",
            again.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let reexported: Vec<(String, Vec<u8>)> = entries(&std::fs::read(&again).unwrap());
    assert_eq!(reexported[1..], inside[1..]);
    let listed = host(&fresh, &["session", "list", "--json"]);
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");

    // The same archive again: the ids exist; refused, nothing written.
    let before = files(&fresh);
    let out = host(&fresh, &["session", "import", archive.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("session `{parent}` already exists")),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--new-ids"), "{}", out.stderr);
    assert_eq!(files(&fresh), before);

    // A copy under fresh ids: the child names the copy as its parent.
    let out = host(
        &fresh,
        &["session", "import", archive.to_str().unwrap(), "--new-ids"],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let logs = stored_logs(&fresh);
    assert_eq!(logs.len(), 4);
    let copy = logs
        .iter()
        .find(|(header, _)| {
            header["id"] != parent.as_str()
                && header["id"] != child.as_str()
                && header.get("parentSession").is_none()
        })
        .expect("the parent's copy");
    let copied_child = logs
        .iter()
        .find(|(header, _)| header["parentSession"] == copy.0["id"])
        .expect("the child's copy names the copied parent");
    assert_ne!(copied_child.0["id"], child.as_str());
    let copy_id = copy.0["id"].as_str().unwrap();
    assert_eq!(
        derived(&fresh, copy_id),
        derived(&fresh, &parent).replace(&child, copied_child.0["id"].as_str().unwrap())
    );
}

#[test]
fn bad_archives_are_refused_by_name_and_nothing_is_written() {
    let dir = TestDir::new("export-bad");
    let (parent, _) = session_with_a_child(&dir);
    let archive = dir.join("good.tar.zst");
    let out = host(
        &dir.home(),
        &[
            "session",
            "export",
            &parent,
            "--output",
            archive.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let good = std::fs::read(&archive).unwrap();
    let inside = entries(&good);
    let with_manifest = |edit: &dyn Fn(&mut Value)| {
        let mut all = inside.clone();
        let mut manifest: Value = serde_json::from_slice(&all[0].1).unwrap();
        edit(&mut manifest);
        all[0].1 = serde_json::to_vec(&manifest).unwrap();
        all
    };
    let log_path = inside[1].0.clone();
    let mut tampered = inside.clone();
    tampered[1].1[10] ^= 1;
    let escaping = with_manifest(&|manifest| {
        let entries = manifest["entries"].as_array_mut().unwrap();
        entries.push(json!({"path": "../evil", "bytes": 4, "sha256": sha256_hex(b"evil")}));
    });
    let mut escaping = escaping;
    escaping.push(("../evil".to_owned(), b"evil".to_vec()));
    let mut absolute = inside.clone();
    absolute.push(("/tmp/evil".to_owned(), b"evil".to_vec()));
    let mut linked = inside.clone();
    linked.push(("attachments/link".to_owned(), b"->/etc/passwd".to_vec()));
    let cases: Vec<(&str, Vec<u8>, String)> = vec![
        (
            "cut short",
            good[..good.len() / 2].to_vec(),
            "truncated archive".to_owned(),
        ),
        (
            "a foreign version",
            pack(&with_manifest(&|manifest| manifest["version"] = json!(2))),
            "archive format `dsh-session-archive` version 2 is not one this dsh-host reads"
                .to_owned(),
        ),
        (
            "a foreign format",
            pack(&with_manifest(&|manifest| {
                manifest["format"] = json!("other-tool-backup")
            })),
            "archive format `other-tool-backup`".to_owned(),
        ),
        (
            "an entry climbing out",
            pack(&escaping),
            "entry `../evil` escapes the archive's folder".to_owned(),
        ),
        (
            "an absolute entry",
            pack(&absolute),
            "entry `/tmp/evil` escapes the archive's folder".to_owned(),
        ),
        (
            "a link",
            pack(&linked),
            "entry `attachments/link` escapes the archive's folder: not a plain file".to_owned(),
        ),
        (
            "a changed log",
            pack(&tampered),
            format!("entry `{log_path}`: checksum mismatch"),
        ),
        (
            "a listed entry missing",
            pack(&inside[..inside.len() - 1]),
            "truncated archive: entry".to_owned(),
        ),
    ];
    let fresh = dir.join("fresh-home");
    std::fs::create_dir_all(fresh.join("sessions")).unwrap();
    let before = files(&fresh);
    for (what, bytes, expected) in cases {
        let file = dir.join(&format!("bad-{}.tar.zst", what.replace(' ', "-")));
        std::fs::write(&file, bytes).unwrap();
        let out = host(&fresh, &["session", "import", file.to_str().unwrap()]);
        assert_eq!(out.code, Some(1), "{what}: {out:?}");
        assert!(
            out.stderr.contains(&expected) && out.stderr.contains(file.to_str().unwrap()),
            "{what}: expected `{expected}` naming the file, got {}",
            out.stderr
        );
        assert_eq!(files(&fresh), before, "{what}: something was written");
        let siblings: Vec<_> = std::fs::read_dir(&fresh)
            .unwrap()
            .flatten()
            .map(|entry| entry.file_name())
            .collect();
        assert!(
            siblings
                .iter()
                .all(|name| !name.to_string_lossy().contains("import")),
            "{what}: a staging folder was left: {siblings:?}"
        );
    }
    // The good one still loads.
    let out = host(&fresh, &["session", "import", archive.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{out:?}");
}

#[test]
fn export_in_a_web_session_writes_the_archive() {
    let dir = TestDir::new("export-command");
    let server = FakeDeepSeek::start(vec![Reply::text("The codeword is TANGERINE.")]);
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.prompt(&session, "Remember TANGERINE.");
    socket.until(300, turn_ended);
    let listed = web.call("commands.list", &json!({}));
    assert!(listed.to_string().contains("\"export\""), "{listed}");
    let done = web.prompt(&session, "/export");
    assert_eq!(done["command"]["kind"], "success", "{done}");
    let text = done["command"]["text"].as_str().unwrap().to_owned();
    let default = dir
        .home()
        .join("exports")
        .join(format!("dsh-session-{session}.tar.zst"));
    assert!(text.contains(default.to_str().unwrap()), "{text}");
    assert!(text.contains("1 session(s)"), "{text}");
    let inside = entries(&std::fs::read(&default).unwrap());
    let manifest: Value = serde_json::from_slice(&inside[0].1).unwrap();
    assert_eq!(manifest["session"], session.as_str());
    let log = String::from_utf8(inside[1].1.clone()).unwrap();
    // Written after the store flushed: the turn's answer is in it.
    assert!(log.contains("TANGERINE"), "{log}");
    // A file name is taken from the session's folder.
    let named = web.prompt(&session, "/export shared/this.tar.zst");
    assert_eq!(named["command"]["kind"], "success", "{named}");
    assert!(
        files(&dir.join("work"))
            .iter()
            .any(|(path, _)| path.ends_with("shared/this.tar.zst")),
        "{named}"
    );
}

/// `GET path` with `headers`, the response's head as text and its body as bytes.
fn get_bytes(address: &str, path: &str, headers: &[(&str, &str)]) -> (String, Vec<u8>) {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let mut head = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .unwrap();
    (
        String::from_utf8_lossy(&raw[..split]).into_owned(),
        raw[split + 4..].to_vec(),
    )
}

#[test]
fn the_page_downloads_a_session_archive() {
    let dir = TestDir::new("export-download");
    let server = FakeDeepSeek::start(vec![Reply::text("The codeword is QUINCE.")]);
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.prompt(&session, "Remember QUINCE.");
    socket.until(300, turn_ended);
    let path = format!("/export?session={session}");
    let (head, body) = get_bytes(&web.address, &path, &[("Authorization", &web.bearer)]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let head = head.to_ascii_lowercase();
    assert!(head.contains("content-type: application/zstd"), "{head}");
    assert!(
        head.contains(&format!(
            "content-disposition: attachment; filename=\"dsh-session-{session}.tar.zst\""
        )),
        "{head}"
    );
    let inside = entries(&body);
    let manifest: Value = serde_json::from_slice(&inside[0].1).unwrap();
    assert_eq!(manifest["session"], session.as_str());
    assert!(String::from_utf8_lossy(&inside[1].1).contains("QUINCE"));
    // The archive loads into another home.
    let file = dir.join("downloaded.tar.zst");
    std::fs::write(&file, &body).unwrap();
    let out = host(
        &dir.join("other-home"),
        &["session", "import", file.to_str().unwrap()],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    // Signed in only; an unknown session is not found.
    let anonymous = send(&web.address, "GET", &path, &[], "");
    assert_eq!(anonymous.status, 401, "{anonymous:?}");
    let unknown = send(
        &web.address,
        "GET",
        "/export?session=00000000-0000-4000-8000-000000000000",
        &[("Authorization", &web.bearer)],
        "",
    );
    assert_eq!(unknown.status, 404, "{unknown:?}");
    assert!(unknown.body.contains("no session"), "{}", unknown.body);
}

#[test]
fn the_session_menu_downloads_the_archive_in_chromium() {
    let Some((_, dir)) = crate::browser::scenario_in(
        "export",
        vec![Reply::text("PERSIMMON noted.")],
        "",
        &[("DEEPSEEK_API_KEY", "sk-test")],
        &[],
        &[],
    ) else {
        return;
    };
    let file = dir.join("work/downloaded.tar.zst");
    let inside = entries(&std::fs::read(&file).unwrap());
    let manifest: Value = serde_json::from_slice(&inside[0].1).unwrap();
    assert!(String::from_utf8_lossy(&inside[1].1).contains("PERSIMMON noted."));
    let out = host(
        &dir.join("other-home"),
        &["session", "import", file.to_str().unwrap()],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let id = manifest["session"].as_str().unwrap();
    let shown = host(&dir.join("other-home"), &["session", "show", id]);
    assert_eq!(shown.code, Some(0), "{shown:?}");
}
