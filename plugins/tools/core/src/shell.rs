//! Shell output shaping for the `bash` / `pwsh` tools: pure, so every executor (local,
//! sandboxed, remote) renders results the same way and the markers stay parseable.
//!
//! The rules are the reference's (`bash-local` executor and `tool-bash` renderer): each stream
//! keeps its last `maxOutputBytes` (64 000) bytes, since errors and final results cluster at the
//! end; a cut stream carries a notice pointing at the full-output spill file; stderr follows
//! stdout under a `[stderr]` line; markers for a sandbox denial, a timeout and a non-zero exit
//! come last, the exit marker last of all because [`parse_exit_status`] anchors on it.

use std::fmt;

/// Executor default timeout.
pub const DEFAULT_SHELL_TIMEOUT_MS: u64 = 120_000;
/// Executor cap for a per-call `timeoutMs`; larger requests are clamped to it, not refused.
pub const MAX_SHELL_TIMEOUT_MS: u64 = 600_000;
/// Per-stream in-memory output cap.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64_000;

/// A `timeoutMs` argument the tool refuses: zero or negative. (JSON cannot carry NaN or
/// infinities, so positivity is the whole check.)
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid timeoutMs: expected a positive number, got {}", js_number(*.0))]
pub struct InvalidTimeout(pub f64);

/// The effective timeout: `min(requested or default, max)`. A fractional request is rounded up
/// to whole milliseconds (the reference keeps fractions; our timers count whole milliseconds).
pub fn clamp_timeout_ms(
    requested: Option<f64>,
    default_ms: u64,
    max_ms: u64,
) -> Result<u64, InvalidTimeout> {
    let Some(requested) = requested else {
        return Ok(default_ms.min(max_ms));
    };
    if !requested.is_finite() || requested <= 0.0 {
        return Err(InvalidTimeout(requested));
    }
    // Saturating float-to-int cast: anything above u64::MAX clamps to the cap anyway.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "positive, finite, saturating"
    )]
    let requested = requested.ceil() as u64;
    Ok(requested.min(max_ms))
}

/// One collected output stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CollectedOutput {
    pub text: String,
    /// Bytes were dropped from the head.
    pub truncated: bool,
    /// Where the full stream was spilled, when the executor kept one.
    pub spill_path: Option<String>,
}

impl CollectedOutput {
    /// The stream as the model reads it: the kept tail, plus the truncation notice when cut.
    pub fn rendered(&self) -> String {
        if !self.truncated {
            return self.text.clone();
        }
        format!(
            "{}\n[output truncated; full output: {}]",
            self.text,
            self.spill_path.as_deref().unwrap_or("(unavailable)")
        )
    }
}

/// Keep the last `max_bytes` bytes of a stream, starting on a character boundary (so the tail
/// may be up to three bytes shorter than the cap rather than begin with a broken character).
/// Invalid UTF-8 elsewhere is replaced, as a lossy decode of process output must.
pub fn tail_output(bytes: &[u8], max_bytes: usize) -> CollectedOutput {
    if bytes.len() <= max_bytes {
        return CollectedOutput {
            text: String::from_utf8_lossy(bytes).into_owned(),
            truncated: false,
            spill_path: None,
        };
    }
    let mut start = bytes.len() - max_bytes;
    // A UTF-8 continuation byte is 0b10xx_xxxx; a character has at most three of them.
    let mut skipped = 0;
    while skipped < 3 && bytes.get(start).is_some_and(|byte| byte & 0xC0 == 0x80) {
        start += 1;
        skipped += 1;
    }
    CollectedOutput {
        text: String::from_utf8_lossy(bytes.get(start..).unwrap_or_default()).into_owned(),
        truncated: true,
        spill_path: None,
    }
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitStatus {
    Code(i32),
    /// Killed by a signal (`SIGKILL`, ...).
    Signal(String),
}

/// A finished foreground run, as the executor reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRun {
    pub stdout: CollectedOutput,
    pub stderr: CollectedOutput,
    pub exit: ExitStatus,
    /// The executor's own deadline fired (a command may trap the signal and exit 0; the
    /// interruption is still reported).
    pub timed_out: bool,
    pub timeout_ms: u64,
    /// The sandbox mode under which file access was denied, if it was.
    pub sandbox_denied: Option<String>,
    /// The composition offers one-shot escalation, so a denial carries the retry hint.
    pub escalation_available: bool,
    /// The sandbox's resource limit the command ran into (`CPU time`, `process`, ...), if
    /// its end says it did.
    pub limit_reached: Option<&'static str>,
}

/// The resource limit of the sandbox that a confined command's end shows it ran into: a
/// process killed by `SIGXCPU` or `SIGXFSZ` (or its shell's exit code for one, 152 or 153),
/// the C library's and runtimes' words for a refused fork or allocation, or a `SIGKILL` (or
/// 137) that no timeout sent (the memory ceiling of the commands' control group).
pub fn limit_reached(exit: &ExitStatus, stderr: &str, timed_out: bool) -> Option<&'static str> {
    match exit {
        ExitStatus::Code(152) => return Some("CPU time"),
        ExitStatus::Code(153) => return Some("file size"),
        ExitStatus::Signal(signal) if signal == "SIGXCPU" => return Some("CPU time"),
        ExitStatus::Signal(signal) if signal == "SIGXFSZ" => return Some("file size"),
        ExitStatus::Signal(signal) if signal == "SIGKILL" && !timed_out => return Some("memory"),
        _ => {}
    }
    if stderr.contains("fork: retry: Resource temporarily unavailable")
        || stderr.contains("fork: Resource temporarily unavailable")
        || stderr.contains("Cannot fork")
    {
        return Some("process");
    }
    if stderr.contains("MemoryError")
        || stderr.contains("Cannot allocate memory")
        || stderr.contains("out of memory")
        || (!timed_out && *exit == ExitStatus::Code(137))
    {
        return Some("memory");
    }
    None
}

/// The model-facing text of one finished run. A non-zero exit is reported, not an error: the
/// model decides what it means.
pub fn render_shell_result(run: &ShellRun) -> String {
    let mut body = run.stdout.rendered();
    let stderr = run.stderr.rendered();
    if !stderr.is_empty() {
        if !body.is_empty() && !body.ends_with('\n') {
            body.push('\n');
        }
        body.push_str("[stderr]\n");
        body.push_str(&stderr);
    }
    if body.is_empty() {
        body.push_str("(no output)");
    }
    let mut markers = Vec::new();
    if let Some(mode) = &run.sandbox_denied {
        markers.push(format!("[sandbox: file access denied under {mode} mode]"));
        if run.escalation_available {
            markers.push(
                "[sandbox: escalation available — retry this exact command once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]"
                    .to_owned(),
            );
        }
    }
    if let Some(limit) = run.limit_reached {
        markers.push(format!(
            "[sandbox: the command ran into its {limit} limit; the host is untouched]"
        ));
    }
    if run.timed_out {
        markers.push(format!("[timed out after {}ms]", run.timeout_ms));
    }
    match &run.exit {
        ExitStatus::Signal(signal) => markers.push(format!("[killed by signal: {signal}]")),
        ExitStatus::Code(0) => {}
        ExitStatus::Code(code) => markers.push(format!("[exit code: {code}]")),
    }
    if markers.is_empty() {
        return body;
    }
    if !body.ends_with('\n') {
        body.push('\n');
    }
    body + &markers.join("\n")
}

/// Split a rendered result into its body and exit status, the inverse of the final marker.
/// Only a marker on its own final line counts, so output that merely mentions one does not.
pub fn parse_exit_status(text: &str) -> (&str, ExitStatus) {
    if let Some((body, last)) = text.rsplit_once('\n') {
        if let Some(signal) = last
            .strip_prefix("[killed by signal: ")
            .and_then(|rest| rest.strip_suffix(']'))
            .filter(|signal| !signal.is_empty() && !signal.contains(']'))
        {
            return (body, ExitStatus::Signal(signal.to_owned()));
        }
        if let Some(code) = last
            .strip_prefix("[exit code: ")
            .and_then(|rest| rest.strip_suffix(']'))
            .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse().ok())
        {
            return (body, ExitStatus::Code(code));
        }
    }
    (text, ExitStatus::Code(0))
}

/// A JavaScript-style rendering of a number for diagnostics (`-5`, not `-5.0`).
fn js_number(value: f64) -> impl fmt::Display {
    struct Js(f64);
    impl fmt::Display for Js {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            if self.0.fract() == 0.0 && self.0.abs() < 1e21 {
                write!(f, "{:.0}", self.0)
            } else {
                write!(f, "{}", self.0)
            }
        }
    }
    Js(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_is_read_from_the_signal_or_from_the_shells_code_for_it() {
        let signal = |name: &str| ExitStatus::Signal(name.to_owned());
        assert_eq!(
            limit_reached(&signal("SIGXCPU"), "", false),
            Some("CPU time")
        );
        assert_eq!(
            limit_reached(&ExitStatus::Code(152), "", false),
            Some("CPU time")
        );
        assert_eq!(
            limit_reached(&signal("SIGXFSZ"), "", false),
            Some("file size")
        );
        assert_eq!(
            limit_reached(&ExitStatus::Code(153), "", false),
            Some("file size")
        );
        assert_eq!(limit_reached(&signal("SIGKILL"), "", false), Some("memory"));
        // A kill the deadline sent is no limit; nor is a plain failure or SIGTERM.
        assert_eq!(limit_reached(&signal("SIGKILL"), "", true), None);
        assert_eq!(limit_reached(&signal("SIGTERM"), "", false), None);
        assert_eq!(limit_reached(&ExitStatus::Code(1), "", false), None);
    }
}
