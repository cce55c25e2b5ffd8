//! Publication, appends, listing and root rules, on real files.

use std::fs;
use std::io::Write;
use std::path::Path;

use dsh_session_jsonl::{
    Encoding, LayoutError, Listing, ReadError, RootError, SESSION_FORMAT_VERSION, SessionHeader,
    SessionWriter, WriteError, WriterOptions, check_root_encoding, find_session, list_sessions,
    list_sessions_any, log_path, read_header, read_session,
};

use crate::common::{sample_turn, scratch};

fn header(id: &str, cwd: Option<&str>) -> SessionHeader {
    let mut h = SessionHeader::new(id, 7);
    h.cwd = cwd.map(str::to_owned);
    h
}

fn raw() -> WriterOptions {
    WriterOptions {
        encoding: Encoding::Raw,
        pack_chunks: true,
    }
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn nothing_is_written_until_the_first_append() {
    let root = scratch("lazy");
    let mut writer = SessionWriter::create(
        &root.join("sessions"),
        header("s", Some("/w")),
        WriterOptions::default(),
    )
    .unwrap();
    writer.append(&[]).unwrap();
    assert!(!writer.is_materialized());
    assert!(!root.join("sessions").exists());
    drop(writer);
    assert!(
        !root.join("sessions").exists(),
        "a never-appended session leaves nothing"
    );
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn first_append_publishes_header_and_batch_without_leftovers() {
    let root = scratch("publish");
    let h = header("s", Some("/w/p"));
    let mut writer = SessionWriter::create(&root, h.clone(), raw()).unwrap();
    let batch = sample_turn(0, 1);
    writer.append(&batch).unwrap();
    assert_eq!(
        writer.path(),
        log_path(&root, Some("/w/p"), "s", Encoding::Raw).unwrap()
    );
    assert_eq!(names_in(writer.path().parent().unwrap()), ["session.jsonl"]);
    let text = fs::read_to_string(writer.path()).unwrap();
    assert_eq!(text.lines().next().unwrap(), h.to_line());
    // 2 boundaries + 3 packed rows + finish + 2 boundaries.
    assert_eq!(text.lines().count(), 1 + 8);
    let read = read_session(writer.path()).unwrap();
    assert_eq!((read.header, read.events), (h, batch));
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn zstd_writes_a_header_frame_then_one_frame_per_batch() {
    let root = scratch("frames");
    let mut writer =
        SessionWriter::create(&root, header("z", None), WriterOptions::default()).unwrap();
    let mut all = Vec::new();
    for turn in 1..=3 {
        let batch = sample_turn(all.len() as u64, turn);
        writer.append(&batch).unwrap();
        all.extend(batch);
    }
    assert!(writer.path().starts_with(root.join("_no-cwd")));
    let bytes = fs::read(writer.path()).unwrap();
    let mut frames = Vec::new();
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let n = zstd::zstd_safe::find_frame_compressed_size(rest).unwrap();
        frames.push(zstd::decode_all(&rest[..n]).unwrap());
        rest = &rest[n..];
    }
    assert_eq!(frames.len(), 4);
    assert_eq!(
        frames[0],
        format!("{}\n", header("z", None).to_line()).into_bytes()
    );
    assert!(frames[1..].iter().all(|f| f.ends_with(b"\n")));
    assert_eq!(read_session(writer.path()).unwrap().events, all);
    assert_eq!(read_header(writer.path()).unwrap(), header("z", None));
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn a_second_session_with_the_same_id_is_refused() {
    let root = scratch("exists");
    let mut first = SessionWriter::create(&root, header("dup", Some("/w")), raw()).unwrap();
    first.append(&sample_turn(0, 1)).unwrap();
    let before = fs::read(first.path()).unwrap();
    let mut second = SessionWriter::create(&root, header("dup", Some("/w")), raw()).unwrap();
    let err = second.append(&sample_turn(0, 1)).unwrap_err();
    assert!(matches!(err, WriteError::AlreadyExists { .. }), "{err:?}");
    assert_eq!(fs::read(first.path()).unwrap(), before);
    assert_eq!(
        names_in(first.path().parent().unwrap()),
        ["session.jsonl"],
        "temp file removed"
    );
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn appends_must_continue_the_log() {
    let root = scratch("seq");
    let mut writer = SessionWriter::create(&root, header("s", Some("/w")), raw()).unwrap();
    let err = writer.append(&sample_turn(1, 1)).unwrap_err();
    assert!(
        matches!(
            err,
            WriteError::SeqMismatch {
                expected: 0,
                found: 1,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!writer.is_materialized());
    let turn = sample_turn(0, 1);
    writer.append(&turn).unwrap();
    let len = fs::metadata(writer.path()).unwrap().len();
    let mut gap = sample_turn(turn.len() as u64, 2);
    gap[3].seq += 1;
    let err = writer.append(&gap).unwrap_err();
    assert!(
        matches!(err, WriteError::SeqMismatch { expected, found, .. } if found == expected + 1),
        "{err:?}"
    );
    assert_eq!(
        fs::metadata(writer.path()).unwrap().len(),
        len,
        "nothing written"
    );
    assert_eq!(writer.next_seq(), turn.len() as u64);
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn a_file_changed_behind_the_writer_is_refused() {
    let root = scratch("changed");
    let mut writer = SessionWriter::create(&root, header("s", Some("/w")), raw()).unwrap();
    let turn = sample_turn(0, 1);
    writer.append(&turn).unwrap();
    fs::OpenOptions::new()
        .append(true)
        .open(writer.path())
        .unwrap()
        .write_all(b"x")
        .unwrap();
    let err = writer
        .append(&sample_turn(turn.len() as u64, 2))
        .unwrap_err();
    assert!(matches!(err, WriteError::LengthChanged { .. }), "{err:?}");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn one_encoding_per_root() {
    let root = scratch("encoding");
    let mut writer = SessionWriter::create(&root, header("s", Some("/w")), raw()).unwrap();
    writer.append(&sample_turn(0, 1)).unwrap();
    check_root_encoding(&root, Encoding::Raw).unwrap();
    assert!(matches!(
        check_root_encoding(&root, Encoding::Zstd),
        Err(RootError::EncodingMismatch { .. })
    ));
    // Listed as a broken session of this root, not a listing that fails.
    let listing = list_sessions(&root, Encoding::Zstd).unwrap();
    assert!(listing.sessions.is_empty());
    assert_eq!(listing.broken.len(), 1);
    assert_eq!(listing.broken[0].id, "s");
    assert!(
        listing.broken[0]
            .reason
            .contains("configured for session.jsonl.zstd"),
        "{}",
        listing.broken[0].reason
    );
    assert_eq!(list_sessions_any(&root).unwrap().sessions.len(), 1);
    assert!(matches!(
        find_session(&root, Encoding::Zstd, "s"),
        Err(RootError::EncodingMismatch { .. })
    ));
    let mut zstd =
        SessionWriter::create(&root, header("s", Some("/w")), WriterOptions::default()).unwrap();
    let err = zstd.append(&sample_turn(0, 1)).unwrap_err();
    assert!(
        matches!(err, WriteError::EncodingMismatch { .. }),
        "{err:?}"
    );
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn listing_reads_headers_and_checks_identity() {
    let root = scratch("list");
    let enc = Encoding::Zstd;
    let mut expected = Vec::new();
    for (id, cwd) in [
        ("a", Some("/w/a")),
        ("b", None),
        ("c.d", Some("/w/b")),
        ("e_f", Some("C:\\w")),
    ] {
        let h = header(id, cwd);
        let mut w = SessionWriter::create(&root, h.clone(), WriterOptions::default()).unwrap();
        w.append(&sample_turn(0, 1)).unwrap();
        expected.push((w.path().to_owned(), h));
    }
    // Mid-publication or empty files and empty session dirs are skipped.
    fs::create_dir_all(root.join("--w-a--/empty")).unwrap();
    fs::write(root.join("--w-a--/empty/session.jsonl.zstd"), b"").unwrap();
    fs::create_dir_all(root.join("--w-a--/nothing")).unwrap();
    // Listing never decodes event frames.
    let a = &expected[0].0;
    fs::OpenOptions::new()
        .append(true)
        .open(a)
        .unwrap()
        .write_all(b"\x28\xb5\x2f\xfd garbage")
        .unwrap();

    let listing = list_sessions(&root, enc).unwrap();
    assert_eq!(listing.broken, []);
    let mut listed: Vec<_> = listing
        .sessions
        .into_iter()
        .map(|l| (l.path, l.header))
        .collect();
    listed.sort_by(|x, y| x.0.cmp(&y.0));
    expected.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(listed, expected);
    assert_eq!(
        find_session(&root, enc, "b").unwrap().as_deref(),
        Some(expected.iter().find(|e| e.1.id == "b").unwrap().0.as_path())
    );
    assert_eq!(find_session(&root, enc, "nope").unwrap(), None);

    // A copy under another id's directory does not belong there.
    let stray = root.join("--w-a--/other");
    fs::create_dir_all(&stray).unwrap();
    fs::copy(
        &expected.iter().find(|e| e.1.id == "b").unwrap().0,
        stray.join("session.jsonl.zstd"),
    )
    .unwrap();
    let listing = list_sessions(&root, enc).unwrap();
    assert_eq!(listing.sessions.len(), 4);
    assert_eq!(listing.broken.len(), 1);
    assert_eq!(listing.broken[0].path, stray);
    assert!(
        listing.broken[0].reason.contains("identifies"),
        "{}",
        listing.broken[0].reason
    );
    fs::remove_dir_all(&stray).unwrap();

    // The same id in two project directories.
    let twin = root.join("--elsewhere--/b");
    fs::create_dir_all(&twin).unwrap();
    fs::write(twin.join("session.jsonl.zstd"), b"").unwrap();
    assert!(matches!(
        find_session(&root, enc, "b"),
        Err(RootError::DuplicateId { .. })
    ));
    fs::remove_dir_all(root.join("--elsewhere--")).unwrap();

    // The old flat layout is refused, not ignored.
    fs::write(root.join("--w-a--/flat.jsonl.zstd"), b"").unwrap();
    let listing = list_sessions(&root, enc).unwrap();
    assert_eq!(listing.sessions.len(), 4);
    assert!(
        listing.broken[0].reason.contains("flat-file layout"),
        "{:?}",
        listing.broken
    );
    assert!(matches!(
        find_session(&root, enc, "flat"),
        Err(RootError::LegacyLayout { .. })
    ));
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn listing_shows_a_foreign_version_that_reading_refuses() {
    let root = scratch("list-version");
    let path = log_path(&root, Some("/w"), "v", Encoding::Raw).unwrap();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, "{\"type\":\"session\",\"version\":1,\"id\":\"v\",\"createdAt\":0,\"cwd\":\"/w\",\"delegationDepth\":0}\n").unwrap();
    let listed = list_sessions(&root, Encoding::Raw).unwrap().sessions;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].header.version, SESSION_FORMAT_VERSION + 1);
    assert!(matches!(
        read_session(&path),
        Err(ReadError::UnsupportedVersion { .. })
    ));
    assert!(matches!(
        read_header(&path),
        Err(ReadError::UnsupportedVersion { .. })
    ));
    assert!(list_sessions(&root.join("absent"), Encoding::Raw).unwrap() == Listing::default());
    let _ = fs::remove_dir_all(&root);
}

/// A session planted by hand whose header id would climb out of the root: listed as broken
/// with its reason beside the others, and no id reaches a path through it.
#[test]
fn a_planted_header_id_is_broken_and_never_a_path() {
    let root = scratch("planted");
    let mut good = SessionWriter::create(&root, header("good", Some("/w")), raw()).unwrap();
    good.append(&sample_turn(0, 1)).unwrap();
    let planted = root.join("--w--/..~002Fx/session.jsonl");
    fs::create_dir_all(planted.parent().unwrap()).unwrap();
    fs::write(&planted, "{\"type\":\"session\",\"version\":0,\"id\":\"../x\",\"createdAt\":0,\"cwd\":\"/w\",\"delegationDepth\":0}\n").unwrap();
    let listing = list_sessions(&root, Encoding::Raw).unwrap();
    assert_eq!(listing.sessions.len(), 1);
    assert_eq!(listing.sessions[0].header.id, "good");
    assert_eq!(listing.broken.len(), 1);
    let broken = &listing.broken[0];
    assert_eq!(broken.id, "..~002Fx");
    assert_eq!(broken.cwd.as_deref(), Some("/w"));
    assert!(
        broken.reason.contains("\"../x\" is not a session id"),
        "{}",
        broken.reason
    );
    for id in ["../x", "..~002Fx", "a/b", "x\0"] {
        assert!(
            matches!(
                find_session(&root, Encoding::Raw, id),
                Err(RootError::Layout(LayoutError::BadSessionId { .. }))
            ),
            "{id:?}"
        );
    }
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn writer_refuses_headers_it_cannot_write() {
    let root = scratch("bad-header");
    let mut h = header("s", Some("/w"));
    h.version = 1;
    assert!(matches!(
        SessionWriter::create(&root, h, raw()),
        Err(WriteError::BadHeader { .. })
    ));
    let mut h = header("s", Some("/w"));
    h.origin = Some("other".into());
    assert!(matches!(
        SessionWriter::create(&root, h, raw()),
        Err(WriteError::BadHeader { .. })
    ));
    assert!(matches!(
        SessionWriter::create(&root, header("", None), raw()),
        Err(WriteError::Layout(_))
    ));
    assert!(matches!(
        SessionWriter::create(&root, header("../s", Some("/w")), raw()),
        Err(WriteError::Layout(LayoutError::BadSessionId { .. }))
    ));
    assert!(matches!(
        SessionWriter::create(&root, header("s", Some("")), raw()),
        Err(WriteError::Layout(_))
    ));
    let _ = fs::remove_dir_all(&root);
}
