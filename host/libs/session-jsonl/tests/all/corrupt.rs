//! Damaged files: what is repaired (torn tails), what is refused (corruption), and that each
//! error names the file, the line or frame, and the seq.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use dsh_session_jsonl::{
    Encoding, ReadError, RecordError, SessionHeader, SessionWriter, VersionDirection,
    WriterOptions, encode_raw_log, truncate_to,
};
use dsh_session_log::SessionEvent;

use crate::common::{read_both, sample_turn, scratch};

fn header() -> SessionHeader {
    let mut h = SessionHeader::new("s1", 1_000);
    h.cwd = Some("/work/p".to_owned());
    h
}

/// Write `turns` turns, one batch each; returns the path, all events and the file length after
/// each batch (so frame/batch boundaries are known).
fn write_turns(
    root: &Path,
    encoding: Encoding,
    turns: u64,
) -> (PathBuf, Vec<SessionEvent>, Vec<u64>) {
    let mut writer = SessionWriter::create(
        root,
        header(),
        WriterOptions {
            encoding,
            pack_chunks: true,
        },
    )
    .unwrap();
    let (mut all, mut lens) = (Vec::new(), Vec::new());
    for turn in 1..=turns {
        let batch = sample_turn(all.len() as u64, turn);
        writer.append(&batch).unwrap();
        all.extend(batch);
        lens.push(fs::metadata(writer.path()).unwrap().len());
    }
    (writer.path().to_owned(), all, lens)
}

fn append_bytes(path: &Path, bytes: &[u8]) {
    fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

fn raw_lines(events: &[SessionEvent]) -> Vec<String> {
    let text = String::from_utf8(encode_raw_log(&header(), events, false).unwrap()).unwrap();
    text.lines().map(str::to_owned).collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(
        path,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
}

#[test]
fn torn_last_raw_line_is_repaired() {
    let root = scratch("torn-raw");
    let (path, all, lens) = write_turns(&root, Encoding::Raw, 2);
    append_bytes(&path, br#"{"type":"turn/start","seq":32,"ti"#);
    let read = read_both(&path).unwrap();
    assert_eq!(read.events, all);
    let repair = read.repair.unwrap();
    assert_eq!(repair.truncate_to, lens[1]);
    assert_eq!(repair.recovered_from, all.len());
    assert!(repair.file_len > lens[1]);
    assert!(repair.reason.contains("no newline"), "{}", repair.reason);

    truncate_to(&path, repair.truncate_to).unwrap();
    let read = read_both(&path).unwrap();
    assert!(read.repair.is_none());
    let mut writer = SessionWriter::open(&path, true, all.len() as u64).unwrap();
    let more = sample_turn(all.len() as u64, 3);
    writer.append(&more).unwrap();
    assert_eq!(
        read_both(&path).unwrap().events.len(),
        all.len() + more.len()
    );
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn bad_line_after_the_last_turn_end_is_a_torn_tail() {
    let root = scratch("garbage-tail");
    let (path, all, lens) = write_turns(&root, Encoding::Raw, 1);
    let next = format!(
        "{{\"type\":\"turn/start\",\"seq\":{},\"time\":0,\"data\":{{\"turn\":2}}}}\n",
        all.len() + 1
    );
    append_bytes(&path, format!("\0\0garbage\n{next}").as_bytes());
    let read = read_both(&path).unwrap();
    assert_eq!(read.events, all);
    let repair = read.repair.unwrap();
    assert_eq!(repair.truncate_to, lens[0]);
    assert!(
        repair.reason.contains("not valid JSON"),
        "{}",
        repair.reason
    );
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn bad_line_before_a_turn_end_is_corruption_naming_line_and_seq() {
    let root = scratch("garbage-middle");
    let events = sample_turn(0, 1);
    let mut lines = raw_lines(&events);
    lines[4] = "{not json".to_owned(); // line 5 holds seq 3
    let path = root.join("session.jsonl");
    write_lines(&path, &lines);
    let err = read_both(&path).unwrap_err();
    assert!(
        matches!(
            err,
            ReadError::Record {
                line: 5,
                frame: None,
                expected_seq: 3,
                source: RecordError::Json(_),
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&path.display().to_string())
            && text.contains("line 5")
            && text.contains("seq 3"),
        "{text}"
    );
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn seq_gap_before_a_turn_end_is_corruption() {
    let root = scratch("seq-gap");
    let events = sample_turn(0, 1);
    let mut lines = raw_lines(&events);
    lines.remove(3); // drop seq 2
    let path = root.join("session.jsonl");
    write_lines(&path, &lines);
    let err = read_both(&path).unwrap_err();
    assert!(
        matches!(
            err,
            ReadError::SeqGap {
                line: 4,
                expected: 2,
                found: Some(3),
                ..
            }
        ),
        "{err:?}"
    );
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn unknown_envelope_shape_is_refused_naming_the_line() {
    let root = scratch("envelope");
    let events = sample_turn(0, 1);
    let mut lines = raw_lines(&events);
    // The last line, so no turn/end follows: still refused, it is not damage.
    let last = lines.len() - 1;
    lines[last] = lines[last].replacen("{\"type\"", "{\"futureField\":1,\"type\"", 1);
    let path = root.join("session.jsonl");
    write_lines(&path, &lines);
    let err = read_both(&path).unwrap_err();
    assert!(
        matches!(
            err,
            ReadError::Record {
                source: RecordError::Envelope(_),
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!("line {}", last + 1)) && text.contains("futureField"),
        "{text}"
    );

    // In zstd mode the error names the frame too.
    let (zpath, all, _) = write_turns(&root.join("z"), Encoding::Zstd, 1);
    let line = format!(
        "{{\"type\":\"x\",\"seq\":{},\"time\":0,\"data\":{{}},\"surfaceOp\":null}}\n",
        all.len()
    );
    append_bytes(&zpath, &zstd::bulk::compress(line.as_bytes(), 3).unwrap());
    let err = read_both(&zpath).unwrap_err();
    assert!(
        matches!(err, ReadError::Record { frame: Some(3), .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("zstd frame 3"), "{err}");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn torn_last_zstd_frame_is_repaired_at_every_cut() {
    let root = scratch("torn-zstd");
    let (path, all, lens) = write_turns(&root, Encoding::Zstd, 3);
    let full = fs::read(&path).unwrap();
    let (start, end) = (lens[1] as usize, lens[2] as usize);
    let kept = all.len() / 3 * 2;
    let mut recovered_any = false;
    for cut in start + 1..end {
        let copy = root.join(format!("cut-{cut}.jsonl.zstd"));
        fs::write(&copy, &full[..cut]).unwrap();
        let read = read_both(&copy).unwrap();
        let repair = read
            .repair
            .clone()
            .unwrap_or_else(|| panic!("cut {cut}: no repair"));
        assert_eq!(repair.truncate_to, start as u64, "cut {cut}");
        assert_eq!(repair.recovered_from, kept, "cut {cut}");
        assert!(
            read.events.len() >= kept && all.starts_with(&read.events),
            "cut {cut}"
        );
        recovered_any |= read.events.len() > kept;
        fs::remove_file(&copy).unwrap();
    }
    assert!(recovered_any, "complete records of a torn frame are kept");

    // Apply a repair: truncate, then re-append what the torn frame held.
    fs::write(&path, &full[..end - 2]).unwrap();
    let read = read_both(&path).unwrap();
    let repair = read.repair.unwrap();
    truncate_to(&path, repair.truncate_to).unwrap();
    let mut writer = SessionWriter::open(&path, true, repair.recovered_from as u64).unwrap();
    writer
        .append(&read.events[repair.recovered_from..])
        .unwrap();
    let again = read_both(&path).unwrap();
    assert!(again.repair.is_none());
    assert_eq!(again.events, read.events);
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn flipped_byte_in_a_complete_zstd_frame_is_corruption_naming_the_frame() {
    let root = scratch("flip");
    let (path, _, lens) = write_turns(&root, Encoding::Zstd, 2);
    let full = fs::read(&path).unwrap();
    let first_frame_end = {
        // Frame 1 is the header alone; find its end structurally via zstd itself.
        zstd::zstd_safe::find_frame_compressed_size(&full).unwrap()
    };
    let frame2 = first_frame_end..lens[0] as usize;
    for (what, at) in [
        ("checksum", frame2.end - 1),
        ("payload", (frame2.start + frame2.end) / 2),
    ] {
        let mut bytes = full.clone();
        bytes[at] ^= 0x20;
        fs::write(&path, &bytes).unwrap();
        let err = read_both(&path).unwrap_err();
        match &err {
            ReadError::Frame {
                frame: 2, offset, ..
            } => assert_eq!(*offset, frame2.start as u64, "{what}"),
            other => panic!("{what}: expected a frame-2 error, got {other}"),
        }
        assert!(err.to_string().contains("frame 2"), "{err}");
    }
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn complete_frame_ending_inside_a_record_is_corruption() {
    let root = scratch("frame-mid-record");
    let (path, all, _) = write_turns(&root, Encoding::Zstd, 1);
    let partial = format!("{{\"type\":\"turn/start\",\"seq\":{}", all.len());
    append_bytes(&path, &zstd::bulk::compress(partial.as_bytes(), 3).unwrap());
    let err = read_both(&path).unwrap_err();
    assert!(matches!(err, ReadError::Frame { frame: 3, .. }), "{err:?}");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn foreign_version_is_refused_first_with_the_upgrade_direction() {
    let root = scratch("version");
    let raw = root.join("session.jsonl");
    // Whatever follows the header is never looked at.
    fs::write(
        &raw,
        "{\"type\":\"session\",\"version\":1,\"id\":\"s\",\"createdAt\":0}\n\0\0 not a log\n",
    )
    .unwrap();
    let err = read_both(&raw).unwrap_err();
    assert!(
        matches!(
            err,
            ReadError::UnsupportedVersion {
                direction: VersionDirection::Newer,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("newer") && err.to_string().contains("upgrade"),
        "{err}"
    );

    let zst = root.join("session.jsonl.zstd");
    let header = b"{\"type\":\"session\",\"version\":-1,\"id\":\"s\",\"createdAt\":0,\"delegationDepth\":0}\n";
    let mut bytes = zstd::bulk::compress(header, 3).unwrap();
    bytes.extend_from_slice(b"garbage that is not a frame");
    fs::write(&zst, &bytes).unwrap();
    let err = read_both(&zst).unwrap_err();
    assert!(
        matches!(
            err,
            ReadError::UnsupportedVersion {
                direction: VersionDirection::Older,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("older"), "{err}");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn missing_header_is_corruption() {
    let root = scratch("no-header");
    let raw = root.join("session.jsonl");
    let zst = root.join("session.jsonl.zstd");
    let event_line = "{\"type\":\"turn/start\",\"seq\":0,\"time\":0,\"data\":{\"turn\":1}}\n";
    let header_and_event = format!("{}\n{event_line}", header().to_line());
    let header_frame =
        zstd::bulk::compress(format!("{}\n", header().to_line()).as_bytes(), 3).unwrap();
    let cases: Vec<(&Path, Vec<u8>)> = vec![
        (&raw, Vec::new()),
        (&raw, event_line.as_bytes().to_vec()),
        (&raw, header().to_line().into_bytes()), // no newline: the header was never committed
        (&zst, Vec::new()),
        (
            &zst,
            zstd::bulk::compress(header_and_event.as_bytes(), 3).unwrap(),
        ),
        (
            &zst,
            zstd::bulk::compress(event_line.as_bytes(), 3).unwrap(),
        ),
        (&zst, header_frame[..header_frame.len() - 3].to_vec()),
    ];
    for (i, (path, bytes)) in cases.into_iter().enumerate() {
        fs::write(path, bytes).unwrap();
        let err = read_both(path).unwrap_err();
        assert!(
            matches!(err, ReadError::MissingHeader { .. }),
            "case {i}: {err:?}"
        );
        assert!(err.to_string().contains(&path.display().to_string()));
    }
    let _ = fs::remove_dir_all(&root);
}
