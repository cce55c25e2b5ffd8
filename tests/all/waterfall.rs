//! The waterfall mode through the real binary: interleaved chains, the unsafe core under
//! valgrind, and the seed's demo.

use dsh_tests::tree::check;
use dsh_tests::{TestDir, plugin_lib};

/// Four hundred chains, interleaved, whose listeners suspend, run their `next` in another task,
/// fail before it or drop it: every answer is the one the chain must give, and each failure is
/// logged once.
#[test]
fn interleaved_waterfall_chains_give_their_own_answers() {
    let dir = TestDir::new("waterfall-stress");
    let out = check(
        &dir,
        "- id: stress\n  name: lifecycle-probe/waterfall-stress\n",
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout
            .lines()
            .any(|line| line == "stress: 400 dispatches, 0 wrong"),
        "{}",
        out.stdout
    );
    let refusals = (0..400_u64)
        .filter(|payload| payload.is_multiple_of(5))
        .count();
    assert_eq!(
        out.stderr
            .matches("listener failed: stress refuses")
            .count(),
        refusals,
        "{}",
        out.stderr
    );
}

/// The waterfall's unsafe core under valgrind, through the real binary and libraries: the mode
/// checks (failures, panics, boxed futures, concurrent chains, a chain past its inline links whose
/// last reference is released after the dispatch) and the stress (chains forgotten half-run,
/// `next`s run in other tasks). An invalid read or write anywhere fails it. (A chain's last
/// release reading a freed link went unnoticed by every other test.)
#[test]
fn waterfall_chains_are_clean_under_valgrind() {
    if std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_err()
    {
        dsh_tests::skip(
            "waterfall_chains_are_clean_under_valgrind",
            "valgrind is not installed",
        );
        return;
    }
    plugin_lib("lifecycle_probe");
    let dir = TestDir::new("valgrind");
    let config = dir.write(
        "tree.yml",
        "- id: modes\n  name: lifecycle-probe/modes\n- id: stress\n  name: lifecycle-probe/waterfall-stress\n",
    );
    let host = dsh_tests::host_bin();
    let out = std::process::Command::new("timeout")
        .args([
            "300",
            "valgrind",
            "-q",
            "--error-exitcode=9",
            "--leak-check=no",
        ])
        .arg(&host)
        .args(["check", "--config", config.to_str().unwrap()])
        .env("DSH_HOME", dir.home())
        .env_remove("RUST_LOG")
        .output()
        .expect("run valgrind");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    for expected in ["waterfall deep: 739", "stress: 400 dispatches, 0 wrong"] {
        assert!(stdout.lines().any(|line| line == expected), "{stdout}");
    }
}

#[test]
fn waterfall_demo_upper_cases_and_short_circuits() {
    plugin_lib("waterfall_demo");
    let dir = TestDir::new("waterfall");
    let out = check(&dir, "- id: demo\n  name: waterfall-demo\n", &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().take(2).collect();
    assert_eq!(lines, ["HELLO", "** BLOCKED **"]);
}
