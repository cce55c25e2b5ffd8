//! Plugin `hook-scripts`: runs the command hooks people already wrote for Claude Code or Codex.
//! A row reads one format's hook files (Claude Code's settings files, the `hooks` key of
//! `~/.claude/settings.json`, `.claude/settings.json` and `.claude/settings.local.json`; Codex's
//! `~/.codex/hooks.json` and `.codex/hooks.json`; relative paths under each session's working
//! directory) and runs their hooks on our points: SessionStart on `agent/session-start`,
//! UserPromptSubmit on `agent/prompt-submit`, PreToolUse and PostToolUse on the tool
//! pipeline's `tools/pre-execute` and `tools/post-execute`, Stop on `agent/turn-stopping`
//! (see `points`), and Claude Code's SubagentStart and SubagentStop on `subagent/start` and
//! `subagent/end`. Each command gets the format's JSON input on stdin and answers by its exit
//! code (2 blocks, with stderr as the reason) or its JSON output (see `output`); each run inside
//! a turn is logged as `hook/invoked` and `hook/result`. Commands run confined like any tool
//! process, through the `sandbox` service. The files are followed through the host's
//! `fs_watch` (see `files`), so a point with nothing to run costs a lookup, not a stat of each.
//!
//! It owns the formats' files, their contracts and the mapping onto our points; it does not
//! own the points (the loop's, the pipeline's) or process confinement (the sandbox's). Not
//! supported, as the reference: hooks that are not commands (`prompt`, `http`, `agent`...),
//! rewriting a tool's input (`updatedInput` is logged and ignored), `systemMessage`,
//! `continue: false` outside a prompt; a subagent hook's record in the log (it runs outside a
//! turn, as SessionStart's).

mod bridge;
mod config;
mod files;
mod matcher;
mod output;
mod payload;
mod points;
mod record;
mod run;

use std::sync::Arc;

use dsh_agents_seam::{
    AGENT_DISPOSED, AGENT_PROMPT_SUBMIT, AGENT_SESSION_START, AGENT_TURN_STOPPING, AgentNotice,
};
use dsh_plugin_api::io::watch::{FS_WATCH_SERVICE, FsWatchService};
use dsh_plugin_api::prelude::*;
use dsh_sandbox_seam::{SANDBOX_SERVICE, SandboxService};
use dsh_subagents_seam::{SUBAGENT_END, SUBAGENT_START};
use dsh_tools_seam::{ResultView, TOOLS_POST_EXECUTE, TOOLS_PRE_EXECUTE, TOOLS_RESULT};
use dsh_trust_seam::TRUST_CHANGED;

pub use config::Format;

use crate::bridge::{Bridge, Settings};
use crate::files::HookFiles;

/// The reference's limit of a hook that sets none (Claude Code's and Codex's: 10 minutes).
const DEFAULT_TIMEOUT_MS: u64 = 600_000;
/// How much of a hook's stderr `hook/result` keeps.
const STDERR_SUMMARY_MAX_CHARS: usize = 500;

/// Row config of `hook-scripts`.
#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct HookScriptsConfig {
    /// Whose hook files: `claude-code` or `codex`.
    pub format: Format,
    /// The hook files, in the order their hooks run: `~/` is under the user's home, a relative
    /// path under the session's working directory. Default: where the format's tool looks.
    #[serde(default)]
    pub files: Option<Vec<String>>,
    /// The limit of a hook that sets no `timeout` (ms).
    #[serde(default = "default_timeout_ms")]
    pub default_timeout_ms: u64,
    /// How many characters of a hook's stderr `hook/result` keeps.
    #[serde(default = "default_summary")]
    pub stderr_summary_max_chars: usize,
    /// The `model` of Codex payloads.
    #[serde(default)]
    pub model: String,
    /// Claude Code's `CLAUDE_PROJECT_DIR` (default: the session's working directory).
    #[serde(default)]
    pub project_dir: Option<String>,
    /// Replaces `${CLAUDE_PLUGIN_ROOT}` in Claude Code commands.
    #[serde(default)]
    pub plugin_root: Option<String>,
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

fn default_summary() -> usize {
    STDERR_SUMMARY_MAX_CHARS
}

pub struct HookScripts;

impl Plugin for HookScripts {
    const NAME: &'static str = "hook-scripts";
    const INJECT: &'static [&'static str] = &[SANDBOX_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        FS_WATCH_SERVICE,
        dsh_agents_seam::AGENTS_SERVICE,
        dsh_trust_seam::TRUST_SERVICE,
        dsh_sessions_seam::SESSIONS_SERVICE,
    ];
    type Config = HookScriptsConfig;

    async fn apply(ctx: Context, config: HookScriptsConfig) -> Result<(), PluginError> {
        if config.default_timeout_ms == 0 || config.stderr_summary_max_chars == 0 {
            return Err(PluginError::new(
                dsh_plugin_api::ErrorKind::Config,
                "defaultTimeoutMs and stderrSummaryMaxChars must be at least 1",
            ));
        }
        let sandbox = ctx.inject::<SandboxService>(SANDBOX_SERVICE)?;
        let files = config
            .files
            .unwrap_or_else(|| config.format.default_files());
        // Without the watch service, every hook point looks at the files again.
        let followed = matches!(ctx.get::<FsWatchService>(FS_WATCH_SERVICE), Ok(Some(_)));
        let hook_files = Arc::new(HookFiles::new(ctx.clone(), config.format, files, followed));
        // A project trusted meanwhile: its hook files count from the next point on.
        let trusted = hook_files.clone();
        ctx.on_parallel(&TRUST_CHANGED, move |_root| {
            trusted.invalidate();
            std::future::ready(())
        })?;
        let bridge = Arc::new(Bridge::new(
            ctx.clone(),
            config.format,
            hook_files,
            sandbox,
            Settings {
                default_timeout_ms: config.default_timeout_ms,
                stderr_summary_max_chars: config.stderr_summary_max_chars,
                model: config.model,
                project_dir: config.project_dir,
                plugin_root: config.plugin_root,
            },
        ));
        let on = bridge.clone();
        ctx.on_emit(&AGENT_SESSION_START, move |notice: &AgentNotice| {
            on.session_start(notice);
        })?;
        let on = bridge.clone();
        ctx.on_emit(&SUBAGENT_START, move |notice| on.subagent(notice, true))?;
        let on = bridge.clone();
        ctx.on_emit(&SUBAGENT_END, move |notice| on.subagent(notice, false))?;
        let on = bridge.clone();
        ctx.on_emit(&AGENT_DISPOSED, move |notice: &AgentNotice| {
            on.forget(&notice.agent);
        })?;
        let on = bridge.clone();
        ctx.on_waterfall(&AGENT_PROMPT_SUBMIT, move |next| {
            on.clone().prompt_submit(next)
        })?;
        let on = bridge.clone();
        ctx.on_waterfall(&TOOLS_PRE_EXECUTE, move |next| on.clone().pre_execute(next))?;
        let on = bridge.clone();
        ctx.on_waterfall(&TOOLS_POST_EXECUTE, move |next| {
            on.clone().post_execute(next)
        })?;
        let on = bridge.clone();
        ctx.on_emit(&TOOLS_RESULT, move |view: &ResultView| {
            on.result_logged(view)
        })?;
        ctx.on_serial(&AGENT_TURN_STOPPING, move |stopping| {
            bridge.clone().turn_stopping(stopping)
        })
    }
}

dsh_plugin_api::export_plugins!(HookScripts);
