//! `cargo xtask bench [runtime]`: builds in release, runs our `dsh-bench` and the Cordis peer
//! script (`../shared/peers/cordis-bench`) three times each, one after the other (never at once:
//! two cores), and writes BENCHMARKS.md with our median, the peer's median and the ratio.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::process::cargo;

const RUNS: usize = 3;

/// One figure: our name, the peer's name (if it measures the same thing), the unit and what it is.
struct Figure {
    section: &'static str,
    ours: &'static str,
    peer: Option<&'static str>,
    what: &'static str,
}

const RUNTIME: &str = "Runtime (issue 2)";
const TOOLS: &str =
    "Agent core (issue 4; ours only: the reference needs Node 22, which cannot run here)";
const SESSION: &str = "Session log and store (issue 3; ours only: the reference needs Node 22, which cannot run here)";

const FIGURES: &[Figure] = &[
    Figure {
        section: RUNTIME,
        ours: "emit_1_listeners",
        peer: Some("emit_1_listeners"),
        what: "emit to 1 listener in a plugin library (ns/emit)",
    },
    Figure {
        section: RUNTIME,
        ours: "emit_10_listeners",
        peer: Some("emit_10_listeners"),
        what: "emit to 10 listeners (ns/emit)",
    },
    Figure {
        section: RUNTIME,
        ours: "emit_100_listeners",
        peer: Some("emit_100_listeners"),
        what: "emit to 100 listeners (ns/emit)",
    },
    Figure {
        section: RUNTIME,
        ours: "bail_10_sync_listeners",
        peer: Some("bail_10_sync_listeners"),
        what: "bail over 10 sync listeners (ns/call)",
    },
    Figure {
        section: RUNTIME,
        ours: "serial_10_async_listeners",
        peer: Some("serial_10_async_listeners"),
        what: "serial over 10 async listeners (ns/call)",
    },
    Figure {
        section: RUNTIME,
        ours: "parallel_10_async_listeners",
        peer: Some("parallel_10_async_listeners"),
        what: "parallel over 10 async listeners (ns/call)",
    },
    Figure {
        section: RUNTIME,
        ours: "waterfall_10_async_listeners",
        peer: Some("next_chain_10_async_listeners"),
        what: "waterfall of 10 listeners (peer: a `next` chain over `ctx.on`, Cordis has no waterfall) (ns/call)",
    },
    Figure {
        section: RUNTIME,
        ours: "mount_100_plugins",
        peer: Some("mount_100_plugins"),
        what: "mount 100 plugin rows until all consumers applied (ours: 50 isolate groups of provider + consumer, two libraries) (ms)",
    },
    Figure {
        section: RUNTIME,
        ours: "dispose_100_plugins",
        peer: Some("dispose_100_plugins"),
        what: "dispose those 100 rows (ms)",
    },
    Figure {
        section: RUNTIME,
        ours: "reactive_reload_replace_provider",
        peer: Some("reactive_reload_replace_provider"),
        what: "provider replaced until the consumer re-applied (µs)",
    },
    Figure {
        section: RUNTIME,
        ours: "startup_spawn_to_100_active_wall",
        peer: Some("startup_spawn_to_100_active_wall"),
        what: "process start to 100 rows active (ms; target under 60 ms)",
    },
    Figure {
        section: RUNTIME,
        ours: "startup_rss_100_active",
        peer: Some("startup_rss_100_active"),
        what: "peak RSS with 100 rows active (MiB; target under 25 MiB)",
    },
    Figure {
        section: RUNTIME,
        ours: "hot_reload_file_to_active",
        peer: None,
        what: "library replaced until the new version is active, debounce included (ms)",
    },
    Figure {
        section: RUNTIME,
        ours: "hot_reload_after_debounce",
        peer: None,
        what: "the same after the 150 ms debounce (ms; target under 150 ms)",
    },
    Figure {
        section: RUNTIME,
        ours: "hot_reload_rss_growth_per_reload",
        peer: None,
        what: "RSS growth per library reload (MiB; old copies are never unloaded)",
    },
    Figure {
        section: SESSION,
        ours: "session_log_append_in_memory",
        peer: None,
        what: "appends to the in-memory log, rules checked (events/s)",
    },
    Figure {
        section: SESSION,
        ours: "session_store_append_batched_zstd",
        peer: None,
        what: "appends through the store, batches of 1,000, zstd (events/s; target at least 200,000)",
    },
    Figure {
        section: SESSION,
        ours: "session_store_append_batched_raw",
        peer: None,
        what: "the same, raw JSONL (events/s)",
    },
    Figure {
        section: SESSION,
        ours: "session_store_fsync_per_batch",
        peer: None,
        what: "one single-event batch, i.e. the cost of its fsync (ms)",
    },
    Figure {
        section: SESSION,
        ours: "session_load_100k_zstd",
        peer: None,
        what: "load a 100,000-event session and derive its history, zstd (ms; target under 300)",
    },
    Figure {
        section: SESSION,
        ours: "session_load_100k_raw",
        peer: None,
        what: "the same, raw JSONL (ms)",
    },
    Figure {
        section: SESSION,
        ours: "session_derive_after_step_10",
        peer: None,
        what: "derive_messages after one more step, at step 10 (µs)",
    },
    Figure {
        section: SESSION,
        ours: "session_derive_after_step_10000",
        peer: None,
        what: "the same at step 10,000 (µs; should stay near the step-10 figure)",
    },
    Figure {
        section: SESSION,
        ours: "session_fixture_bytes",
        peer: None,
        what: "bytes of the recorded fixture logs",
    },
    Figure {
        section: SESSION,
        ours: "session_our_packed_bytes",
        peer: None,
        what: "our packed raw encoding of the same events (bytes)",
    },
    Figure {
        section: TOOLS,
        ours: "tool_pipeline_noop_unlogged",
        peer: None,
        what: "one no-op call through the whole pipeline (pre-execute, guards, execute, post-execute waterfalls, finalize, tools/result), outside a session (µs)",
    },
    Figure {
        section: TOOLS,
        ours: "tool_pipeline_noop_logged",
        peer: None,
        what: "the same inside an in-memory session, with tool/call and tool/result appended (µs)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_step_overhead_at_step_10",
        peer: None,
        what: "harness overhead per step of a real headless turn against an instant model with a no-op tool, session on tmpfs, durability checkpoints left out, around step 10 (µs; target under 200)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_step_overhead_at_step_10000",
        peer: None,
        what: "the same around step 10,000 (µs; target: flat, under 1.5x the step-10 figure; the history crosses the llm seam by reference)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_step_with_checkpoints_at_step_10",
        peer: None,
        what: "the same step as shipped, with the `session-checkpoints` row (three flushes per step: pre-step, request, tool body), around step 10 (µs)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_step_with_checkpoints_at_step_10000",
        peer: None,
        what: "the same around step 10,000 (µs)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_step_checkpoints_cost",
        peer: None,
        what: "so the three durability checkpoints cost, per step (µs; each is a hop to the blocking pool and back, a write and an fsync, which tmpfs makes nearly free: on a disk the fsync adds the figure of the store section)",
    },
    Figure {
        section: TOOLS,
        ours: "deepseek_request_serialize_at_step_10",
        peer: None,
        what: "request serialization, kept out of the overhead above: the DeepSeek wire body of a step-10 request built from its messages (µs)",
    },
    Figure {
        section: TOOLS,
        ours: "deepseek_request_serialize_at_step_10000",
        peer: None,
        what: "the same at step 10,000 (µs; linear in the history)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_100_sessions_steps_per_s",
        peer: None,
        what: "100 sessions of 20 steps each, all at once in one host, instant model, with checkpoints (steps/s)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_100_sessions_peak_rss",
        peer: None,
        what: "peak RSS of that host (MiB)",
    },
    Figure {
        section: TOOLS,
        ours: "visible_check_request_hash_step_10",
        peer: None,
        what: "model-visible check of a request that carries its history inline: hashing it at step 10 (µs; the loop sends the history by reference, checked in constant time)",
    },
    Figure {
        section: TOOLS,
        ours: "visible_check_request_hash_step_10000",
        peer: None,
        what: "the same at step 10,000 (µs; linear in the history)",
    },
];

pub(crate) fn run(root: &Path, args: Vec<String>) -> Result<()> {
    if let Some(group) = args.first().filter(|group| group.as_str() != "runtime") {
        bail!("unknown benchmark group `{group}` (known: runtime)");
    }
    crate::timed("build release", || {
        cargo(
            root,
            &["build", "--release", "--workspace", "--bins", "--lib"],
        )?;
        cargo(
            root,
            &[
                "build",
                "--release",
                "-p",
                "llm-deepseek",
                "--example",
                "serialize_bench",
            ],
        )
    })?;
    let ours = crate::timed("run dsh-bench", || median_of_runs(RUNS, || run_ours(root)))?;
    let peer = crate::timed("run the Cordis peer", || peer_figures(root));
    let peer = match peer {
        Ok(figures) => Some(figures),
        Err(error) => {
            eprintln!("xtask: the Cordis peer could not run: {error:#}");
            None
        }
    };
    let text = render(&ours, peer.as_ref());
    std::fs::write(root.join("BENCHMARKS.md"), &text)?;
    println!("{text}");
    Ok(())
}

type Figures = BTreeMap<String, f64>;

fn parse_lines(text: &str) -> Figures {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?;
            let value = words.next()?.parse::<f64>().ok()?;
            Some((name.to_owned(), value))
        })
        .collect()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    }
}

fn median_of_runs(runs: usize, mut once: impl FnMut() -> Result<Figures>) -> Result<Figures> {
    let samples: Vec<Figures> = (0..runs).map(|_| once()).collect::<Result<_>>()?;
    let mut out = Figures::new();
    for name in samples[0].keys() {
        let values: Vec<f64> = samples
            .iter()
            .filter_map(|run| run.get(name).copied())
            .collect();
        out.insert(name.clone(), median(values));
    }
    Ok(out)
}

fn run_ours(root: &Path) -> Result<Figures> {
    let output = Command::new(root.join("target/release/dsh-bench"))
        .env("DSH_FIXTURES", root.join("../shared/fixtures/dsh"))
        .output()
        .context("cannot run target/release/dsh-bench")?;
    if !output.status.success() {
        bail!(
            "dsh-bench failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let mut figures = parse_lines(&String::from_utf8_lossy(&output.stdout));
    let serialize = Command::new(root.join("target/release/examples/serialize_bench"))
        .output()
        .context("cannot run target/release/examples/serialize_bench")?;
    if !serialize.status.success() {
        bail!(
            "serialize_bench failed: {}",
            String::from_utf8_lossy(&serialize.stderr)
        );
    }
    figures.extend(parse_lines(&String::from_utf8_lossy(&serialize.stdout)));
    Ok(figures)
}

fn peer_figures(root: &Path) -> Result<Figures> {
    let source = root.join("../shared/peers/cordis-bench");
    let dir = root.join("target/cordis-bench");
    std::fs::create_dir_all(&dir)?;
    for file in ["package.json", "bench.mjs"] {
        std::fs::copy(source.join(file), dir.join(file))
            .with_context(|| format!("copy {file} from {}", source.display()))?;
    }
    if !dir.join("node_modules/cordis").exists() {
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent"])
            .current_dir(&dir)
            .status()
            .context("cannot run npm (Node.js is needed for the peer)")?;
        if !status.success() {
            bail!("npm install of the Cordis peer failed");
        }
    }
    median_of_runs(RUNS, || {
        let output = Command::new("node")
            .arg("bench.mjs")
            .current_dir(&dir)
            .output()
            .context("cannot run node")?;
        if !output.status.success() {
            bail!(
                "the peer script failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(parse_lines(&String::from_utf8_lossy(&output.stdout)))
    })
}

/// The figures the issue wants at least 100 times faster than Cordis.
const HUNDREDFOLD: &[&str] = &[
    "emit_1_listeners",
    "emit_10_listeners",
    "emit_100_listeners",
    "serial_10_async_listeners",
    "parallel_10_async_listeners",
    "waterfall_10_async_listeners",
    "mount_100_plugins",
    "dispose_100_plugins",
    "reactive_reload_replace_provider",
];

/// ns figures of the peer are in its units already; the ratio is peer / ours (higher: we are faster).
fn render(ours: &Figures, peer: Option<&Figures>) -> String {
    let mut text = String::from(
        "# Benchmarks\n\nWritten by `cargo xtask bench`: medians of 3 runs each of our `dsh-bench` (release build) and of the Cordis 3.18 peer script (`../shared/peers/cordis-bench`, Node), run one after the other in the same invocation on this machine (2 cores, shared and noisy: compare ratios, not absolute times).\n",
    );
    let mut section = "";
    let mut missed = Vec::new();
    for figure in FIGURES {
        let Some(value) = ours.get(figure.ours) else {
            continue;
        };
        if figure.section != section {
            section = figure.section;
            let _ = write!(
                text,
                "\n## {section}\n\n| figure | ours | Cordis | ratio (Cordis / ours) |\n|---|---:|---:|---:|\n"
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
        let _ = writeln!(
            text,
            "| {} | {value:.3} | {peer_text} | {ratio} |",
            figure.what
        );
    }
    text.push_str(
        "\nTargets from the issue: emit, waterfall, serial, parallel, mount/dispose and reactive reload at least 100x faster than Cordis; start to 100 rows active under 60 ms and under 25 MiB; reload under 150 ms after the debounce.\n",
    );
    if peer.is_some() {
        let _ = writeln!(
            text,
            "\nBelow the 100x target in this run: {}.",
            if missed.is_empty() {
                "none".to_owned()
            } else {
                missed.join(", ")
            }
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

    fn figures(pairs: &[(&str, f64)]) -> Figures {
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), *value))
            .collect()
    }

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
        let text = render(&ours, Some(&peer));
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
        );
        assert!(
            met.contains("Below the 100x target in this run: none."),
            "{met}"
        );
        let alone = render(&ours, None);
        assert!(!alone.contains("Below the 100x target"), "{alone}");
    }
}
