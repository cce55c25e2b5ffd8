//! The `write`/`edit` hunk diffs against jsdiff 9 (the reference's `diff` dependency).
//!
//! `data/jsdiff-hunks.json` was produced by running jsdiff 9.0.0's `structuredPatch` with three
//! context lines over 440 generated before/after pairs and projecting every hunk the way the
//! reference's `computeHunkDiffs` does; these tests require identical hunks for every pair.

use dsh_tool_fs_core::{FileDiff, compute_hunk_diffs};
use serde::Deserialize;

#[derive(Deserialize)]
struct Case {
    before: String,
    after: String,
    diffs: Vec<Expected>,
}

#[derive(Deserialize)]
struct Expected {
    #[serde(rename = "oldText")]
    old_text: Option<String>,
    #[serde(rename = "newText")]
    new_text: String,
}

#[test]
fn hunks_match_jsdiff_on_the_generated_corpus() {
    let corpus = include_str!("data/jsdiff-hunks.json");
    let cases: Vec<Case> = serde_json::from_str(corpus).unwrap();
    assert_eq!(cases.len(), 440);
    for (index, case) in cases.iter().enumerate() {
        let got = compute_hunk_diffs("f", &case.before, &case.after);
        let texts: Vec<(Option<String>, String)> = got
            .iter()
            .map(|d| (d.old_text.clone(), d.new_text.clone()))
            .collect();
        let expected: Vec<(Option<String>, String)> = case
            .diffs
            .iter()
            .map(|d| (d.old_text.clone(), d.new_text.clone()))
            .collect();
        assert_eq!(
            texts, expected,
            "case {index}: {:?} -> {:?}",
            case.before, case.after
        );
        // Each hunk's sides are where its starts say, in the file before and after.
        for diff in &got {
            assert!(
                at_line(
                    &case.before,
                    diff.old_start,
                    diff.old_text.as_deref().unwrap_or("")
                ),
                "case {index}: old side of {diff:?}"
            );
            assert!(
                at_line(&case.after, diff.new_start, &diff.new_text),
                "case {index}: new side of {diff:?}"
            );
        }
    }
}

/// Whether `text`'s lines from `start` (1-based) begin with `lines`.
fn at_line(text: &str, start: usize, lines: &str) -> bool {
    if lines.is_empty() {
        return true;
    }
    let tail: Vec<&str> = text.split('\n').skip(start - 1).collect();
    tail.join("\n").starts_with(lines)
}

#[test]
fn pure_insertions_have_no_old_text_and_equal_texts_no_hunks() {
    assert_eq!(compute_hunk_diffs("p", "same\n", "same\n"), vec![]);
    assert_eq!(
        compute_hunk_diffs("p", "", "new\n"),
        vec![FileDiff {
            path: "p".into(),
            old_text: None,
            new_text: "new".into(),
            old_start: 1,
            new_start: 1,
        }]
    );
}

#[test]
fn distant_changes_are_separate_hunks() {
    let before: String = (1..=20).map(|i| format!("{i}\n")).collect();
    let after: String = (1..=20)
        .map(|i| match i {
            2 => "two\n".to_owned(),
            19 => "nineteen\n".to_owned(),
            _ => format!("{i}\n"),
        })
        .collect();
    let diffs = compute_hunk_diffs("p", &before, &after);
    assert_eq!(diffs.len(), 2);
    assert_eq!(diffs[0].old_text.as_deref(), Some("1\n2\n3\n4\n5"));
    assert_eq!(diffs[1].new_text, "16\n17\n18\nnineteen\n20");
    assert_eq!(
        (diffs[0].old_start, diffs[1].old_start, diffs[1].new_start),
        (1, 16, 16)
    );
}

#[test]
fn many_scattered_changes_do_not_overflow_the_stack() {
    // Every other line changes: thousands of components in one chain.
    let before: String = (0..6_000).map(|i| format!("l{i}\n")).collect();
    let after: String = (0..6_000)
        .map(|i| {
            if i % 2 == 0 {
                format!("l{i}\n")
            } else {
                format!("x{i}\n")
            }
        })
        .collect();
    let diffs = compute_hunk_diffs("p", &before, &after);
    assert_eq!(
        diffs.len(),
        1,
        "changes two lines apart merge into one hunk"
    );
}

#[test]
fn a_huge_rewrite_falls_back_to_one_whole_file_hunk() {
    let before: String = (0..20_000).map(|i| format!("a{i}\n")).collect();
    let after: String = (0..20_000).map(|i| format!("b{i}\n")).collect();
    let started = std::time::Instant::now();
    let diffs = compute_hunk_diffs("p", &before, &after);
    assert!(started.elapsed().as_secs() < 20);
    assert_eq!(diffs.len(), 1);
    assert_eq!(diffs[0].old_text.as_deref(), Some(before.trim_end()));
    assert_eq!(diffs[0].new_text, after.trim_end());
}
