//! The tests that did not run here, as they said (`dsh-test-corpus`'s `skip`: one line each,
//! the test, a tab and the reason, in the file `DSH_SKIPS` names): counted as skipped rather
//! than passed, and grouped by reason for the closing lines.

use std::collections::BTreeMap;
use std::path::Path;

/// The skips of one run, by reason, each with the tests it kept from running.
#[derive(Debug, Default)]
pub(crate) struct Skipped {
    by_reason: BTreeMap<String, Vec<String>>,
}

/// The skips `file` holds (none when it does not exist); a test named twice counts once.
pub(crate) fn read(file: &Path) -> Skipped {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    parse(&text)
}

fn parse(text: &str) -> Skipped {
    let mut skipped = Skipped::default();
    for line in text.lines() {
        let Some((test, reason)) = line.split_once('\t') else {
            continue;
        };
        let tests = skipped.by_reason.entry(reason.to_owned()).or_default();
        if !tests.iter().any(|known| known == test) {
            tests.push(test.to_owned());
        }
    }
    skipped
}

impl Skipped {
    pub(crate) fn count(&self) -> u64 {
        self.by_reason
            .values()
            .map(|tests| tests.len() as u64)
            .sum()
    }

    /// ` (reason; reason)` after the totals, or nothing when every test ran.
    pub(crate) fn reasons_in_brackets(&self) -> String {
        if self.by_reason.is_empty() {
            return String::new();
        }
        let reasons: Vec<&str> = self.by_reason.keys().map(String::as_str).collect();
        format!(" ({})", reasons.join("; "))
    }

    /// One line per reason, with the tests it kept from running.
    pub(crate) fn print(&self) {
        for (reason, tests) in &self.by_reason {
            println!(
                "xtask: {} skipped because {reason}: {}",
                tests.len(),
                tests.join(", ")
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_are_grouped_by_reason_and_counted_once_per_test() {
        let skipped = parse("a\tno corpus\nb\tno corpus\na\tno corpus\nc\tno bwrap\nbroken line\n");
        assert_eq!(skipped.count(), 3);
        assert_eq!(skipped.reasons_in_brackets(), " (no bwrap; no corpus)");
    }
}
