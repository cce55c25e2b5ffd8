//! What a test needs that a machine may lack, and the skip when it does: the reference's
//! recorded corpus (looked up and skipped through `dsh-test-corpus`) and a bubblewrap that
//! confines. A skip is said and counted (`skip`), never a silent pass.

use std::path::PathBuf;

pub use dsh_test_corpus::{CORPUS_ABSENT, corpus, needs_corpus, skip};

/// The recorded corpus, for a helper of tests that checked for it first (`needs_corpus!`).
pub fn corpus_dir() -> PathBuf {
    corpus().unwrap_or_else(|| panic!("{CORPUS_ABSENT}: check with needs_corpus! first"))
}

/// Whether bubblewrap confines commands on this machine (`cargo xtask test` installs it where
/// it can); the reason when it does not, for the tests that need its namespaces to skip with.
pub fn bubblewrap() -> Result<(), String> {
    let ran = std::process::Command::new("bwrap")
        .args([
            "--ro-bind",
            "/",
            "/",
            "--unshare-net",
            "--unshare-pid",
            "--",
            "true",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match ran {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("bubblewrap does not work here ({status})")),
        Err(error) => Err(format!("no bubblewrap (`bwrap`): {error}")),
    }
}

/// Skips the calling test, saying why, when bubblewrap cannot run here.
#[macro_export]
macro_rules! needs_bubblewrap {
    ($test:literal) => {
        if let Err(reason) = $crate::bubblewrap() {
            $crate::skip($test, &reason);
            return;
        }
    };
}
