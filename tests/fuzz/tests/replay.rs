//! The regression corpus and a short deterministic run of every target, as a normal test: each
//! saved crasher and hang under `corpus/` must now read without a panic, and every target's
//! seeds plus a few hundred mutations of them (a fixed seed, no time bound) must too.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly on purpose"
)]

use std::time::Duration;

use dsh_fuzz::{Settings, TARGETS, corpus, engine};

#[test]
fn every_saved_crasher_now_reads_without_a_panic() {
    let dir = corpus::default_dir();
    let mut panics = Vec::new();
    for target in TARGETS {
        for (path, message) in engine::replay(target, &dir).unwrap() {
            panics.push(format!("{} ({}): {message}", path.display(), target.name));
        }
    }
    assert!(
        panics.is_empty(),
        "crashers that still panic:\n{}",
        panics.join("\n")
    );
}

#[test]
fn every_target_reads_its_seeds_and_their_mutations_without_a_panic() {
    for target in TARGETS {
        let settings = Settings {
            duration: Duration::from_secs(600),
            max_cases: Some(300),
            hang_after: Duration::from_secs(30),
            seed: 26,
            corpus: None,
        };
        let report = dsh_fuzz::run(target, &settings).unwrap();
        assert!(
            report.cases >= 300,
            "{}: {} cases",
            target.name,
            report.cases
        );
        assert!(
            report.crashers.is_empty(),
            "{} panicked: {:?}",
            target.name,
            report.crashers
        );
    }
}

/// The engine itself finds what it is for: a target that panics on one byte is caught, its
/// message kept, and the run goes on.
#[test]
fn a_panic_in_a_target_is_caught_and_reported() {
    fn seeds() -> Vec<Vec<u8>> {
        vec![b"ab".to_vec()]
    }
    fn run(input: &[u8]) {
        assert!(!input.contains(&b'\n'), "a newline");
    }
    let target = dsh_fuzz::Target {
        name: "newline",
        about: "panics on a newline",
        seeds,
        dict: &[b"\n"],
        run,
    };
    let settings = Settings {
        duration: Duration::from_secs(600),
        max_cases: Some(2000),
        hang_after: Duration::from_secs(30),
        seed: 7,
        corpus: None,
    };
    let report = dsh_fuzz::run(&target, &settings).unwrap();
    assert_eq!(report.cases, 2000);
    assert_eq!(report.crashers.len(), 1, "{:?}", report.crashers);
    assert!(
        report.crashers[0].0.contains("a newline"),
        "{:?}",
        report.crashers
    );
}
