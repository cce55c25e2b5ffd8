//! The fault catalogue: named faults, each injected into the real `dsh-host` (real plugin
//! libraries, the shipped profiles' YAML, the fake DeepSeek server on loopback) and observed
//! from outside: the host stays up or ends with a named error (never a crash or a hang), and no
//! event a client was shown is missing from the stored log, which `dsh-host session check`
//! finds sound. One test runs every row, independent rows in parallel threads, prints the table
//! (fault | expected | observed) and fails naming every row whose observation differs from
//! what was expected. A row that cannot be built on this machine is skipped with its reason,
//! counted apart, never passed.
//!
//! The rows by where the fault comes from: the model server (`model`), the tools and their
//! sandbox (`tools`), the disk, the home and the session store (`storage`), the PostgreSQL
//! store and its server (`postgres`), the YAML, the
//! libraries and the environment (`config`), and the clients of a running host (`clients`).

mod clients;
mod config;
mod kit;
mod model;
mod postgres;
mod storage;
mod tools;

use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// One named fault: how it is injected and checked is `run`, which answers what it saw or why
/// the row cannot be built here; a failed check panics with what differed.
pub(crate) struct Fault {
    pub(crate) name: &'static str,
    pub(crate) expected: &'static str,
    pub(crate) run: fn() -> Seen,
}

/// What a row observed.
pub(crate) enum Seen {
    /// The expected behaviour, in the row's own words (exit code, error name, log state).
    Held(String),
    /// The row cannot be built on this machine; the reason.
    Skipped(String),
    /// The row observed a known defect, named (what happens and why): reported and counted
    /// apart so the table says it, without failing the catalogue; the row's other checks
    /// still fail it, and once the defect is fixed the row holds.
    Known(String),
}

/// A row's outcome once run.
enum Outcome {
    Held(String),
    Differs(String),
    Skipped(String),
    Known(String),
}

/// Worker threads: most of a row's time is spent waiting on the host and its timeouts, so more
/// rows than cores run at once.
const WORKERS: usize = 6;

fn message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else {
        "panicked".to_owned()
    }
}

/// The first line of `text`, cut to `width` characters, for a table cell.
fn cell(text: &str, width: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut cut: String = line.chars().take(width).collect();
    if line.chars().count() > width {
        cut.push('…');
    }
    cut
}

#[test]
fn the_fault_catalogue() {
    let faults: Vec<Fault> = [
        model::faults(),
        tools::faults(),
        storage::faults(),
        postgres::faults(),
        config::faults(),
        clients::faults(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut names: Vec<&str> = faults.iter().map(|fault| fault.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), faults.len(), "two faults share a name");

    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<Option<(Outcome, Duration)>>> =
        Mutex::new((0..faults.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some(fault) = faults.get(index) else {
                        return;
                    };
                    let began = Instant::now();
                    let outcome = match std::panic::catch_unwind(AssertUnwindSafe(fault.run)) {
                        Ok(Seen::Held(seen)) => Outcome::Held(seen),
                        Ok(Seen::Skipped(reason)) => Outcome::Skipped(reason),
                        Ok(Seen::Known(defect)) => Outcome::Known(defect),
                        Err(panic) => Outcome::Differs(message(panic.as_ref())),
                    };
                    outcomes.lock().unwrap()[index] = Some((outcome, began.elapsed()));
                }
            });
        }
    });
    let outcomes = outcomes.into_inner().unwrap();

    let (mut held, mut skipped, mut known, mut differing) = (0, Vec::new(), Vec::new(), Vec::new());
    println!(
        "\n{:<48} | {:<52} | observed",
        "fault", "expected behaviour"
    );
    println!("{}", "-".repeat(160));
    for (fault, outcome) in faults.iter().zip(outcomes) {
        let (outcome, took) = outcome.expect("every row ran");
        let observed = match &outcome {
            Outcome::Held(seen) => {
                held += 1;
                format!("held: {seen}")
            }
            Outcome::Skipped(reason) => {
                skipped.push(format!("{}: {reason}", fault.name));
                format!("SKIPPED: {reason}")
            }
            Outcome::Known(defect) => {
                known.push(format!("{}: {defect}", fault.name));
                format!("KNOWN DEFECT: {defect}")
            }
            Outcome::Differs(what) => {
                differing.push(format!(
                    "{}: expected {}; saw {what}",
                    fault.name, fault.expected
                ));
                format!("DIFFERS: {}", cell(what, 200))
            }
        };
        println!(
            "{:<48} | {:<52} | {} ({:.1} s)",
            fault.name,
            cell(fault.expected, 52),
            observed,
            took.as_secs_f64()
        );
    }
    println!(
        "\n{} faults: {held} held, {} skipped, {} known defects, {} differ ({:.1} s)",
        faults.len(),
        skipped.len(),
        known.len(),
        differing.len(),
        started.elapsed().as_secs_f64()
    );
    for reason in &skipped {
        dsh_tests::skip("the fault catalogue", reason);
    }
    assert!(
        differing.is_empty(),
        "{} fault(s) differ from what was expected:\n{}",
        differing.len(),
        differing.join("\n\n")
    );
}
