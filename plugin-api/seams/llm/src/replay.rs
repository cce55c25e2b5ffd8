//! Answering a session's model requests from a recorded log: the `llm-replay` row mounted on a
//! log (its nested agents' logs, `session.1.jsonl`, `session.2.jsonl`..., read beside it), as
//! the runners' `--replay FILE` does (headless, the SDK runtime, the ACP agent), so a recorded
//! case re-runs with no network and no key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_plugin_api::cancel::{Either, first_of};
use dsh_plugin_api::{Context, PluginError};

/// The plugin that answers from a recorded log.
pub const REPLAY_PLUGIN: &str = "llm-replay";

/// How long the replay row may take to start.
const REPLAY_START: Duration = Duration::from_secs(5);

/// Why a recorded log cannot answer.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("--replay {0}: no such file")]
    Missing(String),
    #[error("--replay: {0}")]
    Mount(PluginError),
    #[error("--replay: the llm-replay plugin did not start within 5 s")]
    Slow,
}

/// How a replay answers besides its log (the runners' `--replay` takes the defaults).
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayOptions<'a> {
    /// Answer only requests naming this provider, passing the others on (a replay beside real
    /// sessions, as the web's offline demo); `None` answers every request.
    pub provider: Option<&'a str>,
    /// Start the log over once it is played out (a demo run again and again).
    pub repeat: bool,
}

#[derive(dsh_plugin_api::Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
struct ReplayConfig<'a> {
    log: PathBuf,
    child_files: Vec<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<&'a str>,
    repeat: bool,
}

/// Mounts `llm-replay` on `log` (its child logs beside it) and waits until it listens.
pub async fn mount_replay(ctx: &Context, log: &Path) -> Result<(), ReplayError> {
    mount_replay_with(ctx, log, ReplayOptions::default()).await
}

/// [`mount_replay`] with `options`.
pub async fn mount_replay_with(
    ctx: &Context,
    log: &Path,
    options: ReplayOptions<'_>,
) -> Result<(), ReplayError> {
    if !log.is_file() {
        return Err(ReplayError::Missing(log.display().to_string()));
    }
    // Mounted once the profile's own rows have started: its `llm/stream` listeners then sit
    // before the replay, as they sit before a real provider (a listener registered after a
    // provider's would never be reached). The host starts rows while it still loads the later
    // rows' libraries, so a caller's task may get here before the last row is mounted.
    let _ = first_of(ctx.tree_settled(), ctx.sleep(REPLAY_START)).await;
    let log = log.canonicalize().unwrap_or_else(|_| log.to_path_buf());
    let child_files: Vec<PathBuf> = (1..)
        .map(|n| log.with_file_name(format!("session.{n}.jsonl")))
        .take_while(|child| child.is_file())
        .collect();
    let fiber = ctx
        .mount(
            REPLAY_PLUGIN,
            &ReplayConfig {
                log,
                child_files,
                provider: options.provider,
                repeat: options.repeat,
            },
        )
        .map_err(ReplayError::Mount)?;
    match first_of(ctx.settled(fiber), ctx.sleep(REPLAY_START)).await {
        Either::Left(Ok(())) => Ok(()),
        Either::Left(Err(error)) => Err(ReplayError::Mount(error)),
        Either::Right(()) => Err(ReplayError::Slow),
    }
}
