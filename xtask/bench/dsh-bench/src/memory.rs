//! Where a headless run's memory goes: a real `dsh-host --profile headless` turn of the
//! instant model, each step a `bash true`, read at its 20th step (the run's peak is at its end)
//! from `/proc/<pid>/smaps`: the pages of files (the host binary, the plugin libraries, the
//! system's) against anonymous memory (heap, stacks), and of the files' pages those the process
//! wrote (the relocated data of each library, its own copy), and of the libraries' code how much
//! is resident against how much is mapped (the kernel maps 64 KiB around each page touched, so
//! a start that touches a little of every 64 KiB keeps nearly all of it). The peak RSS is
//! `VmHWM`.

use std::path::Path;

use crate::agent::JSONL_STORE;
use crate::process::{Host, scratch};
use crate::{exe_dir, median, report};

/// What one reading of `/proc/<pid>/smaps` adds up to, in KiB.
#[derive(Default)]
struct Reading {
    /// Memory of no file: heap, stacks.
    anonymous: f64,
    /// Pages of mapped files, the written copies among them.
    file: f64,
    /// Pages of mapped files this process wrote (relocations): copies of its own.
    file_written: f64,
    host_binary: f64,
    /// What the host and the plugin libraries share: the standard library (`libstd-*.so`) and
    /// `plugin-api` (`libdsh_plugin_api.so`).
    shared_libraries: f64,
    plugin_libraries: f64,
    /// The plugin libraries' code: resident, and mapped in all.
    plugin_code: f64,
    plugin_code_mapped: f64,
    plugin_count: usize,
}

impl Reading {
    fn of(pid: u32, plugin_dir: &Path, host: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/smaps"))?;
        let mut reading = Self::default();
        let mut plugins = std::collections::HashSet::new();
        let mut path: Option<String> = None;
        // Whether the mapping read is a plugin library's, and its code.
        let (mut plugin, mut executable) = (false, false);
        for line in text.lines() {
            let Some((key, value)) = line
                .split_once(':')
                .filter(|(key, value)| !key.contains(' ') && value.trim_end().ends_with("kB"))
            else {
                // A mapping's first line: address, mode, offset, device, inode, then its path.
                let mut fields = line.split_whitespace();
                executable = fields.nth(1).is_some_and(|mode| mode.contains('x'));
                path = fields.nth(3).map(str::to_owned);
                plugin = path.as_deref().is_some_and(|file| {
                    let file = Path::new(file);
                    file.parent() == Some(plugin_dir)
                        && file.extension().is_some_and(|ext| ext == "so")
                        && !is_shared_library(file)
                });
                continue;
            };
            let kib: f64 = value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap_or(0.0);
            let file = path.as_deref().filter(|path| path.starts_with('/'));
            if plugin && executable {
                match key {
                    "Rss" => reading.plugin_code += kib,
                    "Size" => reading.plugin_code_mapped += kib,
                    _ => {}
                }
            }
            match (key, file) {
                // In a file's mapping, the pages the loader wrote (relocations) are copies.
                ("Anonymous", Some(_)) => reading.file_written += kib,
                ("Anonymous", None) => reading.anonymous += kib,
                ("Rss", Some(file)) => {
                    reading.file += kib;
                    let file = Path::new(file);
                    if file == host {
                        reading.host_binary += kib;
                    } else if is_shared_library(file) {
                        reading.shared_libraries += kib;
                    } else if plugin {
                        reading.plugin_libraries += kib;
                        plugins.insert(file.to_path_buf());
                    }
                }
                _ => {}
            }
        }
        reading.plugin_count = plugins.len();
        Ok(reading)
    }
}

/// A library the host and the plugin libraries share, beside them: the standard library and
/// `plugin-api`.
fn is_shared_library(file: &Path) -> bool {
    file.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| {
            (name.starts_with("libstd-") && name.ends_with(".so")) || name == "libdsh_plugin_api.so"
        })
}

pub(crate) fn run() -> anyhow::Result<()> {
    let dir = scratch("memory")?;
    let work = dir.join("work");
    std::fs::create_dir_all(&work)?;
    let patch = dir.join("memory.patch.yml");
    // Read at step 20 of 25, so the host is still in its turn when it is read.
    std::fs::write(
        &patch,
        format!(
            "- insert:\n    - id: bench-model\n      name: bench-model\n      config:\n        steps: 25\n        shell: \"true\"\n        report: [20]\n{JSONL_STORE}"
        ),
    )?;
    let plugin_dir = exe_dir();
    let host_binary = plugin_dir.join("dsh-host");
    let mut readings = Vec::new();
    let mut peaks = Vec::new();
    for _ in 0..3 {
        let _ = std::fs::remove_dir_all(dir.join("sessions"));
        let host = Host::instant_turn(&dir, &patch, &work)?;
        host.figure("step_gap_us")?;
        readings.push(Reading::of(host.pid(), &plugin_dir, &host_binary)?);
        peaks.push(host.status_kib("VmHWM")? / 1024.0);
        host.stop();
    }
    let mib = |pick: fn(&Reading) -> f64| median(readings.iter().map(pick).collect()) / 1024.0;
    report("headless_peak_rss", median(peaks), "MiB");
    report("headless_rss_file_pages", mib(|r| r.file), "MiB");
    report(
        "headless_rss_file_pages_written",
        mib(|r| r.file_written),
        "MiB",
    );
    report("headless_rss_anonymous", mib(|r| r.anonymous), "MiB");
    report("headless_rss_host_binary", mib(|r| r.host_binary), "MiB");
    report(
        "headless_rss_shared_libraries",
        mib(|r| r.shared_libraries),
        "MiB",
    );
    report(
        "headless_rss_plugin_libraries",
        mib(|r| r.plugin_libraries),
        "MiB",
    );
    report("headless_rss_plugin_code", mib(|r| r.plugin_code), "MiB");
    report(
        "headless_plugin_code_mapped",
        mib(|r| r.plugin_code_mapped),
        "MiB",
    );
    #[allow(clippy::cast_precision_loss, reason = "a few dozen libraries")]
    let count = median(readings.iter().map(|r| r.plugin_count as f64).collect());
    report("headless_plugin_libraries", count, "libraries");
    if count > 0.0 {
        report(
            "headless_rss_per_plugin_library",
            mib(|r| r.plugin_libraries) * 1024.0 / count,
            "KiB",
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
