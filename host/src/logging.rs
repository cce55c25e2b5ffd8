//! The host's log, and the entry point for records that plugins forward across the boundary.
//!
//! By default a terminal user's stderr carries only what is meant for them: warnings and errors,
//! in a short form (`warning: ...`, `error: ...`, with the record's fields such as `row=` and
//! `plugin=`). A process that mounts a tree (a run, `check`) writes its INFO and DEBUG records,
//! timestamped, to its own file under `$DSH_HOME/logs`; the newest [`KEEP_LOG_FILES`] are kept.
//! `-v`/`--verbose`, or a filter in `RUST_LOG` (or `DSH_LOG`, which wins), puts the full,
//! timestamped log on stderr instead, and no file is written.

use std::fs::{File, OpenOptions};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use dsh_plugin_api::LogLevel;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The filter of the full log on stderr when `-v` is given without `RUST_LOG`.
pub const VERBOSE_FILTER: &str = "info";

/// The log file's filter: INFO from everything, DEBUG from the dsh crates (a target directive
/// matches by prefix, so `dsh` covers `dsh_host`, `dsh_loader`, ...; plugin records are logged
/// by `dsh_host::logging`).
const FILE_FILTER: &str = "info,dsh=debug";

/// How many log files `$DSH_HOME/logs` keeps (the new one included).
pub const KEEP_LOG_FILES: usize = 20;

/// Installs the subscriber. `verbose` is `-v`; `log_dir` is `$DSH_HOME/logs` when this process
/// mounts a tree (otherwise no file is written and INFO and DEBUG are dropped).
pub fn init(verbose: bool, log_dir: Option<&Path>) {
    install_panic_hook();
    let spec = env_filter_spec();
    if verbose || spec.is_some() {
        let (filter, bad_spec) = match spec {
            Some(spec) => match EnvFilter::try_new(&spec) {
                Ok(filter) => (filter, None),
                Err(error) => (EnvFilter::new(VERBOSE_FILTER), Some((spec, error))),
            },
            None => (EnvFilter::new(VERBOSE_FILTER), None),
        };
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_target(false)
            .try_init();
        if let Some((spec, error)) = bad_spec {
            tracing::warn!(
                "log filter `{spec}` (RUST_LOG or DSH_LOG) is not valid ({error}); logging \
                 `{VERBOSE_FILTER}`"
            );
        }
        return;
    }
    let file = log_dir.map(|dir| open_log_file(dir).map_err(|error| (dir, error)));
    let stderr = tracing_subscriber::fmt::layer()
        .event_format(Short {
            ansi: std::io::stderr().is_terminal(),
        })
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(LevelFilter::WARN);
    let to_file = match &file {
        Some(Ok(file)) => Some(
            tracing_subscriber::fmt::layer()
                .with_writer(file.clone())
                .with_ansi(false)
                .with_target(false)
                .with_filter(EnvFilter::new(FILE_FILTER)),
        ),
        _ => None,
    };
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(to_file)
        .try_init();
    if let Some(Err((dir, error))) = file {
        tracing::warn!(
            "cannot write a log file in {}: {error}; only warnings and errors are shown, on \
             stderr (-v shows everything)",
            dir.display()
        );
    }
}

/// Sends panics to the log as errors, with where they happened. The host and the plugin
/// libraries built with it share one standard library (`prefer-dynamic`), hence one hook for
/// every panic of the process; a plugin's file names its crate. A plugin that links its own
/// standard library installs its own hook (`dsh_plugin_api`'s logging). With `RUST_BACKTRACE`
/// set, the standard hook's report, backtrace included, follows on stderr.
fn install_panic_hook() {
    let standard = std::panic::take_hook();
    let backtrace = std::env::var_os("RUST_BACKTRACE").is_some_and(|value| value != "0");
    std::panic::set_hook(Box::new(move |info| {
        tracing::error!("{}", dsh_plugin_api::panic_report(info));
        if backtrace {
            standard(info);
        }
    }));
}

/// `DSH_LOG`, else `RUST_LOG`, when set to something.
fn env_filter_spec() -> Option<String> {
    ["DSH_LOG", "RUST_LOG"]
        .into_iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|spec| !spec.trim().is_empty())
}

/// Creates `dir`, opens this process's file in it (`dsh-host-<UTC date>-<time>-<pid>.log`) and
/// prunes the older files to the newest [`KEEP_LOG_FILES`].
fn open_log_file(dir: &Path) -> std::io::Result<Arc<File>> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!(
        "dsh-host-{}-{}.log",
        utc_stamp(SystemTime::now()),
        std::process::id()
    ));
    let file = OpenOptions::new().create(true).append(true).open(&path)?;
    prune(dir, &path, KEEP_LOG_FILES);
    Ok(Arc::new(file))
}

/// Removes the `dsh-host-*.log` files of `dir` but the `keep` most recently modified (`current`
/// always among them). Other files (ABI reports) are left alone; failures are ignored.
fn prune(dir: &Path, current: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut logs: Vec<(SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with("dsh-host-") && name.ends_with(".log")
        })
        .filter(|entry| entry.path() != current)
        .map(|entry| {
            let modified = entry
                .metadata()
                .and_then(|metadata| metadata.modified())
                .unwrap_or(UNIX_EPOCH);
            (modified, entry.path())
        })
        .collect();
    // Newest first; equal times by name, whose stamp sorts by start time.
    logs.sort_by(|a, b| b.cmp(a));
    for (_, path) in logs.into_iter().skip(keep.saturating_sub(1)) {
        let _ = std::fs::remove_file(path);
    }
}

/// `YYYYMMDD-HHMMSS` in UTC.
fn utc_stamp(time: SystemTime) -> String {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0);
    let (year, month, day) = civil_from_days(secs / 86_400);
    let of_day = secs % 86_400;
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// `warning: message key=value ...`: a record for a person at a terminal, without timestamp or
/// level padding.
struct Short {
    ansi: bool,
}

impl<S, N> FormatEvent<S, N> for Short
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let (label, color) = match *event.metadata().level() {
            Level::ERROR => ("error", "\x1b[1;31m"),
            Level::WARN => ("warning", "\x1b[1;33m"),
            Level::INFO => ("info", "\x1b[1;32m"),
            Level::DEBUG => ("debug", "\x1b[1;34m"),
            Level::TRACE => ("trace", "\x1b[1;35m"),
        };
        if self.ansi {
            write!(writer, "{color}{label}\x1b[0m: ")?;
        } else {
            write!(writer, "{label}: ")?;
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        // A plugin library that shares the host's `tracing` logs here directly: its crate
        // says where the record came from (one with a `tracing` of its own is forwarded
        // through `plugin_record`, which names its library).
        let source = event.metadata().target().split("::").next().unwrap_or("");
        if !source.is_empty() && source != "dsh_host" {
            write!(writer, " plugin={source}")?;
        }
        writeln!(writer)
    }
}

/// A record from plugin code, attributed to its source (`row `x` (plugin)` or `library:target`).
pub fn plugin_record(level: LogLevel, source: &str, message: &str) {
    match level {
        LogLevel::Trace => tracing::trace!(plugin = source, "{message}"),
        LogLevel::Debug => tracing::debug!(plugin = source, "{message}"),
        LogLevel::Info => tracing::info!(plugin = source, "{message}"),
        LogLevel::Warn => tracing::warn!(plugin = source, "{message}"),
        LogLevel::Error => tracing::error!(plugin = source, "{message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn stamps_are_utc_dates() {
        assert_eq!(utc_stamp(UNIX_EPOCH), "19700101-000000");
        assert_eq!(
            utc_stamp(UNIX_EPOCH + Duration::from_secs(1_700_000_000)),
            "20231114-221320"
        );
        // A leap day, and the last second of a century year.
        assert_eq!(
            utc_stamp(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "20000229-000000"
        );
        assert_eq!(
            utc_stamp(UNIX_EPOCH + Duration::from_secs(4_102_444_799)),
            "20991231-235959"
        );
    }

    #[test]
    fn pruning_keeps_the_newest_and_other_files() {
        let dir = std::env::temp_dir().join(format!("dsh-host-prune-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for index in 0..5u64 {
            let file = File::create(dir.join(format!("dsh-host-old-{index}.log"))).unwrap();
            file.set_modified(UNIX_EPOCH + Duration::from_secs(1000 + index))
                .unwrap();
        }
        std::fs::write(dir.join("abi-mismatch-x-1.txt"), "report").unwrap();
        let current = dir.join("dsh-host-new.log");
        File::create(&current)
            .unwrap()
            .set_modified(UNIX_EPOCH)
            .unwrap();
        prune(&dir, &current, 3);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "abi-mismatch-x-1.txt",
                "dsh-host-new.log",
                "dsh-host-old-3.log",
                "dsh-host-old-4.log"
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
