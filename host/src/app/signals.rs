//! Shutdown signals: SIGTERM means exit 0 after disposing the tree, SIGINT exit 130.

use tokio::signal::unix::{Signal, SignalKind, signal};

/// SIGTERM and SIGINT, listened for from the moment this is made: the host makes it before its
/// rows start, so a signal that comes while they start is kept for `next` (not the default
/// action, which would end the process without disposing anything).
pub struct Shutdown {
    signals: Option<(Signal, Signal)>,
}

impl Shutdown {
    pub fn listen() -> Self {
        let signals = match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => Some((term, int)),
            _ => {
                tracing::error!("cannot listen for signals; running until killed");
                None
            }
        };
        Self { signals }
    }

    /// Waits for the next SIGTERM or SIGINT and returns the exit code it asks for.
    pub async fn next(&mut self) -> i32 {
        let Some((term, int)) = &mut self.signals else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => 0,
            _ = int.recv() => 130,
        }
    }
}
