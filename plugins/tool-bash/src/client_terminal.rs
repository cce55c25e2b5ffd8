//! A foreground command of a session whose client runs its commands (the `client_terminal`
//! service: an editor over ACP showing a live terminal in the tool call). Only a command that
//! would run unconfined goes there: the client's terminal is the person's own shell, so a
//! session under a sandbox keeps the sandbox. A client that could not start the terminal
//! leaves the command to the sandbox's spawn, as if it had not been asked; one whose answer
//! leaves it unknown whether the command started fails the call instead (it must not run
//! twice).

use std::path::Path;

use abi_stable::std_types::{RStr, RString, RVec};
use dsh_plugin_api::SeamErrorKind;
use dsh_plugin_api::cancel::{CancelBox, share};
use dsh_plugin_api::io::client_terminal::{
    CLIENT_TERMINAL_SERVICE, ClientTerminalService, TerminalCommand,
};
use dsh_plugin_api::io::subprocess::EnvVar;
use dsh_plugin_api::prelude::*;
use dsh_protocol::SandboxMode;
use dsh_sandbox_seam::SandboxService;
use dsh_tools_core::{CollectedOutput, ExitStatus, ShellRun};
use dsh_tools_seam::CallView;

use crate::{BashConfig, BashError, policy_mode};

/// What a run through the client needs besides the call.
pub(crate) struct Command<'a> {
    pub(crate) command: &'a str,
    pub(crate) cwd: &'a Path,
    pub(crate) env: &'a [EnvVar],
    pub(crate) timeout_ms: u64,
}

/// The command's run in the client's terminal, or `None` when it is not the client's to run.
pub(crate) async fn run(
    ctx: &Context,
    sandbox: &SandboxService,
    config: &BashConfig,
    call: &CallView,
    command: Command<'_>,
    cancel: &CancelBox,
) -> Option<Result<ShellRun, BashError>> {
    let client = ctx
        .get::<ClientTerminalService>(CLIENT_TERMINAL_SERVICE)
        .ok()
        .flatten()?;
    // A policy that does not read keeps the command in the sandbox.
    let unconfined = policy_mode(sandbox, call) == Some(SandboxMode::DangerFullAccess);
    if !client.serves(RStr::from_str(&call.session)) || !unconfined {
        return None;
    }
    let request = TerminalCommand {
        session: call.session.clone(),
        call_id: call.call_id.clone(),
        command: RString::from(command.command),
        cwd: RString::from(command.cwd.to_string_lossy().as_ref()),
        env: RVec::from(command.env.to_vec()),
        output_limit: config.max_output_bytes as u64,
        timeout_ms: command.timeout_ms,
    };
    let outcome = match client.run(request, share(cancel)).await.into_result() {
        Ok(outcome) => outcome,
        Err(_) if cancel.is_cancelled() => return Some(Err(BashError::Cancelled)),
        // What the client did is unknown: running the command here could run it twice.
        Err(error) if error.kind != SeamErrorKind::Unavailable => {
            return Some(Err(BashError::Refused(error)));
        }
        Err(error) => {
            dsh_plugin_api::tracing::warn!(
                "the client's terminal did not start, the sandbox runs the command: {}",
                error.message
            );
            return None;
        }
    };
    if outcome.cancelled {
        return Some(Err(BashError::Cancelled));
    }
    let exit = match (
        outcome.exit_code.into_option(),
        outcome.signal.into_option(),
    ) {
        (Some(code), _) => ExitStatus::Code(i32::try_from(code).unwrap_or(i32::MAX)),
        (None, Some(signal)) => ExitStatus::Signal(signal.into_string()),
        (None, None) => ExitStatus::Code(-1),
    };
    Some(Ok(ShellRun {
        stdout: CollectedOutput {
            text: outcome.output.into_string(),
            truncated: outcome.truncated,
            spill_path: None,
        },
        stderr: CollectedOutput::default(),
        exit,
        timed_out: outcome.timed_out,
        timeout_ms: command.timeout_ms,
        sandbox_denied: None,
        escalation_available: false,
        limit_reached: None,
    }))
}
