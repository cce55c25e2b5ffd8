//! The host's log: a `tracing` subscriber on stderr, and the entry point for records that
//! plugins forward across the boundary.

use std::io::IsTerminal;

use dsh_plugin_api::LogLevel;
use tracing_subscriber::EnvFilter;

/// Installs the stderr subscriber. `DSH_LOG` (or `RUST_LOG`) overrides the default `info`.
pub fn init() {
    let filter = std::env::var("DSH_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|spec| EnvFilter::try_new(spec).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
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
