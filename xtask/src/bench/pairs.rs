//! The interleaved runs read pair by pair: each run of ours beside the baseline's run next to
//! it (see `baseline.rs`), as that pair's change in percent.
//!
//! Why: on this shared machine a figure's median moves by a quarter between whole runs of one
//! and the same commit (request serialization read -39% in one bench run and +76% in the next),
//! so a median change alone cannot tell a loss from a slow stretch. The two runs of a pair see
//! the machine in nearly the same state; a change that every pair shows in the same direction
//! is the code's, one whose pairs disagree in sign is the machine's. Of five pairs, all five
//! read worse by chance one time in thirty-two for a figure the code did not move.

use std::collections::BTreeMap;

use super::Figures;

/// A figure is called worse when every pair reads it worse by more than this (percent).
pub(super) const WORSE_BEYOND_PERCENT: f64 = 5.0;

/// Each figure's change in every pair, `(ours - theirs) / theirs` in percent, signed as
/// measured (not yet by which direction is better).
#[derive(Debug, Default)]
pub(super) struct Pairs(BTreeMap<String, Vec<f64>>);

impl Pairs {
    /// The changes of the figures both runs of a pair have, pair by pair (`ours[i]` beside
    /// `theirs[i]`); a figure either side lacks in a pair, or whose baseline is 0, has no change
    /// from that pair.
    pub(super) fn of(ours: &[Figures], theirs: &[Figures]) -> Self {
        let mut changes: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for (now, before) in ours.iter().zip(theirs) {
            for (name, now) in now {
                let Some(before) = before.get(name).copied().filter(|before| *before != 0.0) else {
                    continue;
                };
                changes
                    .entry(name.clone())
                    .or_default()
                    .push(percent_change(before, *now));
            }
        }
        Self(changes)
    }

    /// How a figure's pairs read, for its table cell: how many were worse by more than
    /// [`WORSE_BEYOND_PERCENT`], of how many, and the range of their changes (`-` where no pair
    /// measured it).
    pub(super) fn cell(&self, name: &str, higher_is_better: bool) -> String {
        let Some(changes) = self.0.get(name).filter(|changes| !changes.is_empty()) else {
            return "-".to_owned();
        };
        let worse = changes
            .iter()
            .filter(|change| is_worse(**change, higher_is_better))
            .count();
        let low = changes.iter().copied().fold(f64::INFINITY, f64::min);
        let high = changes.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!("{worse} of {}; {low:+.0}..{high:+.0}%", changes.len())
    }

    /// Every pair (at least two) read the figure worse by more than [`WORSE_BEYOND_PERCENT`].
    pub(super) fn worse_in_every_pair(&self, name: &str, higher_is_better: bool) -> bool {
        self.0.get(name).is_some_and(|changes| {
            changes.len() >= 2
                && changes
                    .iter()
                    .all(|change| is_worse(*change, higher_is_better))
        })
    }
}

/// `now` against `before`, in percent of `before` (which is not 0).
pub(super) fn percent_change(before: f64, now: f64) -> f64 {
    (now - before) / before * 100.0
}

fn is_worse(change: f64, higher_is_better: bool) -> bool {
    match higher_is_better {
        true => change < -WORSE_BEYOND_PERCENT,
        false => change > WORSE_BEYOND_PERCENT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::figures as run;

    #[test]
    fn a_change_every_pair_shows_is_told_from_one_whose_pairs_disagree() {
        let ours = [
            run(&[("step_us", 110.0), ("serialize_us", 5.0), ("rate", 90.0)]),
            run(&[("step_us", 220.0), ("serialize_us", 9.0), ("rate", 180.0)]),
            run(&[("step_us", 112.0), ("serialize_us", 6.0), ("rate", 85.0)]),
        ];
        let theirs = [
            run(&[("step_us", 100.0), ("serialize_us", 6.0), ("rate", 100.0)]),
            run(&[("step_us", 200.0), ("serialize_us", 5.0), ("rate", 200.0)]),
            run(&[("step_us", 100.0), ("serialize_us", 6.0), ("rate", 100.0)]),
        ];
        let pairs = Pairs::of(&ours, &theirs);
        assert!(pairs.worse_in_every_pair("step_us", false));
        assert_eq!(pairs.cell("step_us", false), "3 of 3; +10..+12%");
        assert!(!pairs.worse_in_every_pair("serialize_us", false));
        assert_eq!(pairs.cell("serialize_us", false), "1 of 3; -17..+80%");
        // A rate is worse when it falls.
        assert!(pairs.worse_in_every_pair("rate", true));
        assert!(!pairs.worse_in_every_pair("rate", false));
        assert_eq!(pairs.cell("absent", false), "-");
    }

    #[test]
    fn one_pair_or_a_zero_baseline_calls_nothing_worse() {
        let pairs = Pairs::of(
            &[run(&[("a", 2.0), ("b", 1.0)])],
            &[run(&[("a", 1.0), ("b", 0.0)])],
        );
        assert!(!pairs.worse_in_every_pair("a", false));
        assert_eq!(pairs.cell("a", false), "1 of 1; +100..+100%");
        assert_eq!(pairs.cell("b", false), "-");
    }
}
