//! The table of `dsh-bench` figures in BENCHMARKS.md: each of ours beside the baseline's, the
//! change, how the interleaved pairs read it (`pairs.rs`) and the Cordis peer's figure with the
//! ratio; under the tables, the figures below their hundredfold target and those worse in
//! every pair.

use std::fmt::Write as _;

use super::figures::{FIGURES, HUNDREDFOLD};
use super::{BASELINE, Baseline, Figures, RUNS, pairs};

/// `now` against `before` in percent, signed.
fn change(before: f64, now: f64) -> String {
    if before == 0.0 {
        return "-".to_owned();
    }
    format!("{:+.1}%", pairs::percent_change(before, now))
}

/// Names for a line under the tables: joined, or `none`.
fn listed(names: &[impl AsRef<str>]) -> String {
    if names.is_empty() {
        return "none".to_owned();
    }
    let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    names.join(", ")
}

/// ns figures of the peer are in its units already; the ratio is peer / ours (higher: we are faster).
pub(super) fn render(ours: &Figures, peer: Option<&Figures>, baseline: &Baseline) -> String {
    let mut text = format!(
        "# Benchmarks\n\nWritten by `cargo xtask bench`: medians of {RUNS} runs each of our `dsh-bench` (release build) and of the Cordis 3.18 peer script (`../shared/peers/cordis-bench`, Node), run one after the other in the same invocation on this machine (2 cores, shared and noisy: compare ratios, not absolute times).\n",
    );
    let measured = match &baseline.measured {
        Some(measured) => format!(" ({measured})"),
        None => String::new(),
    };
    let source = match baseline.in_run {
        true => format!("the baseline{measured}"),
        false => format!("the committed baseline `{BASELINE}`{measured}"),
    };
    let _ = write!(
        text,
        "\n`before` is our figure from {source}, `now` is ours from this run, and `change` is now against before in percent (for times and sizes lower is better, for rates such as events/s and steps/s higher is). Both are medians on this noisy machine, so a change of a few percent is noise, and a median can move by a quarter between whole runs of one commit. `pairs worse` reads the runs pair by pair instead (each of ours beside the baseline's run next to it, in the same minutes): in how many pairs the figure was worse by more than {}%, of how many, and the range of the pairs' changes. A change every pair shows is the code's; one whose pairs disagree is the machine's. A figure the baseline lacks shows - for before and change. The baseline is the commit named in the first line of `{BASELINE}`; `cargo xtask bench` builds and runs it beside ours and rewrites that file with what it measured (the file stands in only where the commit cannot be built). To move the baseline, name another commit there.\n",
        pairs::WORSE_BEYOND_PERCENT,
    );
    let mut section = "";
    let mut missed = Vec::new();
    let mut worse = Vec::new();
    for figure in FIGURES {
        let Some(value) = ours.get(figure.ours) else {
            continue;
        };
        if figure.section != section {
            section = figure.section;
            let _ = write!(
                text,
                "\n## {section}\n\n| figure | before | now | change | pairs worse | Cordis | ratio (Cordis / now) |\n|---|---:|---:|---:|---:|---:|---:|\n"
            );
        }
        let peer_value = figure
            .peer
            .and_then(|name| peer.and_then(|peer| peer.get(name)));
        let (peer_text, ratio) = match peer_value {
            Some(peer_value) => {
                let ratio = peer_value / value;
                if HUNDREDFOLD.contains(&figure.ours) && ratio < 100.0 {
                    missed.push(format!("{} ({ratio:.1}x)", figure.ours));
                }
                (format!("{peer_value:.3}"), format!("{ratio:.1}x"))
            }
            None if figure.peer.is_none() => ("(ours only: no peer)".to_owned(), "-".to_owned()),
            None => ("(peer did not run)".to_owned(), "-".to_owned()),
        };
        let (before, change) = match baseline.figures.get(figure.ours) {
            Some(before) => (format!("{before:.3}"), change(*before, *value)),
            None => ("-".to_owned(), "-".to_owned()),
        };
        let higher_is_better = figure.higher_is_better();
        if baseline
            .pairs
            .worse_in_every_pair(figure.ours, higher_is_better)
        {
            worse.push(figure.ours);
        }
        let pairs = baseline.pairs.cell(figure.ours, higher_is_better);
        let _ = writeln!(
            text,
            "| {} | {before} | {value:.3} | {change} | {pairs} | {peer_text} | {ratio} |",
            figure.what
        );
    }
    if baseline.in_run {
        let _ = writeln!(
            text,
            "\nWorse than the baseline by more than {}% in every interleaved pair of runs: {}.",
            pairs::WORSE_BEYOND_PERCENT,
            listed(&worse)
        );
    }
    text.push_str(
        "\nTargets from the issue: emit, waterfall, serial, parallel, mount/dispose and reactive reload at least 100x faster than Cordis; start to 100 rows active under 60 ms and under 25 MiB; reload under 150 ms after the debounce.\n",
    );
    if peer.is_some() {
        let _ = writeln!(
            text,
            "\nBelow the 100x target in this run: {}.",
            listed(&missed)
        );
    }
    text.push_str(
        "\nHow ours is measured: dispatches go from the host's channel to listeners living in `libbench_plugin.so`, so every listener call crosses the library boundary (a waterfall level crosses it to start the listener, to ask for its `next`, to poll and to drop its future, and to release its reference); mount/dispose use 50 isolate groups, each a provider (`libbench_plugin.so`) and a consumer (`libbench_consumer.so`); startup spawns `dsh-host --config` on 100 rows and waits for every consumer to print; reload replaces `libbench_consumer.so` in a `--plugin-dir` 20 times and waits for the new version's line; RSS figures come from `/proc/<pid>/status` (VmHWM, VmRSS).\n",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{figures, medians};

    #[test]
    fn the_figures_below_their_hundredfold_target_are_named() {
        let ours = figures(&[
            ("serial_10_async_listeners", 400.0),
            ("waterfall_10_async_listeners", 700.0),
        ]);
        let peer = figures(&[
            ("serial_10_async_listeners", 48_000.0),
            ("next_chain_10_async_listeners", 49_000.0),
        ]);
        let text = render(&ours, Some(&peer), &Baseline::default());
        assert!(text.contains("| 120.0x |"), "{text}");
        assert!(
            text.contains(
                "Below the 100x target in this run: waterfall_10_async_listeners (70.0x)."
            ),
            "{text}"
        );
        let met = render(
            &figures(&[("serial_10_async_listeners", 400.0)]),
            Some(&peer),
            &Baseline::default(),
        );
        assert!(
            met.contains("Below the 100x target in this run: none."),
            "{met}"
        );
        let alone = render(&ours, None, &Baseline::default());
        assert!(!alone.contains("Below the 100x target"), "{alone}");
    }

    #[test]
    fn every_figure_shows_its_baseline_beside_this_run() {
        let baseline = Baseline::parse(
            "# measured at commit abc1234 on 2026-01-02\n# name<TAB>value\nemit_1_listeners\t20.0\nmount_100_plugins\t0.5\nsession_fixture_bytes\t0\n",
        );
        assert_eq!(
            baseline.measured.as_deref(),
            Some("measured at commit abc1234 on 2026-01-02")
        );
        let ours = figures(&[
            ("emit_1_listeners", 25.0),
            ("mount_100_plugins", 0.4),
            ("emit_10_listeners", 30.0),
            ("session_fixture_bytes", 10.0),
        ]);
        let peer = figures(&[
            ("emit_1_listeners", 20_000.0),
            ("emit_10_listeners", 45_000.0),
        ]);
        let text = render(&ours, Some(&peer), &baseline);
        assert!(
            text.contains(
                "| before | now | change | pairs worse | Cordis | ratio (Cordis / now) |"
            ),
            "{text}"
        );
        assert!(
            text.contains("`xtask/bench-baseline.tsv` (measured at commit abc1234 on 2026-01-02)"),
            "{text}"
        );
        assert!(
            text.contains(
                "| emit to 1 listener in a plugin library (ns/emit) | 20.000 | 25.000 | +25.0% | - | 20000.000 | 800.0x |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| 0.500 | 0.400 | -20.0% | - | (peer did not run) | - |"),
            "{text}"
        );
        assert!(
            text.contains(
                "| emit to 10 listeners (ns/emit) | - | 30.000 | - | - | 45000.000 | 1500.0x |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| bytes of the recorded fixture logs | 0.000 | 10.000 | - | - | (ours only: no peer) | - |"),
            "{text}"
        );
        assert!(!text.contains("appends to the in-memory log"), "{text}");
    }

    #[test]
    fn a_figure_worse_in_every_pair_is_named_under_the_tables() {
        let runs = |emit: f64, appends: f64| {
            figures(&[
                ("emit_1_listeners", emit),
                ("session_log_append_in_memory", appends),
            ])
        };
        let ours = [runs(30.0, 90.0), runs(26.0, 130.0)];
        let theirs = [runs(20.0, 100.0), runs(24.0, 100.0)];
        let baseline = Baseline {
            measured: Some("commit abc1234".to_owned()),
            figures: medians(theirs.to_vec()),
            in_run: true,
            pairs: pairs::Pairs::of(&ours, &theirs),
        };
        let text = render(&medians(ours.to_vec()), None, &baseline);
        assert!(
            text.contains("| 22.000 | 28.000 | +27.3% | 2 of 2; +8..+50% |"),
            "{text}"
        );
        // A rate that rose in one pair and fell in the other is not called worse.
        assert!(text.contains("| 1 of 2; -10..+30% |"), "{text}");
        assert!(
            text.contains(
                "Worse than the baseline by more than 5% in every interleaved pair of runs: emit_1_listeners."
            ),
            "{text}"
        );
    }
}
