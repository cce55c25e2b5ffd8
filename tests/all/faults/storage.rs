//! Faults of the disk, the home and the session store: the store's disk full mid-turn (a small
//! tmpfs), a home mounted read-only, a store that is configured but did not mount (refused,
//! unless the profile keeps its sessions in memory), a stored log torn mid-line, the host
//! killed or stopped mid-answer and the session resumed, the store's disk answering EIO (an
//! ext4 image on a loop device whose backing file turns immutable), the clock jumping back an
//! hour mid-answer (libfaketime preloaded into that one host).

use std::path::{Path, PathBuf};
use std::process::Command;

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent, first_chunk};
use dsh_tests::sessions::session_logs;
use dsh_tests::{HostProcess, TestDir, WAIT, run_host_with_env};

use super::kit::{
    Run, args, checkpointed, fault_dir, headless, read_run, run_in, sound, stored, tail,
};
use super::{Fault, Seen};

pub(crate) fn faults() -> Vec<Fault> {
    vec![
        Fault {
            name: "storage: disk full on append",
            expected: "named error, exit != 0; the turn stops there",
            run: disk_full,
        },
        Fault {
            name: "storage: disk full before a checkpoint",
            expected: "the next checkpoint fails: turn ends error, named",
            run: disk_full_checkpoint,
        },
        Fault {
            name: "storage: the home not writable",
            expected: "a named error, exit != 0, no crash",
            run: home_read_only,
        },
        Fault {
            name: "storage: session store not mounted",
            expected: "run refused: named error, exit 1, no request",
            run: store_not_mounted,
        },
        Fault {
            name: "storage: sessions root is a file",
            expected: "first write fails, named with the path; exit 1",
            run: root_is_a_file,
        },
        Fault {
            name: "storage: profile keeps sessions in memory",
            expected: "no store, `store: optional`: runs, exit 0",
            run: sessions_in_memory,
        },
        Fault {
            name: "storage: stored log torn mid-line, resumed",
            expected: "torn tail repaired, resumed turn completes",
            run: torn_log,
        },
        Fault {
            name: "storage: host SIGKILLed mid-answer, resumed",
            expected: "checkpointed events stored; resumed, sound",
            run: killed_mid_answer,
        },
        Fault {
            name: "storage: host SIGTERMed mid-answer",
            expected: "exit 143, turn closed aborted, log sound",
            run: terminated_mid_answer,
        },
        Fault {
            name: "storage: EIO on append",
            expected: "named I/O error, exit != 0",
            run: eio,
        },
        Fault {
            name: "storage: clock jumps back mid-session",
            expected: "turn completes, later times earlier, log sound",
            run: clock_back,
        },
    ]
}

/// A run whose store stopped taking writes: it exited non-zero and named the failure (the
/// stderr line `names` picks out; else a panic saying no `what` error was named). What reached
/// the disk reads back sound; the events shown after the write failed are not on it, and the
/// run says so (the error, the exit code) rather than claim them. Answers the row's
/// observation, the turn's end kind and how many shown events are not stored.
fn write_failed(run: &Run, what: &str, names: impl Fn(&str) -> bool) -> (String, String, usize) {
    assert_ne!(run.out.code, Some(0), "the run claimed success");
    let said = run
        .out
        .stderr
        .lines()
        .find(|line| names(line))
        .unwrap_or_else(|| panic!("no named {what} error: {}", tail(&run.out.stderr)));
    let (checked, missing) = stored(&run.dir.home(), &run.shown);
    let (kind, code) = run.end();
    let seen = format!(
        "exit {:?}, turn/end {kind} {code}, `{}`; {checked}; {} shown past the failure",
        run.out.code,
        super::cell(said.trim(), 70),
        missing.len()
    );
    (seen, kind, missing.len())
}

/// A file system mounted at a path, unmounted on drop.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(at: &Path, size: &str) -> Result<Self, String> {
        let size = format!("size={size}");
        Self::of(
            at,
            &["-t", "tmpfs", "-o", &size],
            Path::new("tmpfs"),
            "a tmpfs",
        )
    }

    /// `source` mounted at `at` with `mount`'s `options`; `what` names it in the refusal.
    fn of(at: &Path, options: &[&str], source: &Path, what: &str) -> Result<Self, String> {
        std::fs::create_dir_all(at).map_err(|error| error.to_string())?;
        let out = Command::new("mount")
            .args(options)
            .arg(source)
            .arg(at)
            .output()
            .map_err(|error| format!("no `mount`: {error}"))?;
        if !out.status.success() {
            return Err(format!(
                "cannot mount {what} here: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Self(at.to_path_buf()))
    }

    /// `at` bound onto itself read-only.
    fn read_only(at: &Path) -> Result<Self, String> {
        let bind = Command::new("mount")
            .args(["--bind"])
            .arg(at)
            .arg(at)
            .output();
        if !bind.as_ref().is_ok_and(|out| out.status.success()) {
            return Err(format!("cannot bind-mount here: {bind:?}"));
        }
        let mounted = Self(at.to_path_buf());
        let ro = Command::new("mount")
            .args(["-o", "remount,ro,bind"])
            .arg(at)
            .output();
        if !ro.as_ref().is_ok_and(|out| out.status.success()) {
            return Err(format!("cannot remount read-only: {ro:?}"));
        }
        Ok(mounted)
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn disk_full() -> Seen {
    let dir = fault_dir("disk-full", "");
    // The store's root alone is small: the host's own files (logs, profile) still fit.
    let mount = match Mount::tmpfs(&dir.home().join("sessions"), "64k") {
        Ok(mount) => mount,
        Err(reason) => return Seen::Skipped(reason),
    };
    // An answer far larger than the disk left.
    let mut events = vec![first_chunk()];
    events.extend((0..64).map(|_| SseEvent::content(&"lorem ipsum ".repeat(400))));
    events.extend([SseEvent::finish("stop"), SseEvent::Done]);
    let server = FakeDeepSeek::start(vec![Reply::Sse(events)]);
    let run = run_in(dir, &server.url(), "", "fill the disk", &[]);
    let (seen, kind, missing) = write_failed(&run, "storage", |line| {
        line.contains("No space left") || line.contains("ENOSPC") || line.contains("storage")
    });
    let went_on = kind == "completed" && missing > 0;
    // Unmounted before the scratch dir is removed.
    drop(mount);
    drop(run);
    if went_on {
        return Seen::Known(format!(
            "the write failed after the step's last durability checkpoint (its model \
             request) and no checkpoint guards the turn's end: the turn was shown completed, \
             its events in memory only, and the failure surfaced at exit (exit 1): {seen}"
        ));
    }
    Seen::Held(seen)
}

/// The disk fills with a tool's result; the flush before the next model request meets it.
fn disk_full_checkpoint() -> Seen {
    let dir = fault_dir("disk-full-checkpoint", "");
    let mount = match Mount::tmpfs(&dir.home().join("sessions"), "64k") {
        Ok(mount) => mount,
        Err(reason) => return Seen::Skipped(reason),
    };
    let command = "head -c 200000 /dev/zero | tr '\\0' a";
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "call_1",
            "bash",
            serde_json::json!({"command": command, "description": "fill"}),
        ),
        Reply::text("never stored"),
    ]);
    let run = run_in(dir, &server.url(), "", "fill the disk", &[]);
    // Named as the store's failure, not as the checkpoint hook that met it first.
    let ended = run.ended(1, "error", Some("STORE_WRITE_FAILED"));
    let said = run
        .out
        .stderr
        .lines()
        .find(|line| line.contains("flush") && line.contains("failed"))
        .unwrap_or_else(|| panic!("no failed checkpoint named: {}", tail(&run.out.stderr)))
        .to_owned();
    let (checked, missing) = stored(&run.dir.home(), &run.shown);
    let requests = server.requests().len();
    let seen = format!(
        "{ended}, {requests} request(s), `{}`; {checked}; {} shown past the failure",
        super::cell(said.trim(), 70),
        missing.len()
    );
    // Unmounted before the scratch dir is removed.
    drop(mount);
    drop(run);
    Seen::Held(seen)
}

fn home_read_only() -> Seen {
    let dir = TestDir::new("fault-home-ro");
    std::fs::create_dir_all(dir.home()).unwrap();
    let mount = match Mount::read_only(&dir.home()) {
        Ok(mount) => mount,
        Err(reason) => return Seen::Skipped(reason),
    };
    let server = FakeDeepSeek::start(vec![Reply::text("never")]);
    let run = run_in(dir, &server.url(), "", "hello", &[]);
    assert!(
        matches!(run.out.code, Some(code) if code != 0),
        "exit {:?}: {}",
        run.out.code,
        tail(&run.out.stderr)
    );
    assert!(
        !run.out.stderr.contains("panicked"),
        "{}",
        tail(&run.out.stderr)
    );
    let said = run
        .out
        .stderr
        .lines()
        .find(|line| {
            line.contains("Read-only")
                || line.contains("read-only")
                || line.contains("not writable")
        })
        .unwrap_or_else(|| panic!("no named error: {}", tail(&run.out.stderr)))
        .to_owned();
    let seen = format!(
        "exit {:?}, `{}`",
        run.out.code,
        super::cell(said.trim(), 90)
    );
    // Unmounted before the scratch dir is removed.
    drop(mount);
    drop(run);
    Seen::Held(seen)
}

/// A run whose store row fails to start (`store_rows`): refused before any request, named.
fn refused(name: &str, store_rows: &str) -> Seen {
    let server = FakeDeepSeek::start(vec![Reply::text("never")]);
    let run = headless(name, &server, store_rows, "", "hello", &[]);
    assert_eq!(
        run.out.code,
        Some(1),
        "exit {:?}: {}",
        run.out.code,
        tail(&run.out.stderr)
    );
    let said = run
        .out
        .stderr
        .lines()
        .find(|line| line.contains("no session store is mounted"))
        .unwrap_or_else(|| panic!("not named: {}", tail(&run.out.stderr)))
        .to_owned();
    assert_eq!(server.requests().len(), 0, "a turn ran");
    assert!(run.of_type("turn/start").is_empty(), "a turn started");
    Seen::Held(format!("exit 1, `{}`", super::cell(said.trim(), 90)))
}

fn store_not_mounted() -> Seen {
    refused(
        "store-unmounted",
        "- id: session-persistence-jsonl\n  config:\n    compression: lzma-please\n",
    )
}

/// The store mounts (its root is only made when a session is written), then its first write
/// fails: named with the path, and the run ends non-zero instead of claiming the turn.
fn root_is_a_file() -> Seen {
    let file = std::env::temp_dir().join(format!("dsh-fault-root-file-{}", std::process::id()));
    std::fs::write(&file, "not a folder").unwrap();
    let server = FakeDeepSeek::start(vec![Reply::text("never stored")]);
    let run = headless(
        "root-file",
        &server,
        &format!(
            "- id: session-persistence-jsonl\n  config:\n    root: {}\n",
            file.display()
        ),
        "",
        "hello",
        &[],
    );
    let _ = std::fs::remove_file(&file);
    assert_eq!(
        run.out.code,
        Some(1),
        "exit {:?}: {}",
        run.out.code,
        tail(&run.out.stderr)
    );
    let said = run
        .out
        .stderr
        .lines()
        .find(|line| line.contains(file.to_str().unwrap()) && line.contains("Not a directory"))
        .unwrap_or_else(|| panic!("the path is not named: {}", tail(&run.out.stderr)))
        .to_owned();
    let (kind, code) = run.end();
    Seen::Held(format!(
        "exit 1, turn/end {kind} {code}, `{}`",
        super::cell(said.trim(), 90)
    ))
}

fn sessions_in_memory() -> Seen {
    let server = FakeDeepSeek::start(vec![Reply::text("IN MEMORY")]);
    let run = headless(
        "in-memory",
        &server,
        "- id: session-persistence-jsonl\n  disabled: true\n- id: session\n  config:\n    store: optional\n",
        "",
        "hello",
        &[],
    );
    let ended = run.ended(0, "completed", None);
    assert!(
        session_logs(&run.dir.home().join("sessions")).is_empty(),
        "a log was stored"
    );
    Seen::Held(format!("{ended}, nothing stored (as the profile says)"))
}

/// The first session stored under `home`, its log path.
fn only_log(home: &Path) -> PathBuf {
    let logs = session_logs(&home.join("sessions"));
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs[0].clone()
}

/// `--resume ID` with `task` in the run's home, the model at `url`.
fn resume(dir: TestDir, url: &str, id: &str, task: &str) -> Run {
    let mut all = args(&dir, url, "", task);
    let at = all.len() - 1;
    all.insert(at, id.to_owned());
    all.insert(at, "--resume".to_owned());
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let out = run_host_with_env(&dir.home(), &all, &[("DEEPSEEK_API_KEY", "sk-test")]);
    read_run(dir, out)
}

fn torn_log() -> Seen {
    let server = FakeDeepSeek::start(vec![Reply::text("FIRST"), Reply::text("SECOND")]);
    let first = headless("torn", &server, "", "", "hello", &[]);
    first.ended(0, "completed", None);
    let id = first.shown[0].0.clone();
    let log = only_log(&first.dir.home());
    let bytes = std::fs::read(&log).unwrap();
    // Half of the last line: a write cut by a crash.
    let last = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|byte| *byte == b'\n')
        .unwrap();
    let cut = last + (bytes.len() - last) / 2;
    std::fs::write(&log, &bytes[..cut]).unwrap();
    let url = server.url();
    let second = resume(first.dir, &url, &id, "go on");
    let ended = second.ended(0, "completed", None);
    Seen::Held(format!("{ended}; {}", second.sound()))
}

/// A run held mid-answer (the model's stream waits at a gate), for a signal.
fn held_run(name: &str) -> (TestDir, FakeDeepSeek, HostProcess, PathBuf) {
    let dir = fault_dir(name, "");
    let gate = dir.join("gate");
    let server = FakeDeepSeek::start(vec![
        Reply::Sse(vec![
            first_chunk(),
            SseEvent::content("PARTIAL_ONE "),
            SseEvent::content("PARTIAL_TWO "),
            SseEvent::Gate(gate.clone()),
            SseEvent::content("never"),
            SseEvent::Done,
        ]),
        Reply::text("RESUMED"),
    ]);
    let host = started(&dir, &server, &[], "PARTIAL_TWO");
    (dir, server, host, gate)
}

/// The headless run of `dir` against `server` started (the API key and `envs` set), once it
/// shows `shown`.
fn started(
    dir: &TestDir,
    server: &FakeDeepSeek,
    envs: &[(&str, &str)],
    shown: &str,
) -> HostProcess {
    let all = args(dir, &server.url(), "", "hello");
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let mut with_key = vec![("DEEPSEEK_API_KEY", "sk-test")];
    with_key.extend_from_slice(envs);
    let host = HostProcess::start_with_env(&dir.home(), &all, &with_key);
    host.wait_stdout(shown, WAIT);
    host
}

fn killed_mid_answer() -> Seen {
    let (dir, server, mut host, gate) = held_run("sigkill");
    // At once: the answer's chunks may still be in the store's write-behind window.
    host.signal(libc::SIGKILL);
    host.wait_exit(WAIT);
    std::fs::write(&gate, "").unwrap();
    let stdout = host.stdout().join("\n");
    let killed = read_run(
        dir,
        dsh_tests::Output {
            code: None,
            stdout,
            stderr: String::new(),
        },
    );
    let (shown, lost) = stored(&killed.dir.home(), &killed.shown);
    let kept = checkpointed(&killed.shown);
    let checked = sound(&killed.dir.home(), &kept);
    let id = killed.shown[0].0.clone();
    let url = server.url();
    let resumed = resume(killed.dir, &url, &id, "go on");
    let ended = resumed.ended(0, "completed", None);
    let after = resumed.sound();
    Seen::Held(format!(
        "{checked} before the step, {shown}: {} event(s) of the step died with it; resumed {ended}; {after}",
        lost.len()
    ))
}

fn terminated_mid_answer() -> Seen {
    let (dir, _server, mut host, gate) = held_run("sigterm");
    host.signal(libc::SIGTERM);
    let code = host.wait_exit(WAIT);
    std::fs::write(&gate, "").unwrap();
    let stdout = host.stdout().join("\n");
    let run = read_run(
        dir,
        dsh_tests::Output {
            code,
            stdout,
            stderr: host.stderr().join("\n"),
        },
    );
    let ended = run.ended(143, "aborted", None);
    Seen::Held(format!("{ended}; {}", run.sound()))
}

/// A host whose model answers `BEFORE `, then waits for the returned gate file before `AFTER`:
/// answered once `BEFORE` is shown, so a fault can be injected mid-answer. `envs` go to the
/// host besides the API key.
fn gated_run(dir: &TestDir, envs: &[(&str, &str)]) -> (FakeDeepSeek, HostProcess, PathBuf) {
    let gate = dir.join("gate");
    let server = FakeDeepSeek::start(vec![Reply::Sse(vec![
        first_chunk(),
        SseEvent::content("BEFORE "),
        SseEvent::Gate(gate.clone()),
        SseEvent::content("AFTER"),
        SseEvent::Done,
    ])]);
    let host = started(dir, &server, envs, "BEFORE");
    (server, host, gate)
}

/// The run of `host` once it exits.
fn finished(dir: TestDir, mut host: HostProcess) -> Run {
    let code = host.wait_exit(WAIT);
    read_run(
        dir,
        dsh_tests::Output {
            code,
            stdout: host.stdout().join("\n"),
            stderr: host.stderr().join("\n"),
        },
    )
}

/// A disk whose writes start failing: an ext4 image mounted through a loop device, its backing
/// file then made immutable, so the loop device's writes fail and the file system answers the
/// next `fsync` with EIO.
struct FailingDisk {
    image: PathBuf,
    mount: Option<Mount>,
}

impl FailingDisk {
    fn at(at: &Path, image: &Path) -> Result<Self, String> {
        let file = std::fs::File::create(image).map_err(|error| error.to_string())?;
        file.set_len(32 << 20).map_err(|error| error.to_string())?;
        // The file system under the image must take the immutable flag (and give it back).
        for immutable in [true, false] {
            immutable_flag(image, immutable)?;
        }
        let made = Command::new("mkfs.ext4").arg("-q").arg(image).output();
        if !made.as_ref().is_ok_and(|out| out.status.success()) {
            return Err(format!(
                "cannot make an ext4 image here (mkfs.ext4): {made:?}"
            ));
        }
        let mount = Mount::of(
            at,
            &["-o", "loop,errors=continue"],
            image,
            "an image through a loop device",
        )?;
        Ok(Self {
            image: image.to_path_buf(),
            mount: Some(mount),
        })
    }

    /// From now on the disk fails every write.
    fn fail(&self) {
        if let Err(error) = immutable_flag(&self.image, true) {
            panic!("{error}");
        }
    }

    /// Its writes go through again.
    fn mend(&self) {
        let _ = immutable_flag(&self.image, false);
    }
}

/// Sets or clears the immutable flag of `file`.
fn immutable_flag(file: &Path, immutable: bool) -> Result<(), String> {
    let flag = if immutable { "+i" } else { "-i" };
    let set = Command::new("chattr").arg(flag).arg(file).output();
    if set.as_ref().is_ok_and(|out| out.status.success()) {
        return Ok(());
    }
    Err(format!("cannot chattr {flag} the image here: {set:?}"))
}

impl Drop for FailingDisk {
    fn drop(&mut self) {
        // Writable again before it is unmounted and its directory removed.
        self.mend();
        drop(self.mount.take());
    }
}

/// The store's disk starts answering EIO while the model's answer streams (after the prompt's
/// checkpoint): the next sync fails, and the run says so by name and exits non-zero, without
/// claiming what did not reach the disk; what did reads back sound.
fn eio() -> Seen {
    let dir = fault_dir("eio", "");
    let disk = match FailingDisk::at(&dir.home().join("sessions"), &dir.join("disk.img")) {
        Ok(disk) => disk,
        Err(reason) => return Seen::Skipped(reason),
    };
    let (_server, host, gate) = gated_run(&dir, &[]);
    disk.fail();
    std::fs::write(&gate, "").unwrap();
    let run = finished(dir, host);
    // Read back with the disk writable again (what the kernel kept is what is on it).
    disk.mend();
    let (seen, _, _) = write_failed(&run, "I/O", |line| {
        line.contains("Input/output error") || line.contains("os error 5")
    });
    drop(disk);
    drop(run);
    Seen::Held(seen)
}

/// Debian's libfaketime (`cargo xtask test` installs it where it is missing).
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

/// The host's wall clock (only its own: libfaketime preloaded, the monotonic clock left alone)
/// jumps back an hour while the model's answer streams: the turn completes, the events after
/// the jump carry the earlier times the clock gives (no rule refuses them, and nothing waits on
/// the wall clock), and the stored log checks sound with every shown event in it.
fn clock_back() -> Seen {
    if !Path::new(LIBFAKETIME).is_file() {
        return Seen::Skipped(format!(
            "libfaketime is not installed ({LIBFAKETIME}; `cargo xtask test` installs it)"
        ));
    }
    let dir = fault_dir("clock-back", "");
    let clock = dir.join("faketime");
    std::fs::write(&clock, "+0\n").unwrap();
    let clock_file = clock.display().to_string();
    let (_server, host, gate) = gated_run(
        &dir,
        &[
            ("LD_PRELOAD", LIBFAKETIME),
            ("FAKETIME_TIMESTAMP_FILE", clock_file.as_str()),
            ("FAKETIME_NO_CACHE", "1"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
        ],
    );
    std::fs::write(&clock, "-1h\n").unwrap();
    std::fs::write(&gate, "").unwrap();
    let run = finished(dir, host);
    let ended = run.ended(0, "completed", None);
    let times: Vec<i64> = run
        .events()
        .iter()
        .filter_map(|event| event["time"].as_i64())
        .collect();
    let (first, last) = (times.first().copied(), times.last().copied());
    assert!(
        matches!((first, last), (Some(first), Some(last)) if last < first - 30 * 60 * 1000),
        "the clock did not jump back in the host: times {times:?}"
    );
    Seen::Held(format!(
        "{ended}; the last event {} min before the first; {}",
        (first.unwrap_or(0) - last.unwrap_or(0)) / 60_000,
        run.sound()
    ))
}
