//! `dsh-test-corpus`: what the tests of every crate share about running where something they
//! need is not: where the reference's recorded sessions are (the conformance corpus, kept beside
//! the checkout in `../shared/fixtures/dsh`, or wherever `DSH_FIXTURES` says), and a skip that
//! is both said (on stderr, with the test and the reason) and counted: `cargo xtask test` sets
//! `DSH_SKIPS` to a file each skip adds a line to, and reports those tests as skipped with their
//! reasons instead of as passed. A clone with nothing beside it passes its tests, and says which
//! did not run and why.
//!
//! No dependencies: library crates take it as a dev-dependency.

use std::io::Write;
use std::path::PathBuf;

/// Why a test that needs the recorded corpus did not run.
pub const CORPUS_ABSENT: &str = "the reference's recorded corpus is not beside the checkout (../shared/fixtures/dsh, or DSH_FIXTURES)";

/// The recorded corpus: `DSH_FIXTURES` when set (a path that is not a folder means none), else
/// `../shared/fixtures/dsh` beside the workspace; `None` when it is not there.
pub fn corpus() -> Option<PathBuf> {
    if let Some(chosen) = std::env::var_os("DSH_FIXTURES") {
        let chosen = PathBuf::from(chosen);
        return chosen.is_dir().then_some(chosen);
    }
    let beside = workspace_root().join("../shared/fixtures/dsh");
    beside.is_dir().then_some(beside)
}

/// The workspace's root folder (this crate lives at `tests/corpus`).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Says on stderr that `test` did not run and why, and counts it where `DSH_SKIPS` names a
/// file (one line per skip: the test, a tab, the reason).
pub fn skip(test: &str, reason: &str) {
    eprintln!("skipped: {test}: {reason}");
    let Some(file) = std::env::var_os("DSH_SKIPS") else {
        return;
    };
    let line = format!(
        "{}\t{}\n",
        test.replace(['\t', '\n'], " "),
        reason.replace('\n', " ")
    );
    // One short append per line: appends from the test threads and binaries do not interleave.
    if let Ok(mut out) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
    {
        let _ = out.write_all(line.as_bytes());
    }
}

/// The corpus, or a counted skip of the calling test and a `return` from it.
#[macro_export]
macro_rules! needs_corpus {
    ($test:expr) => {
        match $crate::corpus() {
            Some(corpus) => corpus,
            None => {
                $crate::skip($test, $crate::CORPUS_ABSENT);
                return;
            }
        }
    };
}
