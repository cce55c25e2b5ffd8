//! `write` and `edit`: the observation policy, the fence, atomic publication, texts and diffs.

use dsh_tool_fs_core::{
    EditArgs, ErrorCode, Observations, ReadArgs, SandboxMode, Workspace, WriteArgs, WriteOperation,
    edit, read, write, write_with,
};
use serde_json::json;

use crate::common::Scratch;

fn write_args(path: &str, content: &str) -> WriteArgs {
    WriteArgs {
        file_path: path.to_owned(),
        content: content.to_owned(),
    }
}

fn edit_args(path: &str, old: &str, new: &str) -> EditArgs {
    EditArgs {
        file_path: path.to_owned(),
        old_string: old.to_owned(),
        new_string: new.to_owned(),
        replace_all: None,
    }
}

fn read_it(path: &str, ws: &Workspace, record: &Observations) {
    read(
        &ReadArgs {
            file_path: path.to_owned(),
            offset: None,
            limit: None,
        },
        ws,
        Some(record),
    )
    .unwrap();
}

fn full(s: &Scratch) -> Workspace {
    Workspace::new(s.root()).with_mode(SandboxMode::DangerFullAccess)
}

#[test]
fn write_creates_a_new_file_with_parents_and_records_it() {
    let s = Scratch::new("write-create");
    let ws = Workspace::new(s.root());
    let record = Observations::new();
    let out = write(
        &write_args("deep/new.txt", "hello world"),
        &ws,
        Some(&record),
    )
    .unwrap();
    assert_eq!(
        out.text,
        format!(
            "<path>{}</path>\n<type>file</type>\n<content>\nCreated file\n</content>",
            s.display("deep/new.txt")
        )
    );
    assert_eq!(out.meta, json!({"diffs": []}));
    assert_eq!(out.operation, WriteOperation::Create);
    assert_eq!(s.read_string("deep/new.txt"), "hello world");
    // Just created in this session: an edit needs no read first.
    let edited = edit(
        &edit_args("deep/new.txt", "world", "there"),
        &ws,
        Some(&record),
    )
    .unwrap();
    assert_eq!(
        edited.text,
        format!(
            "The file {} has been updated successfully.",
            s.display("deep/new.txt")
        )
    );
    assert_eq!(s.read_string("deep/new.txt"), "hello there");
}

#[test]
fn write_over_an_unread_file_is_not_observed() {
    let s = Scratch::new("write-unread");
    s.write("a.txt", "old\n");
    let err = write(
        &write_args("a.txt", "new"),
        &Workspace::new(s.root()),
        Some(&Observations::new()),
    )
    .unwrap_err();
    assert_eq!(
        err.model_text(),
        format!(
            "Error: cannot overwrite existing \"{}\" without reading it first — read the file, then retry",
            s.display("a.txt")
        )
    );
    assert_eq!(
        err.info().map(|info| serde_json::to_value(info).unwrap()),
        Some(json!({"name": "FsError", "code": "FS_NOT_OBSERVED"}))
    );
    assert_eq!(s.read_string("a.txt"), "old\n");
}

#[test]
fn write_after_a_read_updates_and_reports_context_hunks() {
    let s = Scratch::new("write-update");
    s.write("a.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n");
    let ws = Workspace::new(s.root());
    let record = Observations::new();
    read_it("a.txt", &ws, &record);
    let out = write(
        &write_args("a.txt", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n"),
        &ws,
        Some(&record),
    )
    .unwrap();
    assert!(out.text.contains("<content>\nUpdated file\n</content>"));
    assert_eq!(
        out.meta,
        json!({"diffs": [{"path": "a.txt", "oldText": "2\n3\n4\n5\n6\n7\n8", "newText": "2\n3\n4\nfive\n6\n7\n8", "oldStart": 2, "newStart": 2}]})
    );
    // The new version is recorded: a second write needs no re-read.
    write(&write_args("a.txt", "x"), &ws, Some(&record)).unwrap();
    assert_eq!(s.read_string("a.txt"), "x");
}

#[test]
fn write_diff_basis_is_bounded() {
    let s = Scratch::new("write-bounded");
    s.write("data.txt", "original contents");
    let ws = Workspace::new(s.root());
    let record = Observations::new();
    read_it("data.txt", &ws, &record);
    let long = "The replacement line is deliberately longer than the configured sixty-four byte diff-basis bound.";
    let out = write_with(&write_args("data.txt", long), &ws, Some(&record), 64).unwrap();
    assert_eq!(out.meta, json!({"diffs": []}));
    assert_eq!(out.operation, WriteOperation::Update);
}

#[test]
fn a_file_past_the_diff_bound_is_still_version_checked() {
    let s = Scratch::new("write-bounded-stale");
    s.write("big.txt", "0123456789\n");
    let ws = Workspace::new(s.root());
    let record = Observations::new();
    read_it("big.txt", &ws, &record);
    s.write("big.txt", "9876543210\n");
    let err = write_with(&write_args("big.txt", "x"), &ws, Some(&record), 4).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FsStaleVersion);
    read_it("big.txt", &ws, &record);
    let out = write_with(&write_args("big.txt", "x"), &ws, Some(&record), 4).unwrap();
    assert_eq!(out.meta, json!({"diffs": []}));
}

#[test]
fn write_of_a_file_changed_or_deleted_since_its_read_is_stale() {
    let s = Scratch::new("write-stale");
    s.write("a.txt", "one\n");
    let ws = Workspace::new(s.root());
    let record = Observations::new();
    read_it("a.txt", &ws, &record);
    s.write("a.txt", "two\n");
    let err = write(&write_args("a.txt", "three"), &ws, Some(&record)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FsStaleVersion);
    assert_eq!(
        err.message(),
        format!(
            "cannot write \"{}\": file changed since it was read — re-read the file, then retry",
            s.display("a.txt")
        )
    );
    read_it("a.txt", &ws, &record);
    std::fs::remove_file(s.root().join("a.txt")).unwrap();
    let err = write(&write_args("a.txt", "three"), &ws, Some(&record)).unwrap_err();
    assert_eq!(
        err.message(),
        format!(
            "cannot write \"{}\": file no longer exists — re-read the file, then retry",
            s.display("a.txt")
        )
    );
}

#[test]
fn without_a_policy_writes_and_edits_are_unconditional() {
    let s = Scratch::new("write-nopolicy");
    s.write("a.txt", "alpha beta\n");
    let ws = Workspace::new(s.root());
    write(&write_args("a.txt", "alpha gamma\n"), &ws, None).unwrap();
    edit(&edit_args("a.txt", "gamma", "delta"), &ws, None).unwrap();
    assert_eq!(s.read_string("a.txt"), "alpha delta\n");
}

#[test]
fn edit_of_a_never_read_file_is_not_observed_and_of_an_absent_read_not_found() {
    let s = Scratch::new("edit-policy");
    s.write("settings.txt", "color: blue\n");
    let ws = Workspace::new(s.root());
    let record = Observations::new();
    let err = edit(
        &edit_args("settings.txt", "blue", "green"),
        &ws,
        Some(&record),
    )
    .unwrap_err();
    assert_eq!(
        err.model_text(),
        format!(
            "Error: edit requires reading \"{}\" first — read the file, then retry",
            s.display("settings.txt")
        )
    );
    assert_eq!(err.code(), ErrorCode::FsNotObserved);
    let _ = read(
        &ReadArgs {
            file_path: "missing.txt".into(),
            offset: None,
            limit: None,
        },
        &ws,
        Some(&record),
    );
    let err = edit(&edit_args("missing.txt", "a", "b"), &ws, Some(&record)).unwrap_err();
    assert_eq!(
        (err.code(), err.message().to_owned()),
        (
            ErrorCode::FsNotFound,
            format!("cannot edit \"{}\": not found", s.display("missing.txt"))
        )
    );
    read_it("settings.txt", &ws, &record);
    let out = edit(
        &edit_args("settings.txt", "blue", "green"),
        &ws,
        Some(&record),
    )
    .unwrap();
    assert_eq!(
        out.meta,
        json!({"diffs": [{"path": "settings.txt", "oldText": "color: blue", "newText": "color: green", "oldStart": 1, "newStart": 1}]})
    );
}

#[test]
fn edit_after_a_change_or_deletion_is_stale() {
    let s = Scratch::new("edit-stale");
    s.write("a.txt", "x = 1\n");
    let ws = Workspace::new(s.root());
    let record = Observations::new();
    read_it("a.txt", &ws, &record);
    s.write("a.txt", "x = 2\n");
    let stale = format!(
        "cannot edit \"{}\": file changed since it was read — re-read the file, then retry",
        s.display("a.txt")
    );
    let err = edit(&edit_args("a.txt", "x", "y"), &ws, Some(&record)).unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (ErrorCode::FsStaleVersion, stale.as_str())
    );
    read_it("a.txt", &ws, &record);
    std::fs::remove_file(s.root().join("a.txt")).unwrap();
    let err = edit(&edit_args("a.txt", "x", "y"), &ws, Some(&record)).unwrap_err();
    assert_eq!(err.message(), stale);
}

#[test]
fn edit_match_rules_and_texts() {
    let s = Scratch::new("edit-match");
    s.write("a.txt", "foo bar foo\n");
    let ws = Workspace::new(s.root());
    let record = Observations::new();
    read_it("a.txt", &ws, &record);
    let shown = s.display("a.txt");
    let err = edit(&edit_args("a.txt", "baz", "qux"), &ws, Some(&record)).unwrap_err();
    assert_eq!(
        (err.code(), err.message().to_owned()),
        (
            ErrorCode::FsEditNotFound,
            format!("old_string was not found in \"{shown}\"")
        )
    );
    let err = edit(&edit_args("a.txt", "foo", "qux"), &ws, Some(&record)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FsAmbiguousEdit);
    assert_eq!(
        err.message(),
        format!(
            "old_string matched 2 times in \"{shown}\"; provide a more specific old_string or set replace_all to true"
        )
    );
    let all = EditArgs {
        replace_all: Some(true),
        ..edit_args("a.txt", "foo", "qux")
    };
    let out = edit(&all, &ws, Some(&record)).unwrap();
    assert_eq!(
        out.text,
        format!("The file {shown} has been updated. All occurrences were successfully replaced.")
    );
    assert_eq!(s.read_string("a.txt"), "qux bar qux\n");
    for (bad, message) in [
        (
            edit_args("a.txt", "", "x"),
            "old_string must be a non-empty string",
        ),
        (
            edit_args("a.txt", "same", "same"),
            "old_string and new_string must differ",
        ),
        (
            edit_args(" ", "a", "b"),
            "file_path must be a non-empty string",
        ),
    ] {
        let err = edit(&bad, &ws, Some(&record)).unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            (ErrorCode::Unclassified, message)
        );
    }
}

#[test]
fn edit_keeps_crlf_line_endings_and_a_bom() {
    let s = Scratch::new("edit-crlf");
    s.write("win.txt", "\u{FEFF}one\r\ntwo\r\nthree\r\n");
    let ws = full(&s);
    let record = Observations::new();
    read_it("win.txt", &ws, &record);
    let out = edit(
        &edit_args("win.txt", "two\nthree", "2\n3"),
        &ws,
        Some(&record),
    )
    .unwrap();
    assert_eq!(s.read_string("win.txt"), "\u{FEFF}one\r\n2\r\n3\r\n");
    assert_eq!(
        out.meta,
        json!({"diffs": [{"path": "win.txt", "oldText": "one\ntwo\nthree", "newText": "one\n2\n3", "oldStart": 1, "newStart": 1}]})
    );
}

#[test]
fn edit_refuses_binary_files() {
    let s = Scratch::new("edit-binary");
    s.write("b.bin", b"text then \0 nul");
    let err = edit(
        &edit_args("b.bin", "text", "data"),
        &Workspace::new(s.root()),
        None,
    )
    .unwrap_err();
    assert_eq!(
        (err.code(), err.message().to_owned()),
        (
            ErrorCode::FsNotText,
            format!("cannot edit \"{}\": binary file", s.display("b.bin"))
        )
    );
}

#[cfg(unix)]
#[test]
fn mutations_keep_the_file_mode() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("edit-mode");
    let path = s.write("run.sh", "echo hi\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o751)).unwrap();
    edit(
        &edit_args("run.sh", "hi", "there"),
        &Workspace::new(s.root()),
        None,
    )
    .unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o751
    );
    let leftovers: Vec<_> = std::fs::read_dir(s.root())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        leftovers,
        vec![std::ffi::OsString::from("run.sh")],
        "no staging residue"
    );
}

#[test]
fn the_fence_refuses_mutations_outside_the_workspace_unless_full_access() {
    let outer = Scratch::new("fence-outer");
    let s = Scratch::new("fence-root");
    let outside = outer.display("x.txt");
    let ws = Workspace::new(s.root());
    let err = write(&write_args(&outside, "x"), &ws, None).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FsSandboxDenied);
    assert_eq!(
        err.message(),
        "[sandbox: file access denied under workspace-write mode]"
    );
    let detail = err.detail().unwrap();
    assert!(
        detail.contains(&outside) && detail.contains(&*s.root().to_string_lossy()),
        "{detail}"
    );
    assert!(!outer.root().join("x.txt").exists());
    let hinted = Workspace::new(s.root()).with_escalation_available(true);
    let err = write(&write_args(&outside, "x"), &hinted, None).unwrap_err();
    assert!(err.message().ends_with("retry this exact operation once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]"));
    write(&write_args(&outside, "x"), &full(&s), None).unwrap();
    assert_eq!(outer.read_string("x.txt"), "x");
    let extra = Workspace::new(s.root()).with_writable_root(outer.root());
    write(&write_args(&outside, "y"), &extra, None).unwrap();
    let read_only = Workspace::new(s.root()).with_mode(SandboxMode::ReadOnly);
    let err = write(&write_args("in.txt", "x"), &read_only, None).unwrap_err();
    assert_eq!(
        err.message(),
        "[sandbox: file access denied under read-only mode]"
    );
}

/// A workspace without an absolute root fences nothing by prefix (every path starts with the
/// empty one), so it refuses every mutation instead.
#[test]
fn a_workspace_without_a_root_refuses_writes() {
    let outer = Scratch::new("fence-rootless");
    let target = outer.display("x.txt");
    let err = write(&write_args(&target, "x"), &Workspace::new(""), None).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FsSandboxDenied);
    assert!(
        err.detail().unwrap().contains("no absolute root"),
        "{err:?}"
    );
    assert!(!outer.root().join("x.txt").exists());
}

#[cfg(unix)]
#[test]
fn the_fence_follows_symlinks_out_of_the_workspace() {
    let outer = Scratch::new("fence-link-outer");
    let s = Scratch::new("fence-link");
    outer.write("target.txt", "secret\n");
    std::os::unix::fs::symlink(outer.root(), s.root().join("escape")).unwrap();
    let ws = Workspace::new(s.root());
    let err = edit(&edit_args("escape/target.txt", "secret", "x"), &ws, None).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FsSandboxDenied);
    assert_eq!(outer.read_string("target.txt"), "secret\n");
}

#[test]
fn writing_through_a_regular_file_cannot_resolve() {
    let s = Scratch::new("write-notdir");
    s.write("file.txt", "x");
    let err = write(
        &write_args("file.txt/child.txt", "y"),
        &Workspace::new(s.root()),
        None,
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::FsNotFound);
    assert_eq!(
        err.message(),
        format!(
            "cannot resolve \"{}\": a parent path segment is not a directory",
            s.display("file.txt/child.txt")
        )
    );
}
