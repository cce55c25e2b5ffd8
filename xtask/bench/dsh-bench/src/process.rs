//! Whole-process figures: start of `dsh-host` until 100 rows are active (with peak RSS), and
//! hot reload latency of a replaced library (with RSS growth per reload).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use crate::{exe_dir, median, report};

/// The debounce of the host's watcher: reload latency is reported with and without it.
const DEBOUNCE_MS: f64 = 150.0;

pub(crate) fn scratch(name: &str) -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("dsh-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The `dsh-host` the process figures start: `DSH_BENCH_HOST` when set (`cargo xtask bench`
/// points it at the baseline commit's, to measure that host with this harness), else the one
/// built beside this binary.
pub(crate) fn host_exe() -> std::path::PathBuf {
    std::env::var_os("DSH_BENCH_HOST")
        .filter(|host| !host.is_empty())
        .map_or_else(|| exe_dir().join("dsh-host"), std::path::PathBuf::from)
}

/// The arguments of `dsh-host` for [`Host::instant_turn`]: one headless turn of the instant
/// model in `work`, tuned by `patch`.
pub(crate) fn instant_turn_args(patch: &Path, work: &Path) -> Vec<String> {
    let (patch, work) = (patch.display().to_string(), work.display().to_string());
    [
        "--patch",
        &patch,
        "--profile",
        "headless",
        "--no-watch",
        "--",
        "--cwd",
        &work,
        "--model",
        "instant/instant",
        "go",
    ]
    .map(str::to_owned)
    .to_vec()
}

pub(crate) struct Host {
    child: Child,
    lines: Receiver<String>,
}

impl Host {
    pub(crate) fn start(home: &Path, args: &[&str]) -> anyhow::Result<Self> {
        // In the scratch home: a session made without `--cwd` works in the host's directory,
        // which the undo recorder then copies whole (the repository, its build folder too).
        // The host makes its home on first use, but a directory to start in must be there.
        std::fs::create_dir_all(home)?;
        let mut child = Command::new(host_exe())
            .args(args)
            .current_dir(home)
            .env("DSH_HOME", home)
            .env("DSH_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| anyhow::anyhow!("cannot start dsh-host: {error}"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self { child, lines })
    }

    /// The host's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// One headless turn of the instant model (`bench-model`, tuned by `patch`) in `work`,
    /// with `home` as its dsh home: the run every step figure is read from.
    pub(crate) fn instant_turn(home: &Path, patch: &Path, work: &Path) -> anyhow::Result<Self> {
        let args = instant_turn_args(patch, work);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Self::start(home, &args)
    }

    /// The next `bench <name> <number> <value>` line `bench-model` prints, as its request
    /// number and value.
    pub(crate) fn figure(&self, name: &str) -> anyhow::Result<(usize, f64)> {
        let line = self.line_after(&format!("bench {name} "))?;
        let mut parts = line.split_whitespace();
        let number = parts.next().and_then(|n| n.parse().ok());
        let value = parts.next().and_then(|v| v.parse().ok());
        number
            .zip(value)
            .ok_or_else(|| anyhow::anyhow!("bad `bench {name}` line `{line}`"))
    }

    /// Waits until the process exits by itself (a one-shot run).
    pub(crate) fn wait_exit(mut self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                anyhow::bail!("dsh-host did not finish within {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait_lines(&self, needle: &str, count: usize) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = 0;
        while seen < count {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .map_err(|_| anyhow::anyhow!("timed out waiting for `{needle}`"))?;
            if line.contains(needle) {
                seen += 1;
            }
        }
        Ok(())
    }

    /// The rest of the next line that starts with `prefix`.
    pub(crate) fn line_after(&self, prefix: &str) -> anyhow::Result<String> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .map_err(|_| anyhow::anyhow!("timed out waiting for `{prefix}`"))?;
            if let Some(rest) = line.strip_prefix(prefix) {
                return Ok(rest.to_owned());
            }
        }
    }

    /// A `/proc/<pid>/status` field in KiB (`VmHWM` is the peak RSS).
    pub(crate) fn status_kib(&self, field: &str) -> anyhow::Result<f64> {
        status_kib(self.child.id(), field)
    }

    /// Ends the host at once (SIGKILL), as a crash would.
    pub(crate) fn kill(mut self) -> anyhow::Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }

    pub(crate) fn stop(mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            #[allow(unsafe_code, reason = "signalling the child we started")]
            // SAFETY: kill(2) on our own child's pid.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let _ = self.child.wait();
    }
}

fn hundred_rows_yaml() -> String {
    let mut yaml = String::new();
    for index in 0..50 {
        yaml.push_str(&format!(
            "- id: pair-{index}\n  group: true\n  isolate:\n    svc: true\n  config:\n    - id: provider-{index}\n      name: bench-plugin/provider\n    - id: consumer-{index}\n      name: bench-consumer\n      inject: [svc]\n      config:\n        announce: true\n"
        ));
    }
    yaml
}

pub(crate) fn run() -> anyhow::Result<()> {
    let dir = scratch("startup")?;
    let config = dir.join("hundred.yml");
    std::fs::write(&config, hundred_rows_yaml())?;
    let config = config.display().to_string();
    let (mut walls, mut peaks) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let started = Instant::now();
        let host = Host::start(&dir, &["--config", &config, "--no-watch"])?;
        host.wait_lines("ready", 50)?;
        walls.push(started.elapsed().as_secs_f64() * 1e3);
        peaks.push(host.status_kib("VmHWM")? / 1024.0);
        host.stop();
    }
    report("startup_spawn_to_100_active_wall", median(walls), "ms");
    report("startup_rss_100_active", median(peaks), "MiB");
    let _ = std::fs::remove_dir_all(&dir);

    let dir = scratch("reload")?;
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins)?;
    let library = exe_dir().join("libbench_consumer.so");
    let installed = plugins.join("libbench_consumer.so");
    let install = || -> anyhow::Result<()> {
        let aside = plugins.join("incoming.part");
        std::fs::copy(&library, &aside)?;
        Ok(std::fs::rename(&aside, &installed)?)
    };
    install()?;
    let config = dir.join("reload.yml");
    std::fs::write(
        &config,
        "- id: provider\n  name: bench-plugin/provider\n- id: consumer\n  name: bench-consumer\n  inject: [svc]\n  config:\n    announce: true\n",
    )?;
    let host = Host::start(
        &dir,
        &[
            "--config",
            &config.display().to_string(),
            "--plugin-dir",
            &plugins.display().to_string(),
        ],
    )?;
    host.wait_lines("ready", 1)?;
    std::thread::sleep(Duration::from_millis(300));
    let before = host.status_kib("VmRSS")?;
    let mut latencies = Vec::new();
    let reloads = 20;
    for _ in 0..reloads {
        let started = Instant::now();
        install()?;
        host.wait_lines("ready", 1)?;
        latencies.push(started.elapsed().as_secs_f64() * 1e3);
        // Let the watcher's burst end before the next replacement.
        std::thread::sleep(Duration::from_millis(250));
    }
    let after = host.status_kib("VmRSS")?;
    host.stop();
    let latency = median(latencies);
    report("hot_reload_file_to_active", latency, "ms");
    report("hot_reload_after_debounce", latency - DEBOUNCE_MS, "ms");
    report(
        "hot_reload_rss_growth_per_reload",
        (after - before) / 1024.0 / f64::from(reloads),
        "MiB",
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A `kB` field of process `pid`'s `/proc` status (`VmRSS`, `VmHWM`), in KiB.
pub(crate) fn status_kib(pid: u32, field: &str) -> anyhow::Result<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    text.lines()
        .find_map(|line| {
            line.strip_prefix(field)?
                .trim()
                .trim_start_matches(':')
                .trim()
                .strip_suffix("kB")
        })
        .and_then(|value| value.trim().parse::<f64>().ok())
        .ok_or_else(|| anyhow::anyhow!("no {field} in /proc/{pid}/status"))
}

/// User and system CPU time of `pid` so far, in seconds.
pub(crate) fn cpu_seconds(pid: u32) -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command's closing parenthesis: utime and stime are 14th and 15th
    // of the whole line, 12th and 13th after it.
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| anyhow::anyhow!("bad /proc/{pid}/stat"))?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |index: usize| -> anyhow::Result<f64> {
        Ok(fields
            .get(index)
            .ok_or_else(|| anyhow::anyhow!("short /proc/{pid}/stat"))?
            .parse::<f64>()?)
    };
    #[allow(
        unsafe_code,
        reason = "sysconf(_SC_CLK_TCK), the unit of /proc/PID/stat times"
    )]
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Ok((ticks(11)? + ticks(12)?) / per_second)
}
