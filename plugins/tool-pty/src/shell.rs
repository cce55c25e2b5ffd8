//! The persistent `bash` tool: one interactive shell per session, started on the first call,
//! kept between calls (so `cd`, exported variables, an activated virtualenv and functions
//! last), ended with the session or the row. Its input echo is off; each command is typed
//! wrapped in `eval` of a quoted here-document (so any text, quotes and newlines included, is
//! one command of the current shell) followed by a `printf` of an invisible marker carrying a
//! per-call nonce and `$?`. The call's output is what the terminal showed up to that marker.
//! A timeout or a cancellation stops the shell (its state is uncertain), and a shell that died
//! is replaced on the next call. A shell that ends during a call is reported in that call's
//! result in the reference's words (`[shell exited: code N]` and its reset line, a timeout's
//! intro), so models tuned on it read them; one found dead between calls is named at the head
//! of the next call's result.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abi_stable::std_types::ROption;
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::io::subprocess::ExitStatus;
use dsh_plugin_api::{Deserialize, lock};
use dsh_protocol::{ContentBlock, ToolReply, ToolSuccess};
use dsh_tools_seam::CallView;
use serde_json::{Value, json};

use crate::screen::keep_tail;
use crate::terminal::{Start, Terminal, Until, WaitReason, describe_exit, signal_name};
use crate::{Refusal, Shared};

pub(crate) const DESCRIPTION: &str = "Run a command in a persistent bash shell (one per session, on a terminal). \
State persists between calls: the working directory (`cd`), exported variables, an activated virtualenv, functions and aliases. \
Output is stdout and stderr together as the terminal shows them; a non-zero exit is reported as [exit code: N]. \
A command that runs past the timeout is stopped together with the shell, and the next call starts a new shell from the workspace (state reset); \
so does a shell that exits (`exit` resets it). Commands run under the session's sandbox like every command. Do not start interactive programs that wait for input.";

pub(crate) fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command to run in the persistent shell."}
        },
        "required": ["command"],
        "additionalProperties": false
    })
}

/// Ends a result whose shell is gone (exited, or stopped at a timeout): the reference's line.
const RESET: &str = "The persistent bash shell was reset; the next bash call starts from the workspace with a fresh current directory and environment.";

/// How a shell that ended while a command ran ended, as the reference reports it.
fn exit_report(status: Option<ExitStatus>) -> String {
    match status.map(|status| (status.code, status.signal)) {
        Some((ROption::RSome(code), _)) => format!("[shell exited: code {code}]"),
        Some((ROption::RNone, ROption::RSome(signal))) => {
            format!("[shell killed by signal: {}]", signal_name(signal))
        }
        _ => "[shell exited]".to_owned(),
    }
}

/// How long a new shell may take to show its first prompt.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// The shell of one session.
#[derive(Default)]
pub(crate) struct Slot {
    terminal: Option<Arc<Terminal>>,
    /// The sandbox mode the shell was started under (it keeps that confinement for life).
    mode: Option<String>,
    /// Prompts the shell shows once back from the last call.
    prompts: u64,
    busy: bool,
}

pub(crate) type Slots = Mutex<std::collections::HashMap<String, Slot>>;

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Arguments {
    command: String,
}

static NONCES: AtomicU64 = AtomicU64::new(1);

fn nonce() -> String {
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!(
        "{:x}{:x}",
        time & 0xffff_ffff_ffff,
        NONCES.fetch_add(1, Ordering::Relaxed)
    )
}

/// Releases the session's slot when the call ends, however it ends.
struct Busy<'a> {
    shared: &'a Shared,
    session: String,
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        if let Some(slot) = lock(&self.shared.shells).get_mut(&self.session) {
            slot.busy = false;
        }
    }
}

pub(crate) async fn run(shared: &Shared, call: &CallView, cancel: CancelBox) -> ToolReply {
    let arguments: Arguments = match serde_json::from_str(&call.arguments) {
        Ok(arguments) => arguments,
        Err(error) => return ToolReply::error(format!("arguments are not valid: {error}")),
    };
    let session = call.session.to_string();
    let (terminal, prompts) = {
        let mut shells = lock(&shared.shells);
        let slot = shells.entry(session.clone()).or_default();
        if slot.busy {
            return ToolReply::error(
                "the session's shell is running another command; wait for it to finish",
            );
        }
        slot.busy = true;
        (slot.terminal.clone(), slot.prompts)
    };
    // A shell keeps the confinement it started in: when the session's mode changed since,
    // this command runs in a new shell under the new one.
    let mode = shared.mode_of(call);
    let started_in = lock(&shared.shells)
        .get(&session)
        .and_then(|slot| slot.mode.clone());
    let (terminal, note) = match (terminal, &mode, started_in) {
        (Some(old), Some(now), Some(then)) if *now != then => {
            old.close().await;
            let note = format!(
                "[the session's sandbox mode changed to {now}; this command ran in a new shell: working directory and variables were reset]"
            );
            (None, Some(note))
        }
        (terminal, _, _) => (terminal, None),
    };
    let _busy = Busy {
        shared,
        session: session.clone(),
    };
    let cancelled = || cancel.is_cancelled();
    let (terminal, note) = match terminal {
        Some(terminal) if terminal.exited().is_none() => {
            // The prompt after the last command may still be on its way: past it, the
            // screen holds only what this command shows.
            let until = Until::Prompt {
                silence: Duration::from_secs(2),
            };
            let from = terminal.position();
            if terminal.prompts() < prompts {
                terminal
                    .wait(
                        &shared.ctx,
                        from,
                        prompts - 1,
                        &until,
                        START_TIMEOUT,
                        &cancelled,
                    )
                    .await;
            }
            (terminal, note)
        }
        stale => {
            let note = match stale.filter(|_| note.is_none()) {
                Some(dead) => Some(format!(
                    "[the previous shell {}; this command ran in a new shell: working directory and variables were reset]",
                    describe_exit(dead.exited().flatten())
                )),
                None => note,
            };
            match start(shared, call, &cancelled).await {
                Ok(terminal) => (terminal, note),
                Err(refusal) => return ToolReply::error(refusal.0),
            }
        }
    };
    let tag = nonce();
    let marker = format!("777;dsh-end;{tag};");
    let text = format!(
        "eval \"$(cat <<'DSH_EOF_{tag}'\n{}\nDSH_EOF_{tag}\n)\"; printf '\\033]777;dsh-end;{tag};%s\\007' \"$?\"\n",
        arguments.command
    );
    let from = terminal.position();
    let prompts = terminal.prompts();
    if let Err(error) = terminal.type_text(&text).await {
        return ToolReply::error(format!("could not type into the shell: {error}"));
    }
    let timeout = Duration::from_millis(shared.config.timeout_ms);
    let waited = terminal
        .wait(
            &shared.ctx,
            from,
            prompts,
            &Until::Marker(marker),
            timeout,
            &cancelled,
        )
        .await;
    let (output, lost) = terminal.with_screen(|screen| screen.since(from, Some(waited.end)));
    let mut output = output.trim_end_matches('\n').to_owned();
    if lost {
        output.insert_str(0, "[the start of the output was dropped]\n");
    }
    let (mut output, _) = keep_tail(
        &output,
        shared.config.max_output_bytes,
        "\n[output truncated: the start was dropped]",
    );
    let mut keep = true;
    let tail = match waited.reason {
        WaitReason::StdinRead => {
            let code: i32 = waited
                .payload
                .as_deref()
                .and_then(|code| code.trim().parse().ok())
                .unwrap_or(-1);
            (code != 0).then(|| format!("[exit code: {code}]"))
        }
        WaitReason::Timeout => {
            keep = false;
            terminal.close().await;
            // The reference's words: the intro at the head, the reset line at the end.
            let seconds = shared.config.timeout_ms.div_ceil(1000);
            output = format!(
                "Your command timed out after {seconds} seconds or experienced an OOM error. Below is partial output:\n{output}"
            );
            Some(RESET.to_owned())
        }
        WaitReason::SessionExit => {
            // Said here, so the next call's new shell needs no note of its own.
            keep = false;
            Some(format!(
                "{}\n{RESET}",
                exit_report(terminal.exited().flatten())
            ))
        }
        WaitReason::Cancelled | WaitReason::InferredIdle => {
            terminal.close().await;
            forget(shared, &session);
            return ToolReply::error(
                "the command was cancelled; its shell was stopped and the next call starts a new one",
            );
        }
    };
    if let Some(tail) = tail {
        if !output.is_empty() {
            output.push('\n');
        }
        output.push_str(&tail);
    }
    if let Some(note) = note {
        output.insert_str(0, &format!("{note}\n"));
    }
    {
        let mut shells = lock(&shared.shells);
        let slot = shells.entry(session).or_default();
        if keep {
            slot.terminal = Some(terminal);
            slot.prompts = prompts + 1;
            slot.mode = mode;
        } else {
            slot.terminal = None;
        }
    }
    if output.is_empty() {
        output = "(no output)".to_owned();
    }
    ToolReply::Ok(ToolSuccess {
        value: json!({"output": output}),
        content: vec![ContentBlock::text(output)],
        meta: None,
        concludes_turn: false,
    })
}

fn forget(shared: &Shared, session: &str) {
    if let Some(slot) = lock(&shared.shells).get_mut(session) {
        slot.terminal = None;
    }
}

/// Starts the session's shell: its first prompt, then its echo off.
async fn start(
    shared: &Shared,
    call: &CallView,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<Arc<Terminal>, Refusal> {
    let terminal = Terminal::start(
        &shared.ctx,
        &shared.sandbox,
        &Start {
            session: &call.session,
            root: &call.cwd,
            cwd: &call.cwd,
            call_id: &call.call_id,
        },
    )
    .map_err(|error| Refusal(error.message.to_string()))?;
    let until = Until::Prompt {
        silence: START_TIMEOUT,
    };
    for line in [None, Some("stty -echo\n")] {
        let prompts = terminal.prompts();
        if let Some(line) = line {
            terminal
                .type_text(line)
                .await
                .map_err(|error| Refusal(error.message.to_string()))?;
        }
        let waited = terminal
            .wait(&shared.ctx, 0, prompts, &until, START_TIMEOUT, cancelled)
            .await;
        if waited.reason != WaitReason::StdinRead {
            let shown = terminal.with_screen(|screen| screen.since(0, None).0);
            terminal.close().await;
            return Err(Refusal(format!(
                "the shell did not start ({}): {}",
                waited.reason.as_str(),
                shown.trim()
            )));
        }
    }
    Ok(terminal)
}

impl Slot {
    /// Lets the shell go: its reader stops and the last owner's drop ends it.
    pub(crate) fn abandon(self, ctx: &dsh_plugin_api::Context) {
        if let Some(terminal) = self.terminal {
            terminal.abandon(ctx);
        }
    }
}
