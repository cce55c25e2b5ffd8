//! Why a server could not be reached, or cannot take a call now. Each message names the
//! server or the command, since it reaches the log and, while the server is down, the model.

use dsh_plugin_api::{PluginError, SeamError};

use crate::client::ClientError;

/// Why a server's process did not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    /// The sandbox refused the launch (no backend here, a spawn that failed).
    #[error("{0}")]
    Refused(SeamError),
    /// The task reading its output could not be started (the plugin is unloading).
    #[error("{0}")]
    Reader(PluginError),
}

/// Why one attempt to connect failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    #[error("cannot start `{command}`: {error}")]
    Start { command: String, error: StartError },
    #[error("no `http` service to reach the server with")]
    NoHttp,
    /// The task that reads the server's messages could not be started.
    #[error("{0}")]
    Reader(PluginError),
    #[error("{0}")]
    Setup(ClientError),
    #[error("no answer to the handshake within {0} ms")]
    Handshake(u64),
}

/// Why a server takes no call now.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unavailable {
    #[error("MCP server `{name}` is not running ({why}); it is being restarted: try again shortly")]
    Restarting { name: String, why: String },
    #[error("MCP server `{name}` is still starting: try again shortly")]
    Starting { name: String },
    #[error(
        "MCP server `{name}` is not running ({reason}); it will be restarted in {wait:.0} s, its tools are unavailable until then"
    )]
    Down {
        name: String,
        reason: String,
        wait: f64,
    },
    #[error("MCP server `{name}` was stopped")]
    Stopped { name: String },
}
