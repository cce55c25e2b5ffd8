//! Faults of the tools, each a `bash` call the fake model makes under the shipped sandbox
//! (bubblewrap, the limits of its `sandbox` row, small here so the bombs end quickly): a
//! command that ignores SIGTERM, a fork bomb, a memory bomb, a file-size bomb, a CPU spinner, a
//! flood of output, a command killed by a signal, and a write outside the workspace. Each
//! ends in a result the model reads (the limit or the timeout named) and the turn goes on.

use std::time::{Duration, Instant};

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use serde_json::json;

use super::kit::{Run, headless};
use super::{Fault, Seen};

/// The sandbox's limits of these rows (the shipped ones are far larger: 4,096 processes,
/// 8 GiB, 8 GiB files, an hour of CPU): bounds met in a second, not a minute.
const LIMITED: &str = "- id: sandbox\n  config:\n    limits: {processes: 256, memoryBytes: 1073741824, fileSizeBytes: 16777216, cpuSeconds: 1}\n- id: tool-bash\n  config:\n    killGraceMs: 300\n";

pub(crate) fn faults() -> Vec<Fault> {
    vec![
        Fault {
            name: "tool: bash ignores SIGTERM past its timeout",
            expected: "SIGKILL after the grace: `timed out`, turn goes on",
            run: ignores_sigterm,
        },
        Fault {
            name: "tool: fork bomb",
            expected: "sandbox process limit named in the result",
            run: fork_bomb,
        },
        Fault {
            name: "tool: memory bomb",
            expected: "sandbox memory limit named in the result",
            run: memory_bomb,
        },
        Fault {
            name: "tool: file-size bomb",
            expected: "sandbox file size limit named in the result",
            run: file_size_bomb,
        },
        Fault {
            name: "tool: CPU spinner",
            expected: "sandbox CPU limit named in the result",
            run: cpu_spinner,
        },
        Fault {
            name: "tool: 50 MB of output",
            expected: "the result cut to its tail, host memory bounded",
            run: output_flood,
        },
        Fault {
            name: "tool: command killed by SIGSEGV",
            expected: "the signal reported, turn goes on",
            run: killed_by_signal,
        },
        Fault {
            name: "tool: write outside the workspace",
            expected: "refused by the sandbox, nothing written",
            run: write_outside,
        },
    ]
}

/// One `bash` call of `command` (`timeout_ms` when given) under the limited sandbox, then the
/// closing answer: the run, the result's text, the time the run took.
fn bash(
    name: &str,
    command: &str,
    timeout_ms: Option<u64>,
) -> Result<(Run, String, Duration), Seen> {
    if let Err(reason) = dsh_tests::bubblewrap() {
        return Err(Seen::Skipped(format!(
            "no confinement to bound it: {reason}"
        )));
    }
    let mut arguments = json!({"command": command, "description": name});
    if let Some(timeout) = timeout_ms {
        arguments["timeoutMs"] = json!(timeout);
    }
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("call_1", "bash", arguments),
        Reply::text("DONE"),
    ]);
    let started = Instant::now();
    let run = headless(name, &server, LIMITED, "", "run it", &[]);
    let took = started.elapsed();
    let results = run.of_type("tool/result");
    let text = results
        .first()
        .and_then(|result| result["data"]["message"]["content"][0]["content"][0]["text"].as_str())
        .unwrap_or_else(|| panic!("no tool result; exit {:?}", run.out.code))
        .to_owned();
    Ok((run, text, took))
}

/// The turn completed after the result, its log sound: the row's summary.
fn went_on(run: &Run, shown: &str) -> Seen {
    let ended = run.ended(0, "completed", None);
    Seen::Held(format!(
        "`{}`; {ended}; {}",
        super::cell(shown, 70),
        run.sound()
    ))
}

/// The line of `text` that says `needle`.
fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no `{needle}` in the result: {}", super::cell(text, 300)))
}

fn ignores_sigterm() -> Seen {
    let (run, text, took) = match bash(
        "sigterm",
        "trap '' TERM; sleep 30; echo survived",
        Some(500),
    ) {
        Ok(found) => found,
        Err(skip) => return skip,
    };
    assert!(
        !text.contains("survived"),
        "the command outlived its timeout"
    );
    assert!(took < Duration::from_secs(15), "took {took:?}");
    went_on(&run, line_with(&text, "timed out"))
}

fn limit(name: &str, command: &str, says: &str) -> Seen {
    let (run, text, _) = match bash(name, command, Some(8000)) {
        Ok(found) => found,
        Err(skip) => return skip,
    };
    assert!(
        !text.contains("BOMB_DONE"),
        "the bomb finished: {}",
        super::cell(&text, 200)
    );
    went_on(&run, line_with(&text, says))
}

fn fork_bomb() -> Seen {
    limit(
        "fork-bomb",
        "bomb() { bomb | bomb & }; bomb; sleep 1",
        "its process limit",
    )
}

fn memory_bomb() -> Seen {
    limit(
        "memory-bomb",
        "/usr/bin/python3 -c 'x = bytearray(3 * 1024 ** 3); print(\"BOMB_DONE\")'",
        "its memory limit",
    )
}

fn file_size_bomb() -> Seen {
    limit(
        "file-bomb",
        "dd if=/dev/zero of=big.bin bs=1M count=64 && echo BOMB_DONE",
        "its file size limit",
    )
}

fn cpu_spinner() -> Seen {
    limit(
        "cpu-spin",
        "/usr/bin/python3 -c 'while True: pass'",
        "its CPU time limit",
    )
}

fn output_flood() -> Seen {
    let (run, text, _) = match bash("flood", "yes 0123456789abcdef | head -c 50000000", None) {
        Ok(found) => found,
        Err(skip) => return skip,
    };
    assert!(text.len() < 1 << 20, "a result of {} bytes", text.len());
    let stored: usize = run
        .events()
        .iter()
        .map(|event| event.to_string().len())
        .sum();
    assert!(stored < 8 << 20, "{stored} bytes of events for one call");
    went_on(&run, &format!("{} bytes of result", text.len()))
}

fn killed_by_signal() -> Seen {
    let (run, text, _) = match bash("segv", "echo before; kill -SEGV $$; echo after", None) {
        Ok(found) => found,
        Err(skip) => return skip,
    };
    assert!(text.contains("before") && !text.contains("after"), "{text}");
    let said = text
        .lines()
        .find(|line| line.contains("SIGSEGV") || line.contains("signal") || line.contains("139"))
        .unwrap_or_else(|| panic!("the signal is not reported: {}", super::cell(&text, 200)));
    went_on(&run, said)
}

fn write_outside() -> Seen {
    // The temp dir holding the workspace is writable; a path under /usr is not.
    let (run, text, _) = match bash(
        "outside",
        "echo x > /usr/dsh-fault-outside && echo WROTE",
        None,
    ) {
        Ok(found) => found,
        Err(skip) => return skip,
    };
    assert!(
        !std::path::Path::new("/usr/dsh-fault-outside").exists(),
        "written outside"
    );
    assert!(!text.contains("WROTE"), "{text}");
    let said = text
        .lines()
        .find(|line| {
            line.contains("Read-only") || line.contains("denied") || line.contains("sandbox")
        })
        .unwrap_or_else(|| panic!("no refusal said: {}", super::cell(&text, 200)));
    went_on(&run, said)
}
