//! `dsh-host`: the host process of dsh, the Rust counterpart of Cordis plus the native plugin
//! boundary.
//!
//! It owns the plugin runtime (fibers and their derived states, realms and services, the typed
//! event bus with its five dispatch modes, effects and disposal), loading plugin libraries
//! through abi_stable, mounting the config tree composed by `dsh-loader`, hot reload of
//! libraries and config, and the `dsh-host` command line. It owns no agent capability: the
//! session log, the model seam, tools and the loop are plugins mounted from rows.
#![allow(
    clippy::disallowed_methods,
    reason = "the host owns the runtime and its threads; the list is for plugin crates"
)]

pub mod app;
pub mod builtin;
pub mod cli;
pub mod fast_map;
pub mod library;
pub mod logging;
pub mod runtime;

use std::ffi::OsString;

/// Runs the command line and returns the process exit code.
pub fn main_with_args(args: Vec<OsString>) -> i32 {
    let invocation = match cli::parse(args) {
        Ok(invocation) => invocation,
        Err(error) => {
            let code = if error.use_stderr() { 2 } else { 0 };
            let _ = error.print();
            return code;
        }
    };
    // `./.env` and `$DSH_HOME/.env` fill what the inherited environment does not set, first
    // thing, while this is the only thread.
    if invocation.mounts_a_tree() {
        let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."));
        if let Err(error) = app::env_layers::apply(&cwd, &app::boot::home_dir()) {
            eprintln!("error: {error}");
            return 1;
        }
    }
    // `$DSH_HOME` comes from the environment alone, so the log file's place is known before
    // anything logs.
    let log_dir = invocation
        .mounts_a_tree()
        .then(|| app::boot::home_dir().join("logs"));
    logging::init(invocation.verbose(), log_dir.as_deref());
    builtin::init_tls();
    // One thread drives every plugin: transitions and dispatches interleave only at await
    // points, as in Cordis; blocking work goes to the blocking pool.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return 1;
        }
    };
    let code = runtime.block_on(async move {
        match invocation {
            cli::Invocation::Run { host, app_args } => app::run::run(host.into(), app_args).await,
            cli::Invocation::Sub { command, .. } => match command {
                cli::Command::Check { tree, json } => app::run::check(tree.into(), json).await,
                cli::Command::Status { json } => {
                    cli::status::status(&app::boot::home_dir(), json).await
                }
                cli::Command::Session { command } => {
                    cli::session::run(&app::boot::home_dir(), command)
                }
                cli::Command::Schema => {
                    use std::io::Write;
                    let document = dsh_client_protocol::schema_document();
                    let text = serde_json::to_string_pretty(&document).unwrap_or_default();
                    // A reader that stops early (`| head`) is not an error of ours.
                    let _ = writeln!(std::io::stdout().lock(), "{text}");
                    0
                }
            },
        }
    });
    // Plugin tasks may still be parked on the runtime; do not wait for them.
    runtime.shutdown_background();
    code
}
