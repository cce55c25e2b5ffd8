//! Instructions per step of a headless turn: the host runs a turn of the instant model under
//! callgrind twice, [`SHORT`] steps and [`LONG`] steps, and the difference over the extra
//! steps is what one step executes in the host's own code (its threads, not the kernel's
//! work). The wall-time step figures of the `agent` group swing by a quarter between runs
//! on this shared machine; an instruction count does not, so a change of a few percent in
//! the harness shows here when it cannot show there. Run only when named (`cargo xtask
//! bench` runs it against both sides' hosts), and skipped with its reason where valgrind is
//! not installed.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::agent::{JSONL_STORE, turn_patch};
use crate::process::{host_exe, instant_turn_args, scratch};
use crate::report;

const SHORT: usize = 50;
const LONG: usize = 250;

pub(crate) fn run() -> anyhow::Result<()> {
    let installed = Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !installed {
        eprintln!("dsh-bench: instructions skipped: valgrind is not installed");
        return Ok(());
    }
    let dir = scratch("instructions")?;
    let work = dir.join("work");
    std::fs::create_dir_all(&work)?;
    // A host's first start in a home checks each library's layout against the host's and
    // records the pairs it checked; later starts read the records. That check costs some
    // 170 M instructions, more than the 200 extra steps, so a first counted turn would carry
    // it and the difference would shrink to a tenth. One turn outside callgrind settles the
    // home, and both counted turns start as every later start does.
    settle_home(&dir, &work)?;
    let short = counted_turn(&dir, &work, SHORT)?;
    let long = counted_turn(&dir, &work, LONG)?;
    report(
        "agent_instructions_per_step",
        (long - short) / (LONG - SHORT) as f64 / 1e6,
        "Minstr",
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// One short turn outside callgrind, so the home holds what a first start records.
fn settle_home(dir: &Path, work: &Path) -> anyhow::Result<()> {
    headless_turn(dir, work, 1, &[])
}

/// The instructions the host ran for a headless turn of `steps` steps (start and end
/// included), as callgrind counts them.
fn counted_turn(dir: &Path, work: &Path, steps: usize) -> anyhow::Result<f64> {
    let out = dir.join(format!("steps-{steps}.callgrind"));
    let callgrind = [
        "valgrind".to_owned(),
        "-q".to_owned(),
        "--tool=callgrind".to_owned(),
        "--trace-children=no".to_owned(),
        format!("--callgrind-out-file={}", out.display()),
    ];
    headless_turn(dir, work, steps, &callgrind)?;
    let text = std::fs::read_to_string(&out)?;
    text.lines()
        .find_map(|line| line.strip_prefix("summary:"))
        .and_then(|count| count.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("callgrind wrote no summary to {}", out.display()))
}

/// A headless turn of `steps` steps in the home `dir`, the host started under `wrapper` (a
/// program and its arguments) when one is given.
fn headless_turn(dir: &Path, work: &Path, steps: usize, wrapper: &[String]) -> anyhow::Result<()> {
    let patch = dir.join(format!("steps-{steps}.patch.yml"));
    std::fs::write(&patch, turn_patch(steps, &[], JSONL_STORE, false))?;
    let mut command = match wrapper.split_first() {
        Some((program, arguments)) => {
            let mut command = Command::new(program);
            command.args(arguments).arg(host_exe());
            command
        }
        None => Command::new(host_exe()),
    };
    let status = command
        .args(instant_turn_args(&patch, work))
        .current_dir(dir)
        .env("DSH_HOME", dir)
        .env("DSH_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if !status.success() {
        anyhow::bail!("the {steps}-step turn ended with {status}");
    }
    Ok(())
}
