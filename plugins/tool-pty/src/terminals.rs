//! The six terminal tools (`terminal_open`, `terminal_send`, `terminal_read`,
//! `terminal_signal`, `terminal_close`, `terminal_list`): persistent terminals a session opens,
//! types into and reads, named `pty-N`. A terminal belongs to the session that opened it: any
//! other sees no such id. Results follow the reference's `dsh-tool-terminal`: a send answers
//! what the terminal showed since, why the wait ended and the shell's status, its tail kept
//! within `maxResultBytes`.

use std::sync::Arc;
use std::time::Duration;

use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::{Deserialize, lock};
use dsh_protocol::{ContentBlock, ToolReply, ToolSuccess};
use dsh_tools_seam::CallView;
use serde_json::{Value, json};

use crate::Shared;
use crate::screen::keep_tail;
use crate::terminal::{Start, Terminal, Until, WaitReason, describe_exit};

/// A terminal and whose it is.
pub(crate) struct Owned {
    pub(crate) session: String,
    pub(crate) name: Option<String>,
    pub(crate) kind: String,
    pub(crate) terminal: Arc<Terminal>,
}

/// The tools, as (name, description, parameters).
pub(crate) fn specs() -> Vec<(&'static str, &'static str, Value)> {
    let id = json!({"type": "string", "description": "Terminal session id."});
    vec![
        (
            "terminal_open",
            "Create a persistent, owner-isolated terminal session from a registered backend type. Use this for shell or REPL state that must survive across tool calls.",
            json!({"type": "object", "properties": {
                "type": {"type": "string", "description": "Registered terminal backend type, usually \"shell\"."},
                "name": {"type": "string", "description": "Optional owner-local display name such as \"main\" or \"gdb\"."},
                "cwd": {"type": "string", "description": "Initial working directory. Defaults to the deployment workspace root."}
            }, "required": ["type"]}),
        ),
        (
            "terminal_send",
            "Send text to a persistent terminal. By default Enter is submitted and the call waits for a prompt, stdin wait, output silence, timeout, or session exit. Background mode returns a job id for job_output/job_kill.",
            json!({"type": "object", "properties": {
                "sessionId": {"type": "string", "description": "Terminal session id returned by terminal_open or terminal_list."},
                "text": {"type": "string", "description": "UTF-8 text to write to the terminal."},
                "submit": {"type": "boolean", "description": "Submit Enter after text (default true). Set false for control characters or incomplete REPL input."},
                "run_in_background": {"type": "boolean", "description": "Return a job id immediately; collect with job_output or stop with job_kill."}
            }, "required": ["sessionId", "text"]}),
        ),
        (
            "terminal_read",
            "Read a bounded page of retained output from a persistent terminal without sending input.",
            json!({"type": "object", "properties": {
                "sessionId": id,
                "offset": {"type": "number", "description": "Newest-relative line offset (default 0)."},
                "count": {"type": "number", "description": "Requested line count (default 500; backend caps apply)."}
            }, "required": ["sessionId"]}),
        ),
        (
            "terminal_signal",
            "Send an allowed signal to the current foreground process group of a persistent terminal.",
            json!({"type": "object", "properties": {
                "sessionId": id,
                "signal": {"type": "string", "description": "Signal to deliver. Shell-targeted SIGKILL is rejected; use terminal_close.",
                    "enum": ["SIGINT", "SIGTERM", "SIGKILL", "SIGTSTP", "SIGHUP"]}
            }, "required": ["sessionId", "signal"]}),
        ),
        (
            "terminal_close",
            "Close one persistent terminal and wait until its captured owned process tree is gone.",
            json!({"type": "object", "properties": {"sessionId": id}, "required": ["sessionId"]}),
        ),
        (
            "terminal_list",
            "List persistent terminal sessions owned by the current agent.",
            json!({"type": "object", "properties": {}}),
        ),
    ]
}

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
struct Arguments {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    submit: Option<bool>,
    #[serde(default, rename = "run_in_background")]
    run_in_background: Option<bool>,
    #[serde(default)]
    offset: Option<f64>,
    #[serde(default)]
    count: Option<f64>,
    #[serde(default)]
    signal: Option<String>,
}

fn text(text: impl Into<String>) -> ToolReply {
    ToolReply::text(text.into())
}

pub(crate) async fn run(
    shared: &Shared,
    tool: &str,
    call: &CallView,
    cancel: CancelBox,
) -> ToolReply {
    let arguments: Arguments = match serde_json::from_str(&call.arguments) {
        Ok(arguments) => arguments,
        Err(error) => return ToolReply::error(format!("arguments are not valid: {error}")),
    };
    if tool == "terminal_open" {
        return open(shared, call, &arguments).await;
    }
    if tool == "terminal_list" {
        return list(shared, &call.session);
    }
    let Some(id) = arguments.session_id.clone() else {
        return ToolReply::error(format!("{tool}: `sessionId` is required"));
    };
    let found = lock(&shared.terminals)
        .get(&id)
        .filter(|owned| owned.session == call.session.as_str())
        .map(|owned| owned.terminal.clone());
    let Some(terminal) = found else {
        return ToolReply::error(format!("unknown PTY session {id}"));
    };
    match tool {
        "terminal_send" => {
            let Some(sending) = terminal.try_send() else {
                return ToolReply::error(format!(
                    "terminal {id} is busy with another send (a background one ends at its prompt; job_kill stops it)"
                ));
            };
            if arguments.run_in_background != Some(true) {
                return send(shared, &terminal, &arguments, cancel).await;
            }
            let mut input = arguments.text.clone().unwrap_or_default();
            if arguments.submit.unwrap_or(true) {
                input.push('\r');
            }
            let started =
                crate::background::send(shared, &call.session, &id, terminal, &input, sending);
            match started.await {
                Ok(job) => text(format!("started background job {job}")),
                Err(refusal) => ToolReply::error(refusal.0),
            }
        }
        "terminal_read" => read(&terminal, &arguments),
        "terminal_signal" => signal(&terminal, &arguments),
        _ => {
            lock(&shared.terminals).remove(&id);
            terminal.close().await;
            text(format!("closed terminal session {id}"))
        }
    }
}

async fn open(shared: &Shared, call: &CallView, arguments: &Arguments) -> ToolReply {
    let kind = arguments.kind.clone().unwrap_or_default();
    if kind != "shell" {
        return ToolReply::error(format!(
            "unknown terminal type `{kind}` (registered: shell)"
        ));
    }
    let cwd = match &arguments.cwd {
        Some(cwd) => std::path::Path::new(call.cwd.as_str()).join(cwd),
        None => std::path::PathBuf::from(call.cwd.as_str()),
    };
    if !cwd.is_dir() {
        return ToolReply::error(format!("cwd {} is not a directory", cwd.display()));
    }
    let cwd = cwd.to_string_lossy().into_owned();
    let started = Terminal::start(
        &shared.ctx,
        &shared.sandbox,
        &Start {
            session: &call.session,
            root: &call.cwd,
            cwd: &cwd,
            call_id: &call.call_id,
        },
    );
    let terminal = match started {
        Ok(terminal) => terminal,
        Err(error) => return ToolReply::error(error.message.to_string()),
    };
    let until = Until::Prompt {
        silence: Duration::from_millis(shared.config.silence_ms),
    };
    let timeout = Duration::from_millis(shared.config.send_timeout_ms);
    terminal
        .wait(&shared.ctx, 0, 0, &until, timeout, &|| false)
        .await;
    let motd = terminal.with_screen(|screen| screen.since(0, None).0);
    let number = shared
        .next_terminal
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let id = format!("pty-{number}");
    let label = arguments
        .name
        .as_ref()
        .map(|name| format!(" ({name})"))
        .unwrap_or_default();
    lock(&shared.terminals).insert(
        id.clone(),
        Owned {
            session: call.session.to_string(),
            name: arguments.name.clone(),
            kind: kind.clone(),
            terminal,
        },
    );
    text(format!(
        "started terminal session {id}{label} [type: {kind}]\n{motd}"
    ))
}

fn status_of(terminal: &Terminal) -> (String, Value) {
    match terminal.exited() {
        None => ("running".to_owned(), json!({"kind": "running"})),
        Some(status) => {
            let code = status.and_then(|status| status.code.into_option());
            let signal = status.and_then(|status| status.signal.into_option());
            (
                describe_exit(status),
                json!({"kind": "exited", "exitCode": code, "signal": signal}),
            )
        }
    }
}

async fn send(
    shared: &Shared,
    terminal: &Terminal,
    arguments: &Arguments,
    cancel: CancelBox,
) -> ToolReply {
    let mut input = arguments.text.clone().unwrap_or_default();
    if arguments.submit.unwrap_or(true) {
        input.push('\r');
    }
    let from = terminal.position();
    let prompts = terminal.prompts();
    if let Err(error) = terminal.type_text(&input).await {
        return ToolReply::error(error.message.to_string());
    }
    let until = Until::Prompt {
        silence: Duration::from_millis(shared.config.silence_ms),
    };
    let timeout = Duration::from_millis(shared.config.send_timeout_ms);
    let cancelled = || cancel.is_cancelled();
    let waited = terminal
        .wait(&shared.ctx, from, prompts, &until, timeout, &cancelled)
        .await;
    if waited.reason == WaitReason::Cancelled {
        let _ = terminal.signal(2);
    }
    let (viewport, lost) = terminal.with_screen(|screen| screen.since(from, Some(waited.end)));
    let (status, status_value) = status_of(terminal);
    let whole = format!(
        "{viewport}\n[wait: {}]\n[session: {status}]",
        waited.reason.as_str()
    );
    let (shown, cut) = keep_tail(
        &whole,
        shared.config.max_result_bytes,
        "\n[output truncated]",
    );
    ToolReply::Ok(ToolSuccess {
        value: json!({"viewport": viewport}),
        content: vec![ContentBlock::text(shown)],
        meta: Some(json!({
            "viewport": viewport,
            "waitReason": waited.reason.as_str(),
            "sessionStatus": status_value,
            "truncated": lost || cut,
        })),
        concludes_turn: false,
    })
}

fn read(terminal: &Terminal, arguments: &Arguments) -> ToolReply {
    let whole = |value: Option<f64>, default: usize| {
        value
            .filter(|value| value.is_finite() && *value >= 0.0)
            .map_or(default, |value| value as usize)
    };
    let offset = whole(arguments.offset, 0);
    let count = whole(arguments.count, 500).min(2_000);
    let (page, total, shown) = terminal.with_screen(|screen| {
        let lines = screen.lines();
        let end = lines.len().saturating_sub(offset);
        let start = end.saturating_sub(count);
        (lines[start..end].join("\n"), lines.len(), end - start)
    });
    text(format!(
        "{page}\n[lines: {offset}-{} of {total}]",
        offset + shown
    ))
}

fn signal(terminal: &Terminal, arguments: &Arguments) -> ToolReply {
    let name = arguments.signal.clone().unwrap_or_default();
    let number = match name.as_str() {
        "SIGINT" => 2,
        "SIGTERM" => 15,
        "SIGKILL" => 9,
        "SIGTSTP" => 20,
        "SIGHUP" => 1,
        other => {
            return ToolReply::error(format!(
                "signal `{other}` is not allowed (SIGINT, SIGTERM, SIGKILL, SIGTSTP, SIGHUP)"
            ));
        }
    };
    if number == 9 && terminal.foreground_is_shell() {
        return ToolReply::error(
            "SIGKILL would kill the terminal's shell itself; use terminal_close",
        );
    }
    match terminal.signal(number) {
        Ok(group) => text(format!("sent {name} to process group {group}")),
        Err(error) => ToolReply::error(error.message.to_string()),
    }
}

fn list(shared: &Shared, session: &str) -> ToolReply {
    let terminals = lock(&shared.terminals);
    let lines: Vec<String> = terminals
        .iter()
        .filter(|(_, owned)| owned.session == session)
        .map(|(id, owned)| {
            let label = owned
                .name
                .as_ref()
                .map(|name| format!(" ({name})"))
                .unwrap_or_default();
            let (status, _) = status_of(&owned.terminal);
            format!("{id}{label} [type: {}] {status}", owned.kind)
        })
        .collect();
    match lines.is_empty() {
        true => text("(no terminal sessions)"),
        false => text(lines.join("\n")),
    }
}
