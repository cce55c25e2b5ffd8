//! `glob` and `grep` over real trees: filters, order, formats, caps, notes and errors.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use dsh_tool_fs_core::{
    ErrorCode, GlobArgs, GrepArgs, SearchOptions, SpillRef, Workspace, glob, glob_spill_text, grep,
    grep_spill_text, render_glob, render_grep,
};
use serde_json::json;

use crate::common::Scratch;

fn tree() -> Scratch {
    let s = Scratch::new("search-tree");
    s.write(
        "src/alpha.ts",
        "export const alpha = 1\n// TODO: refit alpha\n",
    );
    s.write("src/beta.ts", "export const beta = 2\n");
    s.write("notes.md", "alpha appears here too\n");
    s.write(".hidden.ts", "export const hidden = 3\n");
    s.write(".git/config.ts", "never listed\n");
    s.write("spaced dir/wei'rd name.ts", "const inside = true\n");
    s.set_mtime("src/alpha.ts", 946_684_800);
    s.set_mtime("src/beta.ts", 1_577_836_800);
    s.set_mtime(".hidden.ts", 1_600_000_000);
    s.set_mtime("spaced dir/wei'rd name.ts", 1_700_000_000);
    s
}

fn glob_args(pattern: &str, path: Option<&str>) -> GlobArgs {
    GlobArgs {
        pattern: pattern.to_owned(),
        path: path.map(str::to_owned),
    }
}

fn grep_args(pattern: &str, path: Option<&str>, include: Option<&str>) -> GrepArgs {
    GrepArgs {
        pattern: pattern.to_owned(),
        path: path.map(str::to_owned),
        include: include.map(str::to_owned),
    }
}

#[test]
fn glob_lists_hidden_files_oldest_first_and_never_vcs_metadata() {
    let s = tree();
    let out = glob(
        &glob_args("**/*.ts", None),
        &Workspace::new(s.root()),
        &SearchOptions::default(),
    )
    .unwrap();
    assert_eq!(
        out.text,
        "src/alpha.ts\nsrc/beta.ts\n.hidden.ts\nspaced dir/wei'rd name.ts"
    );
    assert_eq!(
        out.meta,
        json!({"shape": "paths", "paths": ["src/alpha.ts", "src/beta.ts", ".hidden.ts", "spaced dir/wei'rd name.ts"], "truncated": false, "total": 4})
    );
    assert_eq!(out.root, ".");
}

#[test]
fn glob_lists_gitignored_files_like_the_reference() {
    let s = tree();
    s.write(".gitignore", "ignored.ts\n");
    s.write("ignored.ts", "x\n");
    let out = glob(
        &glob_args("ignored.ts", None),
        &Workspace::new(s.root()),
        &SearchOptions::default(),
    )
    .unwrap();
    assert_eq!(out.text, "ignored.ts");
}

#[test]
fn glob_scopes_to_a_path_and_prefixes_results_with_it() {
    let s = tree();
    let ws = Workspace::new(s.root());
    let out = glob(
        &glob_args("*.ts", Some("src")),
        &ws,
        &SearchOptions::default(),
    )
    .unwrap();
    assert_eq!(out.paths, vec!["src/alpha.ts", "src/beta.ts"]);
    assert_eq!(out.root, "src");
    let absolute = s.display("src");
    let out = glob(
        &glob_args("*.ts", Some(&absolute)),
        &ws,
        &SearchOptions::default(),
    )
    .unwrap();
    assert_eq!(
        out.paths,
        vec!["src/alpha.ts", "src/beta.ts"],
        "absolute results inside the workspace become relative"
    );
    let out = glob(
        &glob_args("*", Some(".git")),
        &ws,
        &SearchOptions::default(),
    )
    .unwrap();
    assert_eq!(out.text, "No files found");
    assert_eq!(
        out.meta,
        json!({"shape": "paths", "paths": [], "truncated": false, "total": 0})
    );
}

#[test]
fn glob_errors_follow_ripgrep_and_the_reference_classification() {
    let s = tree();
    let ws = Workspace::new(s.root());
    let err = glob(&glob_args("[", None), &ws, &SearchOptions::default()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::SearchInvalidPattern);
    assert_eq!(
        err.message(),
        "glob pattern rejected by ripgrep: rg: error parsing glob '[': unclosed character class; missing ']'"
    );
    assert_eq!(
        err.info().map(|info| serde_json::to_value(info).unwrap()),
        Some(json!({"name": "SearchError", "code": "SEARCH_INVALID_PATTERN"}))
    );
    let err = glob(
        &glob_args("*", Some("nope")),
        &ws,
        &SearchOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::SearchFailed);
    assert_eq!(
        err.message(),
        "glob search failed (exit 2): rg: nope: IO error for operation on nope: No such file or directory (os error 2)"
    );
    let err = glob(&glob_args("  ", None), &ws, &SearchOptions::default()).unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (
            ErrorCode::Unclassified,
            "pattern must be a non-empty string"
        )
    );
    let err = glob(&glob_args("*", Some(" ")), &ws, &SearchOptions::default()).unwrap_err();
    assert_eq!(err.message(), "path must be a non-empty string when given");
}

#[test]
fn glob_over_the_cap_keeps_the_head_and_says_so() {
    let s = Scratch::new("glob-cap");
    for i in 0..5 {
        s.write(&format!("f{i}.txt"), "x");
        s.set_mtime(&format!("f{i}.txt"), 1_000 + i);
    }
    let options = SearchOptions {
        glob_max_results: 3,
        ..SearchOptions::default()
    };
    let out = glob(
        &glob_args("*.txt", None),
        &Workspace::new(s.root()),
        &options,
    )
    .unwrap();
    assert_eq!(
        out.text,
        "f0.txt\nf1.txt\nf2.txt\n\n(Showing 3 of 5 paths. The complete result could not be saved; narrow pattern or path to see more.)"
    );
    assert_eq!(
        out.meta,
        json!({"shape": "paths", "paths": ["f0.txt", "f1.txt", "f2.txt"], "truncated": true, "total": 5})
    );
    let spill = SpillRef {
        locator: "/spill/glob-results.txt".into(),
        retrieval_hint: "Read it with read.".into(),
    };
    assert_eq!(
        render_glob(&out.paths, &options, &out.root, Some(&spill)),
        "f0.txt\nf1.txt\nf2.txt\n\n(Showing 3 of 5 paths. Full sorted result stored at: /spill/glob-results.txt. Read it with read.)"
    );
    assert_eq!(
        glob_spill_text(&out.paths),
        "f0.txt\nf1.txt\nf2.txt\nf3.txt\nf4.txt"
    );
}

#[test]
fn glob_meta_is_bounded_in_bytes() {
    let s = Scratch::new("glob-meta");
    for i in 0..20 {
        s.write(&format!("{}{i:02}.txt", "n".repeat(40)), "x");
    }
    let options = SearchOptions {
        meta_max_bytes: 300,
        ..SearchOptions::default()
    };
    let out = glob(
        &glob_args("*.txt", None),
        &Workspace::new(s.root()),
        &options,
    )
    .unwrap();
    assert_eq!(out.meta["truncated"], json!(true));
    assert_eq!(out.meta["total"], json!(20));
    assert!(serde_json::to_string(&out.meta).unwrap().len() <= 300);
    assert_eq!(out.paths.len(), 20);
}

#[test]
fn grep_groups_matches_by_file() {
    let s = tree();
    let ws = Workspace::new(s.root());
    let out = grep(
        &grep_args("alpha", None, None),
        &ws,
        &SearchOptions::default(),
    )
    .unwrap();
    assert_eq!(
        out.text,
        "Found 3 matches\n\nnotes.md\nLine 1: alpha appears here too\n\nsrc/alpha.ts\nLine 1: export const alpha = 1\nLine 2: // TODO: refit alpha"
    );
    assert_eq!(
        out.meta,
        json!({"shape": "matches", "files": [
            {"path": "notes.md", "matches": [{"lineNumber": 1, "line": "alpha appears here too"}]},
            {"path": "src/alpha.ts", "matches": [
                {"lineNumber": 1, "line": "export const alpha = 1"}, {"lineNumber": 2, "line": "// TODO: refit alpha"}
            ]}
        ], "truncated": false, "total": 3})
    );
}

#[test]
fn grep_a_single_file_an_include_filter_and_a_dot_root() {
    let s = tree();
    let ws = Workspace::new(s.root());
    let out = grep(
        &grep_args("alpha", Some("notes.md"), None),
        &ws,
        &SearchOptions::default(),
    )
    .unwrap();
    assert_eq!(
        out.text,
        "Found 1 match\n\nnotes.md\nLine 1: alpha appears here too"
    );
    let out = grep(
        &grep_args("alpha", Some("."), Some("*.ts")),
        &ws,
        &SearchOptions::default(),
    )
    .unwrap();
    assert_eq!(
        out.text,
        "Found 2 matches\n\n./src/alpha.ts\nLine 1: export const alpha = 1\nLine 2: // TODO: refit alpha"
    );
    let out = grep(
        &grep_args("--flag", None, None),
        &ws,
        &SearchOptions::default(),
    )
    .unwrap();
    assert_eq!(out.text, "No matches found");
    assert_eq!(
        out.meta,
        json!({"shape": "matches", "files": [], "truncated": false, "total": 0})
    );
}

#[test]
fn grep_skips_hidden_binary_and_gitignored_files_inside_a_repository() {
    let s = tree();
    s.write(".gitignore", "generated/\n");
    s.write("generated/out.ts", "const hidden = 'alpha'\n");
    s.write("blob.bin", b"alpha\0binary");
    let ws = Workspace::new(s.root());
    let out = grep(
        &grep_args("hidden|alpha", None, None),
        &ws,
        &SearchOptions::default(),
    )
    .unwrap();
    assert!(!out.text.contains("generated/"), "{}", out.text);
    assert!(!out.text.contains(".hidden.ts"), "{}", out.text);
    assert!(!out.text.contains("blob.bin"), "{}", out.text);
    assert!(!out.text.contains(".git/"), "{}", out.text);
}

#[test]
fn grep_errors_follow_the_reference_classification() {
    let s = tree();
    let ws = Workspace::new(s.root());
    let err = grep(
        &grep_args("(unclosed", None, None),
        &ws,
        &SearchOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::SearchInvalidPattern);
    assert!(
        err.message()
            .starts_with("grep pattern rejected by ripgrep: rg: regex parse error:"),
        "{}",
        err.message()
    );
    let err = grep(
        &grep_args("x", Some("no-such-dir"), None),
        &ws,
        &SearchOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::SearchFailed);
    let bad_includes = [
        (
            "!*.ts",
            "include must be a positive glob filter; negated patterns (\"!…\") are not supported",
        ),
        (
            "*.ts,*.js",
            "include must be one glob, not a comma-separated list (use {a,b} alternation instead)",
        ),
        (" ", "include must be a non-empty glob when given"),
    ];
    for (include, message) in bad_includes {
        let err = grep(
            &grep_args("x", None, Some(include)),
            &ws,
            &SearchOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            (ErrorCode::Unclassified, message)
        );
    }
    grep(
        &grep_args("alpha", None, Some("*.{ts,md}")),
        &ws,
        &SearchOptions::default(),
    )
    .unwrap();
    let err = grep(&grep_args("", None, None), &ws, &SearchOptions::default()).unwrap_err();
    assert_eq!(err.message(), "pattern must be a non-empty string");
}

#[test]
fn grep_caps_matches_and_previews_long_lines() {
    let s = Scratch::new("grep-cap");
    s.write("many.txt", "hit\n".repeat(300));
    s.write("wide.txt", format!("hit {}\n", "é".repeat(1500)));
    let ws = Workspace::new(s.root());
    let options = SearchOptions::default();
    let out = grep(&grep_args("hit", Some("many.txt"), None), &ws, &options).unwrap();
    assert!(
        out.text
            .starts_with("Found 250 of 300 matches\n\nmany.txt\nLine 1: hit\n")
    );
    assert!(out.text.ends_with(
        "Line 250: hit\n\n(The complete result could not be saved; narrow pattern, path, or include to see more.)"
    ));
    assert_eq!(out.meta["truncated"], json!(true));
    assert_eq!(out.meta["total"], json!(300));
    let spill = SpillRef {
        locator: "/s/grep-results.txt".into(),
        retrieval_hint: "Use read.".into(),
    };
    assert!(
        render_grep(&out.matches, &options, Some(&spill))
            .ends_with("(Full grep result stored at: /s/grep-results.txt. Use read.)")
    );
    assert!(grep_spill_text(&out.matches, &options).starts_with("Found 300 matches\n\nmany.txt\n"));
    let out = grep(&grep_args("hit", Some("wide.txt"), None), &ws, &options).unwrap();
    // 4 bytes of "hit " then 998 two-byte characters fit in 2000 bytes.
    assert_eq!(
        out.text,
        format!(
            "Found 1 match\n\nwide.txt\nLine 1: hit {} (line truncated)",
            "é".repeat(998)
        )
    );
}

#[test]
fn cancellation_stops_a_search() {
    let s = tree();
    let options = SearchOptions {
        cancel: Some(Arc::new(AtomicBool::new(true))),
        ..SearchOptions::default()
    };
    let err = grep(
        &grep_args("alpha", None, None),
        &Workspace::new(s.root()),
        &options,
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::SearchAborted);
    assert_eq!(
        err.message(),
        "grep was aborted before completion (tool timeout or caller cancellation)"
    );
}
