//! The commands: run a tree until a signal, `check` a tree, print the composed config.

use std::sync::Arc;
use std::time::Duration;

use dsh_plugin_api::abi::ErasedService;
use dsh_plugin_api::{CmdlineArgs, PluginError, RString, RVec};

use crate::app::App;
use crate::app::boot::{Boot, BootError, TreeSpec};

use crate::app::diagnostics::{check_exit_code, render_table};
use crate::app::status::snapshot;
use crate::runtime::Runtime;

/// What a run is asked for, besides its tree's own arguments.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub tree: TreeSpec,
    /// Print the composed rows with the layer that last changed each, and exit.
    pub dump_config: bool,
    /// With `dump_config`: the agent preset whose rows are printed too.
    pub dump_preset: Option<String>,
    /// Do not watch plugin directories and config files for changes.
    pub no_watch: bool,
}

/// How long disposers may run at shutdown before their fiber is named and abandoned.
const DISPOSE_GRACE: Duration = Duration::from_secs(5);

/// Why a tree could not be started: printed as `error: ...`, exit 1.
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error(transparent)]
    Boot(#[from] BootError),
    /// The host's own `host` or `cmdline` service was refused.
    #[error(transparent)]
    HostService(#[from] PluginError),
}

/// Builds the app for `tree` and mounts it. Errors name the file, row or field.
/// The app made, its exit channel, and the rows it is to mount.
type Booted = (
    Arc<App>,
    tokio::sync::mpsc::UnboundedReceiver<i32>,
    Vec<dsh_loader::ResolvedRow>,
);

fn boot_app(boot: &Boot, app_args: Vec<String>) -> Result<Booted, StartError> {
    let rows = boot.load()?;
    let runtime = Runtime::new();
    let (exits, slot) = crate::app::control::provide(&runtime)?;
    let cmdline = CmdlineArgs {
        args: app_args.into_iter().map(RString::from).collect::<RVec<_>>(),
    };
    runtime.provide_host(dsh_plugin_api::CMDLINE_SERVICE, ErasedService::new(cmdline))?;
    let libraries = Arc::new(boot.libraries());
    runtime.bus().set_layout_record(libraries.layout_record());
    let app = Arc::new(App::new(runtime, libraries));
    let _ = slot.set(Arc::downgrade(&app));
    Ok((app, exits, rows))
}

/// `dsh-host [--config FILE | --profile NAME] ...`: runs until SIGTERM (exit 0) or SIGINT
/// (exit 130); a second signal exits at once.
pub async fn run(host: RunOptions, app_args: Vec<String>) -> i32 {
    let boot = Boot::new(host.tree);
    if host.dump_config {
        if !app_args.is_empty() {
            eprintln!(
                "error: --dump-config takes no app arguments (got: {})",
                app_args.join(" ")
            );
            return 2;
        }
        let dumped = boot.dump().and_then(|text| match &host.dump_preset {
            None => Ok(text),
            Some(id) => boot.dump_preset(id).map(|preset| format!("{text}{preset}")),
        });
        return match dumped {
            Ok(text) => {
                if text.ends_with('\n') {
                    print!("{text}")
                } else {
                    println!("{text}")
                }
                0
            }
            Err(error) => {
                eprintln!("error: {error}");
                1
            }
        };
    }
    let (app, mut exits, rows) = match boot_app(&boot, app_args) {
        Ok(booted) => booted,
        Err(error) => {
            eprintln!("error: {error}");
            return 1;
        }
    };
    // Answering before the first row mounts: whatever a row says while it starts, the host is
    // already there for `dsh-host status` to ask.
    let status = crate::app::status::serve(&boot.home, app.clone());
    let mut shutdown = crate::app::signals::Shutdown::listen();
    let (mounted, tree_mounted) = tokio::sync::oneshot::channel();
    let watcher = if host.no_watch {
        None
    } else {
        crate::app::reload::watch(&boot, app.clone(), tree_mounted)
    };
    app.mount_tree(rows).await;
    let _ = mounted.send(());
    let (code, signal) = tokio::select! {
        code = shutdown.next() => (code, Some(if code == 130 { 2 } else { 15 })),
        Some(code) = exits.recv() => (code, None),
    };
    tracing::info!("shutting down");
    // No reload may mount rows while the tree is being disposed.
    drop(watcher);
    let announce =
        crate::app::control::announce_stop(app.runtime(), &mut exits, code, signal, DISPOSE_GRACE);
    let code = tokio::select! {
        code = announce => code,
        second = shutdown.next() => {
            tracing::warn!("second signal: exiting at once");
            return second;
        }
    };
    let disposing = app.runtime().dispose_all(DISPOSE_GRACE);
    tokio::select! {
        () = disposing => {}
        second = shutdown.next() => {
            tracing::warn!("second signal: exiting at once");
            return second;
        }
    }
    drop(status);
    code
}

/// `dsh-host check`: boot, settle, print, dispose, exit 0/1/2.
pub async fn check(tree: TreeSpec, json: bool) -> i32 {
    let boot = Boot::new(tree);
    let app = match boot_app(&boot, Vec::new()) {
        Ok((app, _exits, rows)) => {
            app.mount_tree(rows).await;
            app
        }
        Err(error) => {
            eprintln!("error: {error}");
            return 1;
        }
    };
    let settled = app
        .runtime()
        .settle(Duration::from_millis(200), Duration::from_secs(30))
        .await;
    let reports = app.runtime().report();
    let snapshot = snapshot(&app);
    if json {
        let value = serde_json::json!({ "settled": settled, "snapshot": snapshot });
        println!("{value}");
    } else {
        print!("{}", render_table(&snapshot));
        if !settled {
            println!("(the tree did not settle within 30 s)");
        }
    }
    app.runtime().dispose_all(DISPOSE_GRACE).await;
    check_exit_code(&reports)
}
