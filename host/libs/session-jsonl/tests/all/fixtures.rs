//! The recorded reference logs are the conformance corpus: every one must read, round-trip
//! through our writer in both encodings, and pack exactly as the reference packed it.

use dsh_session_jsonl::{
    Encoding, ReadError, ReadSession, SessionWriter, WriterOptions, check_session_id,
    decode_session, encode_lines, encode_raw_log, list_sessions, size_report,
};
use serde_json::Value;

use crate::common::{fixture_logs, is_replay_script, read_both, scratch};

/// The durable logs, reading each once; replay scripts are skipped with the reason printed, after
/// checking they really are refused as durable logs.
fn durable_logs() -> Vec<(std::path::PathBuf, ReadSession)> {
    let mut out = Vec::new();
    for path in fixture_logs() {
        let read = read_both(&path);
        if is_replay_script(&path) {
            match read {
                Err(e @ ReadError::BadHeader { .. }) => {
                    println!(
                        "skip {}: replay script, not a durable log ({e})",
                        path.display()
                    );
                    continue;
                }
                other => panic!(
                    "{}: expected the replay script to be refused, got {other:?}",
                    path.display()
                ),
            }
        }
        let read = read.unwrap_or_else(|e| panic!("{e}"));
        out.push((path, read));
    }
    out
}

#[test]
fn every_fixture_reads_without_repair() {
    dsh_test_corpus::needs_corpus!("every_fixture_reads_without_repair");
    let logs = durable_logs();
    let mut events = 0;
    for (path, read) in &logs {
        assert!(
            read.repair.is_none(),
            "{}: unexpected repair {:?}",
            path.display(),
            read.repair
        );
        for (i, e) in read.events.iter().enumerate() {
            assert_eq!(e.seq, i as u64, "{}", path.display());
        }
        events += read.events.len();
    }
    println!("{} durable fixture logs, {events} events", logs.len());
}

#[test]
fn fixtures_round_trip_packed_and_unpacked() {
    dsh_test_corpus::needs_corpus!("fixtures_round_trip_packed_and_unpacked");
    for (path, read) in durable_logs() {
        let label = path.display();
        let packed = encode_raw_log(&read.header, &read.events, true).unwrap();
        let again = decode_session(&path, &packed, Encoding::Raw).unwrap();
        assert_eq!(again.header, read.header, "{label}");
        assert_eq!(again.events, read.events, "{label}: packed round trip");
        assert!(again.repair.is_none());

        // Expanded events written one per line read back the same, and re-pack to the same rows.
        let unpacked = encode_raw_log(&read.header, &read.events, false).unwrap();
        let expanded = decode_session(&path, &unpacked, Encoding::Raw).unwrap();
        assert_eq!(expanded.events, read.events, "{label}: unpacked round trip");
        let repacked = encode_raw_log(&expanded.header, &expanded.events, true).unwrap();
        assert_eq!(repacked, packed, "{label}: re-packing is deterministic");
    }
}

/// Our rows are the reference's rows: same line count, and each line equal as JSON.
#[test]
fn fixtures_pack_exactly_like_the_reference() {
    dsh_test_corpus::needs_corpus!("fixtures_pack_exactly_like_the_reference");
    let mut rows = 0;
    for (path, read) in durable_logs() {
        let text = std::fs::read_to_string(&path).unwrap();
        let theirs: Vec<Value> = text
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let ours_text = encode_lines(&read.events, true).unwrap();
        let ours: Vec<Value> = ours_text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(ours.len(), theirs.len(), "{}: line count", path.display());
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(a, b, "{}: body line {}", path.display(), i + 1);
        }
        let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let our_header: Value = serde_json::from_str(&read.header.to_line()).unwrap();
        assert_eq!(our_header, header, "{}: header", path.display());
        rows += theirs
            .iter()
            .filter(|v| v["type"].as_str().is_some_and(|t| t.ends_with("-chunks")))
            .count();
    }
    println!("{rows} packed rows matched");
}

#[test]
fn packed_size_is_within_105_percent_of_the_fixture() {
    dsh_test_corpus::needs_corpus!("packed_size_is_within_105_percent_of_the_fixture");
    let (mut file, mut packed, mut unpacked, mut exact) = (0u64, 0u64, 0u64, 0usize);
    let logs = durable_logs();
    for (path, _) in &logs {
        let report = size_report(path).unwrap();
        println!(
            "fixture {:>6} B  ours packed {:>6} B ({:.3})  unpacked {:>6} B  {}",
            report.file_bytes,
            report.packed_bytes,
            report.packed_ratio(),
            report.unpacked_bytes,
            path.strip_prefix(crate::common::fixtures_dir())
                .unwrap_or(path)
                .display()
        );
        assert!(
            report.packed_bytes * 100 <= report.file_bytes * 105,
            "{}: ours {} bytes vs fixture {}",
            path.display(),
            report.packed_bytes,
            report.file_bytes
        );
        exact += usize::from(report.packed_bytes == report.file_bytes);
        file += report.file_bytes;
        packed += report.packed_bytes;
        unpacked += report.unpacked_bytes;
    }
    println!(
        "total: fixtures {file} B, ours packed {packed} B, ours unpacked {unpacked} B; \
         {exact}/{} logs byte-count identical",
        logs.len()
    );
}

/// Stronger than the 105% bound: same rows and the same number spelling (floats included) give
/// the same byte count for every log; only key order inside objects may differ.
#[test]
fn packed_size_equals_the_fixture_size() {
    dsh_test_corpus::needs_corpus!("packed_size_equals_the_fixture_size");
    for (path, _) in durable_logs() {
        let report = size_report(&path).unwrap();
        assert_eq!(report.packed_bytes, report.file_bytes, "{}", path.display());
    }
}

/// Through the real writer, in batches, in both encodings, then listed and read back. Fixtures
/// share ids (`{{sessionId}}`), so each gets its own root; a placeholder id (which no path may
/// be built from) is replaced by a real one.
#[test]
fn fixtures_round_trip_through_the_writer() {
    dsh_test_corpus::needs_corpus!("fixtures_round_trip_through_the_writer");
    let scratch_root = scratch("fixtures-writer");
    for (encoding, sub) in [(Encoding::Zstd, "zstd"), (Encoding::Raw, "raw")] {
        let mut total = 0;
        for (i, (path, read)) in durable_logs().iter().enumerate() {
            let root = scratch_root.join(format!("{sub}-{i}"));
            let options = WriterOptions {
                encoding,
                pack_chunks: true,
            };
            let mut header = read.header.clone();
            if check_session_id(&header.id).is_err() {
                header.id = format!("fixture-{i}");
            }
            let mut writer = SessionWriter::create(&root, header.clone(), options).unwrap();
            // Uneven batches, so runs are split across frames/batches too.
            for batch in read.events.chunks(7) {
                writer.append(batch).unwrap();
            }
            if read.events.is_empty() {
                assert!(
                    !root.exists(),
                    "{}: nothing appended, nothing written",
                    path.display()
                );
                continue;
            }
            total += std::fs::metadata(writer.path()).unwrap().len();
            let back = read_both(writer.path()).unwrap();
            assert_eq!(back.header, header, "{}", path.display());
            assert_eq!(
                back.events,
                read.events,
                "{} via {encoding:?}",
                path.display()
            );
            assert!(back.repair.is_none());
            let listed = list_sessions(&root, encoding).unwrap().sessions;
            assert_eq!(listed.len(), 1);
            assert_eq!(listed[0].path, writer.path());
            assert_eq!(listed[0].header, header);
        }
        println!("{encoding:?}, batches of 7 events: {total} B for the whole corpus");
    }
    let _ = std::fs::remove_dir_all(&scratch_root);
}
