//! The integration kit: locate the binaries and libraries `cargo xtask test` built, make
//! throwaway `$DSH_HOME`s, and drive the real `dsh-host` process (one-shot commands, or a
//! running host whose output is read line by line and which is stopped with signals).
//!
//! Tests never start cargo: a missing binary or library fails with a message saying to run the
//! README's test command. Every wait is bounded.
//!
//! Every helper more than one test module uses lives here, in a module named for what it does:
//! `headless` (the headless profile and its stream-json), `web` (the web profile and its API),
//! `fake_deepseek` (the scripted model and what it was sent), `events` and `sessions` (reading
//! what a run logged and stored), `recorded` (the recorded runs the tests replay), `products`
//! (the product doubles), `skills` and `tree` (files and YAML a test writes for the host).
#![allow(
    clippy::disallowed_methods,
    reason = "the test kit drives processes from its own threads and timers"
)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed step is a failed test"
)]

pub mod acp;
pub mod events;
pub mod fake_deepseek;
pub mod headless;
pub mod http;
pub mod line_client;
pub mod postgres;
pub mod products;
pub mod recorded;
pub mod sdk;
pub mod sessions;
pub mod skills;
mod skips;
pub mod tree;
pub mod tui;
pub mod web;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// `target/debug`, found from the running executable: a test (`target/debug/deps/all-*`) or a
/// kit binary (`target/debug/record-demo`).
pub fn target_debug() -> PathBuf {
    let exe = std::env::current_exe().expect("executable path");
    let dir = exe.parent().expect("executable dir");
    if dir.file_name().is_some_and(|name| name == "deps") {
        dir.parent().expect("target/debug").to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

pub fn workspace_root() -> PathBuf {
    target_debug()
        .parent()
        .and_then(Path::parent)
        .expect("workspace root")
        .to_path_buf()
}

fn require(path: PathBuf) -> PathBuf {
    assert!(
        path.is_file(),
        "{} is missing: build everything with the README's test command (`cargo xtask test`)",
        path.display()
    );
    path
}

pub fn host_bin() -> PathBuf {
    require(target_debug().join("dsh-host"))
}

/// A plugin library the workspace builds (`lib<name>.so` next to `dsh-host`).
pub fn plugin_lib(name: &str) -> PathBuf {
    require(target_debug().join(format!("lib{}.so", name.replace('-', "_"))))
}

/// A library built outside the workspace by `cargo xtask test` into `target/fixtures/out`.
pub fn fixture_lib(name: &str) -> PathBuf {
    require(fixture_out().join(format!("lib{}.so", name.replace('-', "_"))))
}

fn fixture_out() -> PathBuf {
    workspace_root().join("target/fixtures/out")
}

/// A text file the fixture build writes beside its libraries.
pub fn fixture_text(name: &str) -> String {
    let path = require(fixture_out().join(name));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
}

/// A scratch directory, removed when dropped.
pub struct TestDir {
    pub path: PathBuf,
}

static DIRS: AtomicUsize = AtomicUsize::new(0);

impl TestDir {
    pub fn new(name: &str) -> Self {
        let serial = DIRS.fetch_add(1, Ordering::Relaxed);
        // Under the system temp dir, not the checkout: Unix socket paths (the status socket under
        // `$DSH_HOME/run`) must stay under 108 bytes wherever the project is cloned.
        let path =
            std::env::temp_dir().join(format!("dsh-test-{name}-{}-{serial}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self { path }
    }

    /// Writes `text` to `relative` (creating directories) and returns the full path.
    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn join(&self, relative: &str) -> PathBuf {
        self.path.join(relative)
    }

    /// The `$DSH_HOME` of this test.
    pub fn home(&self) -> PathBuf {
        self.path.join("home")
    }
}

impl TestDir {
    /// Remembers every project under this directory as trusted, in its dsh home's trust file
    /// (as a person answering the page's question does), for a test whose project's own
    /// `.mcp.json`, hooks, settings or skills must take effect.
    pub fn trust_projects(&self) {
        let home = self.home();
        std::fs::create_dir_all(&home).unwrap();
        let trusted = serde_json::json!({"trusted": [self.path]});
        std::fs::write(home.join("trusted-projects.json"), trusted.to_string()).unwrap();
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Replaces `to` with a copy of `from` atomically (write aside, then rename), as an installer
/// or a build would.
pub fn install_library(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    let aside = to.with_extension("so.part");
    std::fs::copy(from, &aside).unwrap();
    std::fs::rename(&aside, to).unwrap();
}

/// The result of a finished `dsh-host` run.
#[derive(Debug)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// What the stderr of a `dsh-host` the kit starts carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Log {
    /// The full, timestamped log (`RUST_LOG=`[`FULL_LOG_FILTER`]), whose INFO lines the tests
    /// wait for: the kit's default.
    Full,
    /// The host's own default (no `RUST_LOG`, no `-v`): only warnings and errors; INFO and DEBUG
    /// go to a file under `$DSH_HOME/logs`.
    Quiet,
}

/// The filter the host logged to stderr with by default before it had a log file.
pub const FULL_LOG_FILTER: &str = "info";

fn command(home: &Path, args: &[&str], envs: &[(&str, &str)], log: Log) -> Command {
    command_as(None, home, args, envs, log)
}

/// The `dsh-host` command, run as user `uid` (through `setpriv`, with no supplementary groups)
/// when one is given.
fn command_as(
    uid: Option<u32>,
    home: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
    log: Log,
) -> Command {
    let mut command = match uid {
        None => Command::new(host_bin()),
        Some(uid) => {
            let mut setpriv = Command::new("setpriv");
            setpriv
                .args(["--reuid", &uid.to_string(), "--regid", &uid.to_string()])
                .args(["--clear-groups", "--"])
                .arg(host_bin());
            setpriv
        }
    };
    // Provider keys and endpoints, the log filters and the permission preset of the developer's
    // shell never leak into a test (a test that needs one passes it in `envs`).
    for name in [
        "DEEPSEEK_API_KEY",
        "DEEPSEEK_BASE_URL",
        "RUST_LOG",
        "DSH_LOG",
        "DSH_PERMISSION_MODE",
    ] {
        command.env_remove(name);
    }
    if log == Log::Full {
        command.env("RUST_LOG", FULL_LOG_FILTER);
    }
    command.envs(envs.iter().copied());
    command
        .args(args)
        .env("DSH_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `dsh-host ARGS` to completion (at most 60 s).
pub fn run_host(home: &Path, args: &[&str]) -> Output {
    run_host_with_env(home, args, &[])
}

/// Runs `dsh-host ARGS` with extra environment variables.
pub fn run_host_with_env(home: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    run_host_with_log(home, args, envs, Log::Full)
}

/// Runs `dsh-host ARGS` with the host's own logging default (see [`Log::Quiet`]).
pub fn run_host_quiet(home: &Path, args: &[&str]) -> Output {
    run_host_with_log(home, args, &[], Log::Quiet)
}

/// Runs `dsh-host ARGS` to completion (at most 60 s) as user `uid` (root runs it as another
/// user this way), with extra environment variables.
pub fn run_host_as(uid: Option<u32>, home: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut child = command_as(uid, home, args, envs, Log::Full)
        .spawn()
        .expect("start dsh-host");
    let stdout = collect(child.stdout.take().unwrap());
    let stderr = collect(child.stderr.take().unwrap());
    let mut process = HostProcess {
        child,
        stdout,
        stderr,
        exit: None,
    };
    let code = process.wait_exit(Duration::from_secs(60));
    Output {
        code,
        stdout: process.stdout().join("\n"),
        stderr: process.stderr().join("\n"),
    }
}

/// Runs `dsh-host ARGS` with extra environment variables and the given stderr.
pub fn run_host_with_log(home: &Path, args: &[&str], envs: &[(&str, &str)], log: Log) -> Output {
    let mut process = HostProcess::start_with_log(home, args, envs, log);
    let code = process.wait_exit(Duration::from_secs(60));
    Output {
        code,
        stdout: process.stdout().join("\n"),
        stderr: process.stderr().join("\n"),
    }
}

/// The lines read so far, a signal for each new one, and whether the stream has ended.
type Lines = Arc<(Mutex<Vec<String>>, Condvar, AtomicBool)>;

/// A running `dsh-host`, its output collected line by line.
pub struct HostProcess {
    child: Child,
    stdout: Lines,
    stderr: Lines,
    exit: Option<Option<i32>>,
}

fn collect(stream: impl std::io::Read + Send + 'static) -> Lines {
    let lines: Lines = Arc::new((
        Mutex::new(Vec::new()),
        Condvar::new(),
        AtomicBool::new(false),
    ));
    let sink = lines.clone();
    std::thread::spawn(move || {
        let (store, ready, ended) = &*sink;
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            store.lock().unwrap().push(line);
            ready.notify_all();
        }
        // Set under the lock so a waiter cannot miss the wake-up.
        let _guard = store.lock().unwrap();
        ended.store(true, Ordering::SeqCst);
        ready.notify_all();
    });
    lines
}

/// Waits (at most `timeout`) until the stream has ended: after the process exits, what it
/// wrote last may still be in the pipe. A grandchild holding the pipe open ends the wait at
/// the timeout.
fn wait_ended(lines: &Lines, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    let (store, ready, ended) = &**lines;
    let mut guard = store.lock().unwrap();
    while !ended.load(Ordering::SeqCst) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        guard = ready.wait_timeout(guard, left).unwrap().0;
    }
}

fn wait_line(
    lines: &Lines,
    what: &str,
    timeout: Duration,
    matches: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + timeout;
    let (store, ready, _) = &**lines;
    let mut guard = store.lock().unwrap();
    loop {
        if let Some(line) = guard.iter().find(|line| matches(line)) {
            return line.clone();
        }
        let now = Instant::now();
        assert!(
            now < deadline,
            "timed out after {timeout:?} waiting for {what}; got:\n{}",
            guard.join("\n")
        );
        guard = ready.wait_timeout(guard, deadline - now).unwrap().0;
    }
}

impl HostProcess {
    pub fn start(home: &Path, args: &[&str]) -> Self {
        Self::start_with_env(home, args, &[])
    }

    pub fn start_with_env(home: &Path, args: &[&str], envs: &[(&str, &str)]) -> Self {
        Self::start_with_log(home, args, envs, Log::Full)
    }

    /// Starts `dsh-host ARGS` with the host's own logging default (see [`Log::Quiet`]).
    pub fn start_quiet(home: &Path, args: &[&str]) -> Self {
        Self::start_with_log(home, args, &[], Log::Quiet)
    }

    pub fn start_with_log(home: &Path, args: &[&str], envs: &[(&str, &str)], log: Log) -> Self {
        let mut child = command(home, args, envs, log)
            .spawn()
            .expect("start dsh-host");
        let stdout = collect(child.stdout.take().unwrap());
        let stderr = collect(child.stderr.take().unwrap());
        Self {
            child,
            stdout,
            stderr,
            exit: None,
        }
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }

    /// Waits for a stdout line containing `needle` and returns it.
    pub fn wait_stdout(&self, needle: &str, timeout: Duration) -> String {
        wait_line(
            &self.stdout,
            &format!("stdout `{needle}`"),
            timeout,
            |line| line.contains(needle),
        )
    }

    /// Waits until `count` stdout lines contain `needle`.
    pub fn wait_stdout_count(&self, needle: &str, count: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let seen = self.count_stdout(needle);
            if seen >= count {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {count} lines with `{needle}` (saw {seen}); stdout:\n{}\nstderr:\n{}",
                self.stdout().join("\n"),
                self.stderr().join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn wait_stderr(&self, needle: &str, timeout: Duration) -> String {
        wait_line(
            &self.stderr,
            &format!("stderr `{needle}`"),
            timeout,
            |line| line.contains(needle),
        )
    }

    pub fn count_stdout(&self, needle: &str) -> usize {
        self.stdout()
            .iter()
            .filter(|line| line.contains(needle))
            .count()
    }

    pub fn stdout(&self) -> Vec<String> {
        self.stdout.0.lock().unwrap().clone()
    }

    pub fn stderr(&self) -> Vec<String> {
        self.stderr.0.lock().unwrap().clone()
    }

    pub fn signal(&self, signal: i32) {
        // SAFETY: sending a signal to our own child process.
        #[allow(unsafe_code, reason = "libc::kill on the child we started")]
        let result = unsafe { libc::kill(self.pid(), signal) };
        assert_eq!(result, 0, "kill({}, {signal}) failed", self.pid());
    }

    /// Waits for the process to end (at most `timeout`, then it is killed and the test fails).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        if let Some(code) = self.exit {
            return code;
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Let the reader threads drain the pipes.
                wait_ended(&self.stdout, Duration::from_secs(2));
                wait_ended(&self.stderr, Duration::from_secs(2));
                self.exit = Some(status.code());
                return status.code();
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "dsh-host did not exit within {timeout:?}; stdout:\n{}\nstderr:\n{}",
                    self.stdout().join("\n"),
                    self.stderr().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM, then wait for the exit code.
    pub fn stop(&mut self) -> Option<i32> {
        self.signal(libc::SIGTERM);
        self.wait_exit(Duration::from_secs(30))
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        if self.exit.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Collapses runs of whitespace, so table rows can be matched whatever the column widths.
pub fn squash(text: &str) -> String {
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

pub use skips::{CORPUS_ABSENT, bubblewrap, corpus, corpus_dir, needs_corpus, skip};

/// A generous bound for things that normally take milliseconds.
pub const WAIT: Duration = Duration::from_secs(30);

/// Prints a measured figure as `cargo xtask bench` reads it from a test's output
/// (`bench.figure NAME VALUE UNIT`): measured, never asserted.
pub fn figure(name: &str, value: f64, unit: &str) {
    println!("bench.figure {name} {value} {unit}");
}
