//! What the runner writes: the answer or the stream-json lines on stdout, diagnostics on
//! stderr. A `session_event` line embeds the committed event's own JSON line as it is.

use std::io::Write;

use dsh_plugin_api::Serialize;
use dsh_protocol::{TokenUsage, TurnEndReason};
use serde_json::value::RawValue;

pub(crate) fn out(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

pub(crate) fn err(line: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
}

/// One line of `--output stream-json` (the reference's recorded format).
#[derive(Serialize)]
#[serde(
    crate = "dsh_plugin_api::serde",
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
enum Line<'a> {
    SessionEvent {
        session_id: &'a str,
        event: &'a RawValue,
    },
    Result {
        session_id: &'a str,
        output: &'a str,
        usage: Usage,
    },
}

/// The usage of the result line: input and output, as the reference writes it.
#[derive(Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
}

fn print(line: &Line<'_>) {
    if let Ok(text) = serde_json::to_string(line) {
        out(&text);
    }
}

/// One `session_event` line; an event line that is not JSON is left out.
pub(crate) fn print_event(session: &str, json: &str) {
    if let Ok(event) = serde_json::from_str::<&RawValue>(json) {
        print(&Line::SessionEvent {
            session_id: session,
            event,
        });
    }
}

/// The closing `result` line.
pub(crate) fn print_result(session: &str, output: &str, usage: &TokenUsage) {
    print(&Line::Result {
        session_id: session,
        output,
        usage: Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
        },
    });
}

/// The exit code of a turn's end reason.
pub(crate) fn exit_code(reason: &TurnEndReason) -> i32 {
    match reason {
        TurnEndReason::Completed => 0,
        TurnEndReason::Blocked { .. } => 3,
        TurnEndReason::MaxTokens => 4,
        TurnEndReason::Aborted {
            reason: dsh_protocol::AbortCause::User,
        } => 130,
        _ => 1,
    }
}
