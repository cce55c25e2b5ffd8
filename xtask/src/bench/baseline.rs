//! The `before` column: the commit the committed baseline (`xtask/bench-baseline.tsv`) names,
//! built in a worktree of its own (`target/bench-baseline/<commit>`, kept between runs) and run
//! in this same invocation, its runs interleaved with ours.
//!
//! Why: figures measured at another time drift with this shared machine's state. The agent
//! step of one and the same commit was 267 µs in the figures committed one morning and 186 µs
//! when run again hours later, so a committed `before` can hide or invent a change of a
//! third. A `before` measured in the same minutes as the `now` is the only fair one. Where the
//! commit cannot be built (a clone without that history, a failed build) the committed
//! figures stand in, and the page says which it shows.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::pairs::Pairs;
use super::{
    BASELINE, Baseline, Figures, RUNS, build_release, median_of_runs, medians, run_dsh_bench,
    run_groups,
};

/// Our figures and the baseline's: the baseline's commit built and run here, its runs
/// interleaved with ours (ours, then it; then it, then ours; ...), so both see the machine in
/// the same state. Where it cannot be built or run, `committed` stands in.
pub(super) fn measure(
    root: &Path,
    fixtures: &Path,
    committed: Baseline,
) -> Result<(Figures, Baseline)> {
    let groups = side_groups(root)?;
    match interleaved(root, fixtures, &groups, &committed) {
        Ok(measured) => Ok(measured),
        Err(reason) => {
            eprintln!(
                "xtask: the baseline is not measured in this run ({reason:#}); the committed figures stand in"
            );
            let ours = crate::timed("run dsh-bench", || {
                median_of_runs(RUNS, || side_run(root, root, fixtures, &groups))
            })?;
            Ok((ours, committed))
        }
    }
}

/// [`measure`] when the commit `committed` names builds and runs; the file is rewritten with
/// what it measured.
fn interleaved(
    root: &Path,
    fixtures: &Path,
    groups: &[String],
    committed: &Baseline,
) -> Result<(Figures, Baseline)> {
    let commit = committed
        .measured
        .as_deref()
        .and_then(commit_named)
        .ok_or_else(|| anyhow::anyhow!("{BASELINE} names no commit"))?;
    let base_root = crate::timed(&format!("build the baseline commit {commit}"), || {
        build(root, &commit)
    })?;
    let (shared, ours_only) = split_by_baseline(groups, baseline_groups(&base_root));
    // Our harness first, in a phase of its own: its delegation makes files, which on this
    // machine take longer a minute after other files went, and what the side groups before it
    // deleted differed between the sides (see `split_by_baseline`).
    let (mut ours, mut theirs) = in_turn(
        root,
        &base_root,
        "run our harness against each side's host",
        |side| Ok(harness_runs(root, side, fixtures)),
    )?;
    let (ours_own, theirs_own) = in_turn(
        root,
        &base_root,
        "run dsh-bench, ours and the baseline's in turn",
        |side| run_dsh_bench(side, fixtures, &shared),
    )?;
    for (run, own) in ours.iter_mut().zip(ours_own) {
        run.extend(own);
    }
    for (run, own) in theirs.iter_mut().zip(theirs_own) {
        run.extend(own);
    }
    let pairs = Pairs::of(&ours, &theirs);
    if !ours_only.is_empty() {
        crate::timed("run the dsh-bench groups the baseline lacks", || {
            for figures in &mut ours {
                figures.extend(run_groups(root, fixtures, &ours_only)?);
            }
            Ok(())
        })?;
    }
    let figures = medians(theirs);
    std::fs::write(root.join(BASELINE), tsv(&commit, &today(), RUNS, &figures))?;
    let measured = Some(format!(
        "commit {commit}, built and run in this invocation, its {RUNS} runs interleaved with ours"
    ));
    Ok((
        medians(ours),
        Baseline {
            measured,
            figures,
            in_run: true,
            pairs,
        },
    ))
}

/// The `dsh-bench` groups that only start `dsh-host` processes and read what they print, which
/// our harness runs on their own, in a fresh process, against each side's host: a figure whose
/// measure changed since the baseline commit (its history bytes, a mean over a window where it
/// was one request's, a delegation measured after a warm-up run) is then measured alike on both
/// sides, and in the same conditions (inside a whole run, the steps right after the file-system
/// group's fsyncs ran slower on one side than the other), and the instructions per step,
/// a group the baseline's `dsh-bench` does not have. Each runs in a process of its own (in one
/// process after compaction, ten delegated children read 23% slower on our side in every pair;
/// by hand, alone, within 5% either way), and a side's own `dsh-bench` does not run them. They
/// run first, both sides in turn, before any side group.
const HARNESS_ON_BOTH: &[&str] = &["compaction", "subagents", "instructions"];

/// The groups a side's own `dsh-bench` runs: those of a whole run of ours but the ones of
/// [`HARNESS_ON_BOTH`].
fn side_groups(root: &Path) -> Result<Vec<String>> {
    Ok(super::dsh_bench_groups(root)?
        .into_iter()
        .filter(|group| !HARNESS_ON_BOTH.contains(&group.as_str()))
        .collect())
}

/// `groups` split into those the baseline's `dsh-bench` has too (all of them when `baseline`
/// is unknown), which run in the interleaved pairs, and the rest, which run after every pair.
///
/// Why apart: a group only one side runs changes what the shared groups after it meet. This
/// machine's ext4 has no journal, and there the kernel passes over inodes freed in the last
/// minute or more when it gives a new file one (`recently_deleted`). Our `undo` group, which
/// the baseline lacks, frees 5,462 files; a minute later ten delegated children read +41% on
/// our side in every pair. By hand: 16 ms after a quiet minute, 31 ms after 5,000 small files
/// were made and deleted, 16 ms after 4 s of busy CPU instead.
fn split_by_baseline(
    groups: &[String],
    baseline: Option<Vec<String>>,
) -> (Vec<String>, Vec<String>) {
    groups.iter().cloned().partition(|group| {
        baseline
            .as_ref()
            .is_none_or(|theirs| theirs.contains(group))
    })
}

/// The groups the baseline's `dsh-bench` has: what its `--groups` lists, or, for one older than
/// that flag, the groups its `main.rs` asks for by name (`wants("…")`); `None` when neither
/// says.
fn baseline_groups(base_root: &Path) -> Option<Vec<String>> {
    let listed = super::dsh_bench_groups(base_root).unwrap_or_default();
    if !listed.is_empty() {
        return Some(listed);
    }
    let main = std::fs::read_to_string(base_root.join("xtask/bench/dsh-bench/src/main.rs")).ok()?;
    let named = groups_wanted_in(&main);
    (!named.is_empty()).then_some(named)
}

/// The `wants("name")` arguments of an older `dsh-bench`'s `main.rs`, in order.
fn groups_wanted_in(main: &str) -> Vec<String> {
    main.split("wants(\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(name, _)| name.to_owned()))
        .collect()
}

/// [`RUNS`] runs of `run` on each side (`root`, ours, and `base_root`), interleaved: ours, then
/// the baseline's; then the baseline's, then ours; ... Returns ours and the baseline's, in
/// order.
fn in_turn(
    root: &Path,
    base_root: &Path,
    label: &str,
    mut run: impl FnMut(&Path) -> Result<Figures>,
) -> Result<(Vec<Figures>, Vec<Figures>)> {
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    crate::timed(label, || {
        for index in 0..RUNS {
            // Alternate who goes first, so neither always runs on the warmer machine.
            let baseline_first = index % 2 == 1;
            for is_baseline in [baseline_first, !baseline_first] {
                match is_baseline {
                    true => theirs.push(run(base_root)?),
                    false => ours.push(run(root)?),
                }
            }
        }
        Ok(())
    })?;
    Ok((ours, theirs))
}

/// One run of a side where no baseline is measured: `groups` (see [`side_groups`]) of `side`'s
/// `dsh-bench`, then our harness; every group in a process of its own.
fn side_run(root: &Path, side: &Path, fixtures: &Path, groups: &[String]) -> Result<Figures> {
    let mut figures = run_dsh_bench(side, fixtures, groups)?;
    figures.extend(harness_runs(root, side, fixtures));
    Ok(figures)
}

/// Our harness over [`HARNESS_ON_BOTH`] against `side`'s host (our root, or the baseline's
/// worktree).
fn harness_runs(root: &Path, side: &Path, fixtures: &Path) -> Figures {
    let host = (side != root).then(|| side.join("target/release/dsh-host"));
    let mut figures = Figures::new();
    for group in HARNESS_ON_BOTH {
        figures.extend(harness_run(root, group, host.as_deref(), fixtures));
    }
    figures
}

/// Our harness's `group` against `host` (ours when `None`); nothing, said on stderr, when it
/// fails (the group's figures are then missing from this run).
fn harness_run(root: &Path, group: &str, host: Option<&Path>, fixtures: &Path) -> Figures {
    let mut command = Command::new(root.join("target/release/dsh-bench"));
    command.arg(group).env("DSH_FIXTURES", fixtures);
    if let Some(host) = host {
        command.env("DSH_BENCH_HOST", host);
    }
    match command.output() {
        Ok(output) if output.status.success() => {
            super::parse_lines(&String::from_utf8_lossy(&output.stdout))
        }
        failed => {
            let why = match failed {
                Ok(output) => String::from_utf8_lossy(&output.stderr).trim().to_owned(),
                Err(error) => error.to_string(),
            };
            eprintln!(
                "xtask: the {group} figures of {} host are missing: {why}",
                if host.is_some() {
                    "the baseline's"
                } else {
                    "our"
                },
            );
            Figures::new()
        }
    }
}

fn today() -> String {
    Command::new("date")
        .arg("+%F")
        .output()
        .ok()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|date| !date.is_empty())
        .unwrap_or_else(|| "an unknown date".to_owned())
}

/// The commit a baseline's first comment names: `measured at commit <hash> ...`.
pub(super) fn commit_named(measured: &str) -> Option<String> {
    let rest = measured.split("commit ").nth(1)?;
    let commit: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
    (commit.len() >= 7).then_some(commit)
}

/// Checks out `commit` into its worktree (once) and builds what `dsh-bench` runs, in release.
/// Returns the worktree's root.
pub(super) fn build(root: &Path, commit: &str) -> Result<PathBuf> {
    let dir = root.join("target/bench-baseline").join(commit);
    if !dir.join("Cargo.toml").is_file() {
        // A folder left half made by an interrupted run is made again.
        let _ = std::fs::remove_dir_all(&dir);
        git(root, &["worktree", "prune"])?;
        let target = dir.display().to_string();
        git(
            root,
            &["worktree", "add", "--detach", "--force", &target, commit],
        )?;
    }
    // The web and MCP figures drive Node packages the tests install; the baseline uses ours.
    for packages in ["tests/web/node_modules", "tests/mcp/node_modules"] {
        let ours = root.join(packages);
        let theirs = dir.join(packages);
        if ours.is_dir() && !theirs.exists() {
            std::os::unix::fs::symlink(&ours, &theirs)
                .with_context(|| format!("link {}", theirs.display()))?;
        }
    }
    build_release(&dir)?;
    put_std_beside(root, &dir)?;
    Ok(dir)
}

/// Copies our standard library (the same toolchain built both sides) beside the baseline's
/// binaries. The baseline commit predates the copy our build scripts make (`dsh-std-beside`),
/// so its binaries found the library only through the loader path `cargo` sets, which the
/// sandbox takes out of a command's environment: its `dsh-sandbox-exec` then exited 127
/// before it started bubblewrap, and its confined steps timed a refusal, not confinement.
fn put_std_beside(root: &Path, base_root: &Path) -> Result<()> {
    let ours = root.join("target/release");
    let theirs = base_root.join("target/release");
    for entry in std::fs::read_dir(&ours).with_context(|| format!("list {}", ours.display()))? {
        let entry = entry?;
        let name = entry.file_name();
        let is_std = name
            .to_str()
            .is_some_and(|name| name.starts_with("libstd-") && name.ends_with(".so"));
        if is_std && !theirs.join(&name).exists() {
            std::fs::copy(entry.path(), theirs.join(&name))
                .with_context(|| format!("copy {} beside the baseline", name.to_string_lossy()))?;
        }
    }
    Ok(())
}

fn git(root: &Path, args: &[&str]) -> Result<()> {
    let output = Command::new("git")
        .args(args)
        .current_dir(root)
        .output()
        .context("cannot run git")?;
    if !output.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// The committed baseline file, rewritten from figures measured in this run.
pub(super) fn tsv(commit: &str, date: &str, runs: usize, figures: &Figures) -> String {
    let mut text = format!(
        "# measured at commit {commit} on {date}, by `cargo xtask bench`: medians of {runs} runs of\n# that commit's dsh-bench (release build, in a worktree of its own), interleaved with {runs} runs\n# of the commit BENCHMARKS.md was written at, in the units of BENCHMARKS.md, as name<TAB>value.\n# `cargo xtask bench` measures this commit again in every run; these figures stand in only\n# where it cannot be built.\n"
    );
    for (name, value) in figures {
        text.push_str(&format!("{name}\t{value:.3}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commit_is_read_from_the_first_comment() {
        assert_eq!(
            commit_named("measured at commit 4aa1a61 (before issue 20) on 2026-12-06").as_deref(),
            Some("4aa1a61")
        );
        assert_eq!(commit_named("measured on 2026-12-06"), None);
        assert_eq!(commit_named("measured at commit xyz"), None);
    }

    #[test]
    fn a_rewritten_baseline_names_its_commit_for_the_next_run() {
        let figures = super::super::Figures::from([("emit_1_listeners".to_owned(), 21.5)]);
        let text = tsv("4aa1a61", "2026-12-06", 3, &figures);
        let parsed = super::super::Baseline::parse(&text);
        assert_eq!(
            parsed.measured.as_deref().and_then(commit_named).as_deref(),
            Some("4aa1a61")
        );
        assert_eq!(parsed.figures.get("emit_1_listeners"), Some(&21.5));
    }

    #[test]
    fn an_older_dsh_bench_names_its_groups_where_it_asks_for_them() {
        let main = r#"
            let wants = |group: &str| only.is_empty() || only.iter().any(|arg| arg == group);
            if wants("dispatch") { dispatch::run().await?; }
            let result = result.and_then(|()| if wants("fs") { fs::run() } else { Ok(()) });
        "#;
        assert_eq!(groups_wanted_in(main), ["dispatch", "fs"]);
        assert!(groups_wanted_in("fn main() {}").is_empty());
    }

    #[test]
    fn groups_the_baseline_lacks_run_apart_and_an_unknown_baseline_shares_all() {
        let ours: Vec<String> = ["agent", "undo", "session"].map(String::from).into();
        let theirs = Some(vec!["session".to_owned(), "agent".to_owned()]);
        let (shared, apart) = split_by_baseline(&ours, theirs);
        assert_eq!(shared, ["agent", "session"]);
        assert_eq!(apart, ["undo"]);
        let (shared, apart) = split_by_baseline(&ours, None);
        assert_eq!(shared, ours);
        assert!(apart.is_empty());
    }
}
