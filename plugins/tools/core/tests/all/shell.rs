//! Shell output shaping.

use dsh_tools_core::{
    CollectedOutput, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_SHELL_TIMEOUT_MS, ExitStatus,
    MAX_SHELL_TIMEOUT_MS, ShellRun, clamp_timeout_ms, parse_exit_status, render_shell_result,
    tail_output,
};

fn out(text: &str) -> CollectedOutput {
    CollectedOutput {
        text: text.to_owned(),
        truncated: false,
        spill_path: None,
    }
}

fn run(stdout: &str, stderr: &str, exit: ExitStatus) -> ShellRun {
    ShellRun {
        limit_reached: None,
        stdout: out(stdout),
        stderr: out(stderr),
        exit,
        timed_out: false,
        timeout_ms: DEFAULT_SHELL_TIMEOUT_MS,
        sandbox_denied: None,
        escalation_available: false,
    }
}

#[test]
fn timeouts_default_clamp_and_refuse_non_positive_values() {
    assert_eq!(DEFAULT_SHELL_TIMEOUT_MS, 120_000);
    assert_eq!(MAX_SHELL_TIMEOUT_MS, 600_000);
    assert_eq!(
        clamp_timeout_ms(None, DEFAULT_SHELL_TIMEOUT_MS, MAX_SHELL_TIMEOUT_MS),
        Ok(120_000)
    );
    assert_eq!(
        clamp_timeout_ms(
            Some(5_000.0),
            DEFAULT_SHELL_TIMEOUT_MS,
            MAX_SHELL_TIMEOUT_MS
        ),
        Ok(5_000)
    );
    assert_eq!(
        clamp_timeout_ms(
            Some(900_000.0),
            DEFAULT_SHELL_TIMEOUT_MS,
            MAX_SHELL_TIMEOUT_MS
        ),
        Ok(600_000)
    );
    assert_eq!(
        clamp_timeout_ms(Some(1e300), DEFAULT_SHELL_TIMEOUT_MS, MAX_SHELL_TIMEOUT_MS),
        Ok(600_000)
    );
    assert_eq!(
        clamp_timeout_ms(Some(0.5), DEFAULT_SHELL_TIMEOUT_MS, MAX_SHELL_TIMEOUT_MS),
        Ok(1)
    );
    let error =
        clamp_timeout_ms(Some(-5.0), DEFAULT_SHELL_TIMEOUT_MS, MAX_SHELL_TIMEOUT_MS).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid timeoutMs: expected a positive number, got -5"
    );
    assert!(clamp_timeout_ms(Some(0.0), DEFAULT_SHELL_TIMEOUT_MS, MAX_SHELL_TIMEOUT_MS).is_err());
}

#[test]
fn output_keeps_the_tail_on_a_char_boundary() {
    assert_eq!(DEFAULT_MAX_OUTPUT_BYTES, 64_000);
    let short = tail_output(b"hello", DEFAULT_MAX_OUTPUT_BYTES);
    assert_eq!((short.text.as_str(), short.truncated), ("hello", false));

    let mut long = "x".repeat(70_000);
    long.push_str("END");
    let cut = tail_output(long.as_bytes(), DEFAULT_MAX_OUTPUT_BYTES);
    assert!(cut.truncated);
    assert_eq!(cut.text.len(), 64_000);
    assert!(cut.text.ends_with("END"));

    // "é" is two bytes: a cut landing inside it starts after it instead.
    let accented = "ééé".as_bytes();
    let cut = tail_output(accented, 5);
    assert_eq!(cut.text, "éé");
    assert!(cut.truncated);
    let cut = tail_output("a😀b".as_bytes(), 4);
    assert_eq!(cut.text, "b");
}

#[test]
fn a_cut_stream_says_where_the_full_output_is() {
    let mut stream = tail_output(&[b'y'; 10], 4);
    assert_eq!(
        stream.rendered(),
        "yyyy\n[output truncated; full output: (unavailable)]"
    );
    stream.spill_path = Some("/tmp/dsh-spill.log".into());
    assert_eq!(
        stream.rendered(),
        "yyyy\n[output truncated; full output: /tmp/dsh-spill.log]"
    );
}

#[test]
fn results_render_body_stderr_and_markers_in_order() {
    assert_eq!(
        render_shell_result(&run("hi\n", "", ExitStatus::Code(0))),
        "hi\n"
    );
    assert_eq!(
        render_shell_result(&run("", "", ExitStatus::Code(0))),
        "(no output)"
    );
    assert_eq!(
        render_shell_result(&run("out", "bad\n", ExitStatus::Code(2))),
        "out\n[stderr]\nbad\n[exit code: 2]"
    );
    assert_eq!(
        render_shell_result(&run("", "", ExitStatus::Code(1))),
        "(no output)\n[exit code: 1]"
    );
    let mut timed = run("partial", "", ExitStatus::Signal("SIGKILL".into()));
    timed.timed_out = true;
    timed.timeout_ms = 5_000;
    assert_eq!(
        render_shell_result(&timed),
        "partial\n[timed out after 5000ms]\n[killed by signal: SIGKILL]"
    );
    let mut denied = run("", "cannot write\n", ExitStatus::Code(1));
    denied.sandbox_denied = Some("workspace-write".into());
    assert_eq!(
        render_shell_result(&denied),
        "[stderr]\ncannot write\n[sandbox: file access denied under workspace-write mode]\n[exit code: 1]"
    );
    denied.escalation_available = true;
    assert!(
        render_shell_result(&denied)
            .contains("[sandbox: escalation available — retry this exact command once")
    );
}

#[test]
fn exit_markers_parse_back_only_from_the_last_line() {
    assert_eq!(
        parse_exit_status("out\n[exit code: 2]"),
        ("out", ExitStatus::Code(2))
    );
    assert_eq!(
        parse_exit_status("x\n[killed by signal: SIGTERM]"),
        ("x", ExitStatus::Signal("SIGTERM".into()))
    );
    assert_eq!(parse_exit_status("clean"), ("clean", ExitStatus::Code(0)));
    assert_eq!(
        parse_exit_status("[exit code: 2]"),
        ("[exit code: 2]", ExitStatus::Code(0))
    );
    assert_eq!(
        parse_exit_status("a\n[exit code: 2] trailing"),
        ("a\n[exit code: 2] trailing", ExitStatus::Code(0))
    );
    let rendered = render_shell_result(&run("out", "", ExitStatus::Code(3)));
    assert_eq!(parse_exit_status(&rendered), ("out", ExitStatus::Code(3)));
}
