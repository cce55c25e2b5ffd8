//! `read`: window, numbering, caps, notes, text checks and observations, on real files.

use dsh_tool_fs_core::{
    ErrorCode, Observation, Observations, ReadArgs, ReadWindow, Workspace, build_window, read,
    read_with,
};
use serde_json::json;

use crate::common::Scratch;

fn args(path: &str) -> ReadArgs {
    ReadArgs {
        file_path: path.to_owned(),
        offset: None,
        limit: None,
    }
}

fn window(path: &str, offset: f64, limit: f64) -> ReadArgs {
    ReadArgs {
        file_path: path.to_owned(),
        offset: Some(offset),
        limit: Some(limit),
    }
}

#[test]
fn whole_file_is_numbered_with_the_end_of_file_footer_and_meta() {
    let s = Scratch::new("read-whole");
    s.write("src/main.rs", "fn main() {}\n\nlet x = 1;\n");
    let out = read(&args("src/main.rs"), &Workspace::new(s.root()), None).unwrap();
    let path = s.display("src/main.rs");
    assert_eq!(
        out.text,
        format!(
            "<path>{path}</path>\n<type>file</type>\n<content>\n1: fn main() {{}}\n2: \n3: let x = 1;\n\n(End of file - total 3 lines)\n</content>"
        )
    );
    assert_eq!(
        out.meta,
        json!({"path": path, "offset": 1, "lines": [
            {"number": 1, "text": "fn main() {}"}, {"number": 2, "text": ""}, {"number": 3, "text": "let x = 1;"}
        ], "totalLines": 3, "lang": "rs"})
    );
}

#[test]
fn offset_and_limit_select_a_window_with_the_continuation_note() {
    let s = Scratch::new("read-window");
    s.write("a.txt", "one\ntwo\nthree\nfour\nfive\n");
    let out = read(&window("a.txt", 2.0, 2.0), &Workspace::new(s.root()), None).unwrap();
    assert!(out.text.ends_with(
        "<content>\n2: two\n3: three\n\n(Showing lines 2-3 of 5. Use offset=4 to continue.)\n</content>"
    ));
    assert_eq!(out.meta["offset"], json!(2));
    assert!(out.meta.get("lang").is_none());
}

#[test]
fn crlf_is_stripped_and_a_final_unterminated_line_counts() {
    let s = Scratch::new("read-crlf");
    s.write("a.txt", "one\r\ntwo\r\nlast");
    let out = read(&args("a.txt"), &Workspace::new(s.root()), None).unwrap();
    assert!(
        out.text
            .contains("1: one\n2: two\n3: last\n\n(End of file - total 3 lines)")
    );
}

#[test]
fn empty_file_reads_as_zero_lines_and_an_offset_past_the_end_is_not_found() {
    let s = Scratch::new("read-empty");
    s.write("empty.txt", "");
    s.write("two.txt", "a\nb\n");
    let ws = Workspace::new(s.root());
    let out = read(&args("empty.txt"), &ws, None).unwrap();
    assert!(
        out.text
            .ends_with("<content>\n(End of file - total 0 lines)\n</content>")
    );
    let err = read(&window("two.txt", 5.0, 10.0), &ws, None).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FsNotFound);
    assert_eq!(
        err.message(),
        format!(
            "offset 5 is out of range for \"{}\" (2 lines)",
            s.display("two.txt")
        )
    );
}

#[test]
fn long_lines_are_cut_at_2000_utf16_units_with_the_suffix() {
    let s = Scratch::new("read-long");
    let long = "é".repeat(2500);
    // An astral character counts as two units, as in the reference's JavaScript strings.
    let astral = format!("{}{}", "x".repeat(1999), "😀");
    s.write("long.txt", format!("{long}\n{astral}\n"));
    let out = read(&args("long.txt"), &Workspace::new(s.root()), None).unwrap();
    assert_eq!(
        out.lines[0].text,
        format!("{}... (line truncated to 2000 chars)", "é".repeat(2000))
    );
    assert_eq!(
        out.lines[1].text,
        format!("{}... (line truncated to 2000 chars)", "x".repeat(1999))
    );
}

#[test]
fn the_line_cap_applies_before_a_carriage_return_is_stripped() {
    // The reference caps its line buffer at 2001 units, then strips a trailing `\r`: a line of
    // 2000 chars, `\r`, then more text reads as the 2000 chars without a truncation note.
    let line = format!("{}\rtail", "x".repeat(2000));
    let out = build_window(&format!("{line}\n"), ReadWindow::new(1, 2000), "/p").unwrap();
    assert_eq!(out.lines[0].text, "x".repeat(2000));
}

#[test]
fn output_is_capped_at_50_kib_with_the_capped_note() {
    let s = Scratch::new("read-bytes");
    let line = "a".repeat(1000);
    s.write("big.txt", format!("{line}\n").repeat(100));
    let out = read(&args("big.txt"), &Workspace::new(s.root()), None).unwrap();
    assert_eq!(out.lines.len(), 51);
    assert!(out.truncated_by_bytes);
    assert_eq!(out.total_lines, 100);
    assert!(out.text.ends_with(
        "\n\n(Output capped. Showing lines 1-51. Use offset=52 to continue.)\n</content>"
    ));
}

#[test]
fn at_most_2000_lines_by_default_and_limit_is_capped() {
    let s = Scratch::new("read-limit");
    s.write("many.txt", "x\n".repeat(2500));
    let ws = Workspace::new(s.root());
    let out = read(&args("many.txt"), &ws, None).unwrap();
    assert_eq!(out.lines.len(), 2000);
    assert!(
        out.text
            .ends_with("(Showing lines 1-2000 of 2500. Use offset=2001 to continue.)\n</content>")
    );
    let err = read(&window("many.txt", 1.0, 2001.0), &ws, None).unwrap_err();
    assert_eq!(err.message(), "limit must be less than or equal to 2000");
    assert_eq!(
        err.info().map(|info| serde_json::to_value(info).unwrap()),
        None
    );
    let custom = ReadWindow {
        limit: 10,
        ..ReadWindow::new(1, 10)
    };
    let out = read_with(&args("many.txt"), &ws, None, custom).unwrap();
    assert_eq!(out.lines.len(), 10);
}

#[test]
fn argument_value_checks_use_the_reference_texts() {
    let s = Scratch::new("read-args");
    let ws = Workspace::new(s.root());
    let cases = [
        (window("a", 0.0, 1.0), "offset must be a positive integer"),
        (window("a", 1.5, 1.0), "offset must be a positive integer"),
        (window("a", 1.0, -3.0), "limit must be a positive integer"),
        (args("  "), "file_path must be a non-empty string"),
    ];
    for (bad, message) in cases {
        let err = read(&bad, &ws, None).unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            (ErrorCode::Unclassified, message)
        );
    }
}

#[test]
fn missing_files_are_not_found_and_recorded_absent() {
    let s = Scratch::new("read-missing");
    let ws = Workspace::new(s.root());
    let record = Observations::new();
    let err = read(&args("gone.txt"), &ws, Some(&record)).unwrap_err();
    assert_eq!(
        err.model_text(),
        format!(
            "Error: cannot read \"{}\": not found",
            s.display("gone.txt")
        )
    );
    assert_eq!(
        err.info().map(|info| serde_json::to_value(info).unwrap()),
        Some(json!({"name": "FsError", "code": "FS_NOT_FOUND"}))
    );
    assert_eq!(
        record.get(&s.root().canonicalize().unwrap().join("gone.txt")),
        Some(Observation::Absent)
    );
}

#[test]
fn binary_invalid_utf8_and_directories_are_refused() {
    let s = Scratch::new("read-binary");
    s.write("bin.dat", b"abc\0def");
    s.write("latin1.txt", b"caf\xe9\n");
    std::fs::create_dir_all(s.root().join("dir")).unwrap();
    let ws = Workspace::new(s.root());
    let err = read(&args("bin.dat"), &ws, None).unwrap_err();
    assert_eq!(
        (err.code(), err.message().to_owned()),
        (
            ErrorCode::FsNotText,
            format!("cannot read \"{}\": binary file", s.display("bin.dat"))
        )
    );
    let err = read(&args("latin1.txt"), &ws, None).unwrap_err();
    assert_eq!(
        err.message(),
        format!(
            "cannot read \"{}\": invalid UTF-8 text",
            s.display("latin1.txt")
        )
    );
    let err = read(&args("dir"), &ws, None).unwrap_err();
    assert_eq!(
        (err.code(), err.message().to_owned()),
        (
            ErrorCode::FsNotRegularFile,
            format!("cannot read \"{}\": not a regular file", s.display("dir"))
        )
    );
}

#[test]
fn a_nul_after_the_binary_sample_is_text_and_a_bom_is_dropped() {
    let s = Scratch::new("read-nul-late");
    let mut bytes = b"\xEF\xBB\xBFfirst\n".to_vec();
    bytes.extend(std::iter::repeat_n(b'a', 9000));
    bytes.extend(b"\0\n");
    s.write("late.txt", &bytes);
    let out = read(&args("late.txt"), &Workspace::new(s.root()), None).unwrap();
    assert_eq!(out.lines[0].text, "first");
    assert_eq!(out.total_lines, 2);
}

#[test]
fn streaming_across_chunk_edges_matches_the_whole_text_window() {
    let s = Scratch::new("read-stream");
    let mut text = String::new();
    for i in 0..40_000 {
        text.push_str(&format!("{i} ünïcødé 😀 line\n"));
    }
    s.write("big.txt", &text);
    let request = ReadWindow::new(30_000, 50);
    let out = read(
        &window("big.txt", 30_000.0, 50.0),
        &Workspace::new(s.root()),
        None,
    )
    .unwrap();
    let whole = build_window(&text, request, "p").unwrap();
    assert_eq!(out.lines, whole.lines);
    assert_eq!(out.total_lines, 40_000);
}

#[test]
fn a_successful_read_records_the_present_version() {
    let s = Scratch::new("read-record");
    s.write("a.txt", "x\n");
    let record = Observations::new();
    let out = read(&args("a.txt"), &Workspace::new(s.root()), Some(&record)).unwrap();
    assert_eq!(
        record.get(&out.target.key),
        Some(Observation::Present(out.version))
    );
    assert_eq!(out.version.size, 2);
}

#[test]
fn relative_paths_resolve_lexically_against_the_workspace() {
    let s = Scratch::new("read-resolve");
    s.write("sub/a.txt", "x\n");
    let ws = Workspace::new(s.root().join("sub"));
    let out = read(&args("./../sub/./a.txt"), &ws, None).unwrap();
    let canonical = s.root().canonicalize().unwrap().join("sub/a.txt");
    assert_eq!(out.target.display, canonical.to_string_lossy());
    let absolute = read(&args(&s.display("sub/a.txt")), &ws, None).unwrap();
    assert_eq!(absolute.target.key, out.target.key);
}
