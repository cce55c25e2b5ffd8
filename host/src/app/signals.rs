//! Shutdown signals: SIGTERM means exit 0 after disposing the tree, SIGINT exit 130.

use tokio::signal::unix::{SignalKind, signal};

/// Waits for SIGTERM or SIGINT and returns the exit code it asks for.
pub async fn wait_for_shutdown() -> i32 {
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot listen for signals; running until killed");
        std::future::pending::<()>().await;
        return 1;
    };
    tokio::select! {
        _ = term.recv() => 0,
        _ = int.recv() => 130,
    }
}
