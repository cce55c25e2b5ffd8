//! The terminal UI as a person feels it (issue 23): the release `dsh`, with its own
//! `dsh-host --profile sdk` child, in a pane of a tmux server of this bench's own, against the
//! instant bench model. Keys go in with `send-keys`, the screen comes back with
//! `capture-pane`, so every figure includes what a terminal adds, and a poll of the screen
//! (a few milliseconds) is the resolution of the latency figures. Measured: start to a ready
//! composer, keystroke to echo, an answer streamed at 2,000 words (tokens) a second (the TUI's
//! CPU while it paints, and whether every word arrived), a 10,000-event session reopened to its
//! last message drawn, and the peak RSS of the TUI and of the TUI with its host. Where
//! `DSH_BENCH_CODEX` names the Codex CLI's native binary and `DSH_BENCH_FAKE_SERVER` the
//! agents-bench fake model (`fake_server.py`), Codex's TUI is driven the same way against that
//! model (start to its composer, keystroke to echo, peak RSS after one turn of one tool step),
//! its figures prefixed `codex_`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::process::{Host, cpu_seconds, scratch, status_kib};
use crate::web::percentile;
use crate::{exe_dir, median, report};

const WIDTH: u16 = 100;
const HEIGHT: u16 = 30;
/// What the composer shows when it is empty, and what the status line says until the host
/// confirmed the session's subscription.
const COMPOSER: &str = "Ask anything";
const OPENING: &str = "opening the session";
/// What the status line says while a turn runs, and once none does.
const WORKING: &str = "working (Esc cancels)";
const IDLE: &str = "idle";
/// Steps of the recorded session reopened (about 7 events each: 10,000 and more).
const HISTORY_STEPS: usize = 1_500;
/// The streamed answer: this many deltas of four words, one every two milliseconds (2,000
/// words a second; a pace of one millisecond is more than the timer keeps to).
const STREAM_DELTAS: usize = 2_500;
const WORDS_PER_DELTA: usize = 4;
const PACE_MS: u64 = 2;
const STARTS: usize = 5;
const KEYSTROKES: usize = 40;
const WAIT: Duration = Duration::from_secs(120);

/// A tmux server of the bench's own (its socket in the scratch folder) with one pane.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn start(dir: &Path, cwd: &Path, envs: &[(&str, String)]) -> anyhow::Result<Self> {
        let tmux = Self {
            socket: dir.join("tmux.sock"),
        };
        // The scrollback must hold the whole answer, and a pane keeps the history limit it
        // was created with: set it in the server's configuration, before the pane.
        let config = dir.join("tmux.conf");
        std::fs::write(
            &config,
            "set-option -g history-limit 50000\nset-option -g remain-on-exit on\n",
        )?;
        tmux.run(&[
            "-f",
            &config.display().to_string(),
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            &WIDTH.to_string(),
            "-y",
            &HEIGHT.to_string(),
            "-c",
            &cwd.display().to_string(),
            "-e",
            "TERM=xterm-256color",
            "sleep 3600",
        ])?;
        for (name, value) in envs {
            tmux.run(&["set-environment", "-t", "t", name, value])?;
        }
        Ok(tmux)
    }

    fn run(&self, args: &[&str]) -> anyhow::Result<Output> {
        let output = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()?;
        if !output.status.success() {
            anyhow::bail!(
                "tmux {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(output)
    }

    /// Replaces the pane's program with `COMMAND` (exec'd by the pane's shell, so the pane's
    /// process is the program itself); answers when it was asked to start.
    fn respawn(&self, command: &str) -> anyhow::Result<Instant> {
        let started = Instant::now();
        let command = format!("exec {command}");
        self.run(&["respawn-pane", "-k", "-t", "t", &command])?;
        self.run(&["clear-history", "-t", "t"])?;
        Ok(started)
    }

    fn screen(&self) -> anyhow::Result<String> {
        let output = self.run(&["capture-pane", "-p", "-t", "t"])?;
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    fn everything(&self) -> anyhow::Result<String> {
        let output = self.run(&["capture-pane", "-p", "-t", "t", "-S", "-", "-E", "-"])?;
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Polls the screen (no pause between polls) until `done`; answers when it was seen.
    fn wait(&self, what: &str, done: impl Fn(&str) -> bool) -> anyhow::Result<Instant> {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen()?;
            if done(&screen) {
                return Ok(Instant::now());
            }
            if Instant::now() > deadline {
                anyhow::bail!("waited {WAIT:?} for {what}; the pane shows:\n{screen}");
            }
        }
    }

    fn pane_pid(&self) -> anyhow::Result<u32> {
        let output = self.run(&["display-message", "-p", "-t", "t", "#{pane_pid}"])?;
        Ok(String::from_utf8_lossy(&output.stdout).trim().parse()?)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

fn ready(screen: &str) -> bool {
    screen.contains(COMPOSER) && !screen.contains(OPENING)
}

pub(crate) fn run() -> anyhow::Result<()> {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("dsh-bench: no tmux here: the terminal UI figures are skipped");
        return Ok(());
    }
    let dir = scratch("tui")?;
    let result = ours(&dir).and_then(|()| codex(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn ours(dir: &Path) -> anyhow::Result<()> {
    let home = dir.join("home");
    let work = dir.join("work");
    std::fs::create_dir_all(&work)?;
    let recorded = record_history(dir, &home, &work)?;
    // Every later host of this home (the TUI's own) answers with the paced word stream.
    std::fs::write(
        home.join("cordis.patch.yml"),
        format!(
            "- insert:\n    - id: bench-model\n      name: bench-model\n      config:\n        steps: 0\n        textDeltas: {STREAM_DELTAS}\n        wordsPerDelta: {WORDS_PER_DELTA}\n        paceMs: {PACE_MS}\n"
        ),
    )?;
    let tmux = Tmux::start(dir, &work, &[("DSH_HOME", home.display().to_string())])?;
    let dsh = exe_dir().join("dsh").display().to_string();
    starts_and_keystrokes(
        &tmux,
        "tui",
        &format!("{dsh} --model instant/instant"),
        ready,
    )?;

    // The last start's session: the streamed answer.
    let tui = tmux.pane_pid()?;
    let words = STREAM_DELTAS * WORDS_PER_DELTA;
    let cpu_before = cpu_seconds(tui)?;
    let sent = Instant::now();
    tmux.run(&["send-keys", "-t", "t", "Enter"])?;
    // The turn runs, then ends (its answer then goes to the scrollback whole).
    tmux.wait("the turn to run", |screen| screen.contains(WORKING))?;
    tmux.wait("the turn to end", |screen| {
        screen.contains(IDLE) && !screen.contains(WORKING)
    })?;
    let elapsed = sent.elapsed().as_secs_f64();
    let cpu = cpu_seconds(tui)? - cpu_before;
    let captured = tmux.everything()?;
    if std::env::var_os("DSH_BENCH_DUMP").is_some() {
        let _ = std::fs::write("/tmp/tui-capture.txt", &captured);
    }
    let everything: std::collections::HashSet<String> =
        captured.split_whitespace().map(str::to_owned).collect();
    let missing = (1..=words)
        .filter(|word| !everything.contains(&format!("w{word}")))
        .count();
    report("tui_stream_words_per_s", words as f64 / elapsed, "words/s");
    report("tui_stream_cpu", cpu / elapsed * 100.0, "%");
    report("tui_stream_words_missing", missing as f64, "words");
    let own = status_kib(tui, "VmHWM")?;
    report("tui_rss_peak", own / 1024.0, "MiB");
    let host: f64 = children(tui)
        .into_iter()
        .filter_map(|child| status_kib(child, "VmHWM").ok())
        .sum();
    report("tui_and_host_rss_peak", (own + host) / 1024.0, "MiB");

    let mut reopens = Vec::new();
    for _ in 0..3 {
        let started = tmux.respawn(&format!("{dsh} --resume {recorded}"))?;
        let seen = tmux.wait("the reopened session's last answer", |screen| {
            screen.contains("w1 w2 w3") && ready(screen)
        })?;
        reopens.push(ms(seen - started));
    }
    report("tui_reopen_10k_events", median(reopens), "ms");
    Ok(())
}

/// Starts `command` [`STARTS`] times to its ready composer, then types [`KEYSTROKES`] keys
/// into the last one's, each waited for on the screen; reports `PREFIX_start_to_composer`
/// and `PREFIX_keystroke_echo_p50`/`_p95`.
fn starts_and_keystrokes(
    tmux: &Tmux,
    prefix: &str,
    command: &str,
    ready: impl Fn(&str) -> bool,
) -> anyhow::Result<()> {
    let mut starts = Vec::new();
    for _ in 0..STARTS {
        let started = tmux.respawn(command)?;
        let seen = tmux.wait("a ready composer", &ready)?;
        starts.push(ms(seen - started));
    }
    report(&format!("{prefix}_start_to_composer"), median(starts), "ms");
    let mut echoes = Vec::new();
    for typed in 1..=KEYSTROKES {
        let sent = Instant::now();
        tmux.run(&["send-keys", "-t", "t", "-l", "x"])?;
        let line = "x".repeat(typed);
        let seen = tmux.wait("the typed character", |screen| screen.contains(&line))?;
        echoes.push(ms(seen - sent));
    }
    report(
        &format!("{prefix}_keystroke_echo_p50"),
        percentile(echoes.clone(), 0.5),
        "ms",
    );
    report(
        &format!("{prefix}_keystroke_echo_p95"),
        percentile(echoes, 0.95),
        "ms",
    );
    Ok(())
}

/// Codex's TUI against the fake model, where both are named (see the module's doc).
fn codex(dir: &Path) -> anyhow::Result<()> {
    let (Some(codex), Some(server)) = (
        std::env::var_os("DSH_BENCH_CODEX"),
        std::env::var_os("DSH_BENCH_FAKE_SERVER"),
    ) else {
        eprintln!(
            "dsh-bench: DSH_BENCH_CODEX or DSH_BENCH_FAKE_SERVER is not set: Codex's TUI is not measured"
        );
        return Ok(());
    };
    let work = dir.join("codex-work");
    let home = dir.join("codex-home");
    std::fs::create_dir_all(&work)?;
    std::fs::create_dir_all(&home)?;
    let port_file = dir.join("fake-port");
    let mut server = Command::new("python3")
        .arg(&server)
        .args(["--port", "0", "--max-seconds", "600", "--port-file"])
        .arg(&port_file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let measured = (|| {
        let port = wait_port(&port_file)?;
        std::fs::write(home.join("config.toml"), codex_config(port, &work))?;
        let tmux = Tmux::start(
            dir,
            &work,
            &[
                ("CODEX_HOME", home.display().to_string()),
                ("FAKE_API_KEY", "bench".to_owned()),
            ],
        )?;
        let command = Path::new(&codex).display().to_string();
        starts_and_keystrokes(&tmux, "codex_tui", &command, |screen| {
            screen.contains(CODEX_COMPOSER)
        })?;
        let pid = tmux.pane_pid()?;
        tmux.run(&["send-keys", "-t", "t", "Enter"])?;
        tmux.wait("Codex's answer", |screen| screen.contains("DONE"))?;
        report(
            "codex_tui_rss_peak",
            status_kib(pid, "VmHWM")? / 1024.0,
            "MiB",
        );
        Ok(())
    })();
    let _ = server.kill();
    let _ = server.wait();
    end_started_under(&home);
    measured
}

/// Ends what this run started from `home` and left behind: Codex's TUI starts an app-server
/// daemon from its home's packages that outlives the pane (found by its executable's path).
fn end_started_under(home: &Path) {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let started_here =
            std::fs::read_link(entry.path().join("exe")).is_ok_and(|exe| exe.starts_with(home));
        if started_here {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

/// The placeholder of Codex's empty composer.
const CODEX_COMPOSER: &str = "Ask Codex to do anything";

/// Codex against the fake model's Responses wire, approving nothing, with `work` trusted (so
/// no first-run question stands before the composer).
fn codex_config(port: u16, work: &Path) -> String {
    format!(
        "model = \"fake-model\"\nmodel_provider = \"fake\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\ncheck_for_update_on_startup = false\n\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nenv_key = \"FAKE_API_KEY\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n\n[analytics]\nenabled = false\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        work.display()
    )
}

fn wait_port(file: &Path) -> anyhow::Result<u16> {
    for _ in 0..100 {
        if let Ok(text) = std::fs::read_to_string(file)
            && let Ok(port) = text.trim().parse()
        {
            return Ok(port);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    anyhow::bail!("the fake model server wrote no port to {}", file.display())
}

/// A long session recorded by a headless turn of the instant model; answers its id. Its
/// closing answer is `w1 w2 w3`, which the reopen waits for.
fn record_history(dir: &Path, home: &Path, work: &Path) -> anyhow::Result<String> {
    let patch = dir.join("history.patch.yml");
    std::fs::write(
        &patch,
        format!(
            "- insert:\n    - id: bench-model\n      name: bench-model\n      config:\n        steps: {HISTORY_STEPS}\n        textDeltas: 3\n- id: agent-loop\n  config:\n    maxSteps: {}\n",
            HISTORY_STEPS + 10
        ),
    )?;
    Host::instant_turn(home, &patch, work)?.wait_exit(Duration::from_secs(300))?;
    let listed = Command::new(exe_dir().join("dsh-host"))
        .args(["session", "list", "--json"])
        .env("DSH_HOME", home)
        .output()?;
    let sessions: serde_json::Value = serde_json::from_slice(&listed.stdout)?;
    sessions
        .as_array()
        .and_then(|all| all.first())
        .and_then(|first| first["id"].as_str())
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("no recorded session in `dsh-host session list`"))
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|child| child.parse().ok())
        .collect()
}
