//! What undo costs a user. Every tool call is recorded (the workspace scanned, pre-images kept),
//! so a step that runs `bash true` in a workspace of 1,000 files is timed with the `undo` row
//! mounted and without it: the difference is what recording costs a command. Then a turn whose
//! one command writes 1,000 new files is undone with `/undo` through the client protocol: the
//! time from the command line sent to its outcome answered, every file gone.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use crate::process::scratch;
use crate::web::{Web, follow};
use crate::{median, report};

/// Files in the workspace the per-step figure runs in.
const FILES: usize = 1_000;
/// Pairs of step figures (each the median of the sandbox bench's runs), with and without.
const PAIRS: usize = 3;
/// Turns undone for the undo figure (a fresh workspace each).
const UNDO_RUNS: usize = 3;

pub(crate) fn run() -> anyhow::Result<()> {
    let dir = scratch("undo")?;
    // Outside the host's home (`dir`): the recorder never records the home.
    let workspaces = scratch("undo-work")?;
    let work = workspaces.join("work");
    for folder in 0..20 {
        let folder_path = work.join(format!("d{folder}"));
        std::fs::create_dir_all(&folder_path)?;
        for file in 0..FILES / 20 {
            std::fs::write(
                folder_path.join(format!("f{file}.txt")),
                format!("{folder}/{file}\n"),
            )?;
        }
    }
    // Interleaved pairs, so the machine's drift falls on both alike; each figure a median.
    let call = "shell: \"true\"";
    let (mut recorded, mut unrecorded) = (Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        recorded.push(crate::sandbox::gap_with_rows(
            &dir,
            &work,
            call,
            "workspace-write",
            "",
        )?);
        unrecorded.push(crate::sandbox::gap_with_rows(
            &dir,
            &work,
            call,
            "workspace-write",
            "- id: undo\n  disabled: true\n",
        )?);
    }
    let (recorded, unrecorded) = (median(recorded), median(unrecorded));
    report("undo_step_recorded", recorded, "us");
    report("undo_step_unrecorded", unrecorded, "us");
    report(
        "undo_step_overhead",
        (recorded - unrecorded) / unrecorded * 100.0,
        "%",
    );
    report(
        "undo_turn_of_1000_files",
        undo_time(&dir, &workspaces)?,
        "ms",
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&workspaces);
    Ok(())
}

/// The median time `/undo` takes to revert a turn whose command wrote [`FILES`] files.
fn undo_time(dir: &Path, workspaces: &Path) -> anyhow::Result<f64> {
    let patch = dir.join("undo.patch.yml");
    std::fs::write(
        &patch,
        format!(
            "- insert:\n    - id: bench-model\n      name: bench-model\n      config:\n        steps: 1\n        shell: \"for i in $(seq 1 {FILES}); do echo x > new-$i.txt; done\"\n"
        ),
    )?;
    let web = Web::start(dir, &patch)?;
    // The host is stopped whatever the runs did: a failed one must not leave it running.
    let times = undo_runs(&web, workspaces);
    web.host.stop();
    Ok(median(times?))
}

/// [`UNDO_RUNS`] turns, each undone: the time of each undo (ms).
fn undo_runs(web: &Web, workspaces: &Path) -> anyhow::Result<Vec<f64>> {
    let mut times = Vec::new();
    for run in 0..UNDO_RUNS {
        let work = workspaces.join(format!("turn-{run}"));
        std::fs::create_dir_all(&work)?;
        let (created, _) = web.call(
            "session.create",
            &json!({"model": "instant/instant", "cwd": work.display().to_string()}),
        )?;
        let session = created["sessionId"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("no session: {created}"))?
            .to_owned();
        let socket = web.socket()?;
        let watcher = {
            let session = session.clone();
            std::thread::spawn(move || follow(socket, &session))
        };
        // The follower subscribes before the turn starts.
        std::thread::sleep(std::time::Duration::from_millis(300));
        web.call(
            "session.prompt",
            &json!({"sessionId": session, "text": "go"}),
        )?;
        watcher
            .join()
            .map_err(|_| anyhow::anyhow!("the follower panicked"))??;
        let written = std::fs::read_dir(&work)?.count();
        anyhow::ensure!(
            written == FILES,
            "the turn wrote {written} files, not {FILES}"
        );
        // The turn's end reaches the follower a moment before the agent is idle: an undo
        // asked in that moment is refused (a turn is running) and asked again, untimed.
        let mut undone = serde_json::Value::Null;
        for _ in 0..100 {
            let started = Instant::now();
            let (answer, _) = web.call(
                "session.prompt",
                &json!({"sessionId": session, "text": "/undo"}),
            )?;
            let elapsed = started.elapsed().as_secs_f64() * 1e3;
            let running = answer["command"]["text"]
                .as_str()
                .is_some_and(|text| text.contains("a turn is running"));
            undone = answer;
            if !running {
                times.push(elapsed);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let left = std::fs::read_dir(&work)?.count();
        anyhow::ensure!(left == 0, "/undo left {left} files: {undone}");
    }
    Ok(times)
}
