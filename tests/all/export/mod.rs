//! Export and import through the real `dsh-host`: a session whose subagent child the fake
//! DeepSeek server scripted is exported to one archive and imported into a fresh home, where
//! `session show`, `session derive` and the logs themselves are the same; bad archives (cut
//! short, of another format version, with an entry escaping the folder or a link, with a
//! checksum that differs) and an id the home already holds are refused by name with nothing
//! written, and `--new-ids` imports a copy whose child still names its parent; `/export` in a
//! web session writes the archive where it says, the page's download route sends it, and in
//! Chromium the session menu's Export downloads it (`web`).

pub(crate) mod web;

use std::path::{Path, PathBuf};

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::{against, stream_json};
use dsh_tests::sessions::{PLAIN_STORE, stored_logs};
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

pub(crate) fn host(home: &Path, args: &[&str]) -> Output {
    run_host(home, args)
}

/// The entries of an archive, in order.
pub(crate) fn entries(archive: &[u8]) -> Vec<(String, Vec<u8>)> {
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
}

/// `dir`'s session with a child, exported and imported into `dir/fresh-home`: answers the
/// parent's id, the child's, the archive and the fresh home.
fn exported_and_imported(dir: &TestDir) -> (String, String, PathBuf, PathBuf) {
    let (parent, child) = session_with_a_child(dir);
    let archive = dir.join("parent.tar.zst");
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
    (parent, child, archive, fresh)
}

#[test]
fn an_id_the_home_holds_is_refused_and_new_ids_import_a_copy() {
    let dir = TestDir::new("export-ids");
    let (parent, child, archive, fresh) = exported_and_imported(&dir);
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

/// Bad archives made from a good one: what each is, its bytes, and what its refusal must say.
fn bad_archives(good: &[u8]) -> Vec<(&'static str, Vec<u8>, String)> {
    let inside = entries(good);
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
    vec![
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
    ]
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
    let cases = bad_archives(&good);
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
