//! `dsh`'s own host and its life: a turn on a child `dsh-host --profile sdk` and the session
//! continued in a new terminal, a host that dies reported and restarted, SIGTERM restoring the
//! terminal, a terminal that hangs up without a signal ending it, Ctrl-Z to the shell and `fg`
//! back, `dsh -p`, and command lines refused before the screen is taken.

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::tui::{Pane, assert_in_order, dsh_bin};
use dsh_tests::{TestDir, needs_tmux};

use super::{bash_then_text, own_host, own_host_env};

#[test]
fn with_a_host_of_its_own_a_turn_runs_and_the_session_resumes_with_its_history() {
    needs_tmux!(
        "tui::lifecycle::with_a_host_of_its_own_a_turn_runs_and_the_session_resumes_with_its_history"
    );
    let mut script = bash_then_text("echo own-host", "Ran it on my own host.");
    script.push(Reply::text("Second turn, same session."));
    let server = FakeDeepSeek::start(script);
    let dir = TestDir::new("tui-own-host");
    let pane = own_host(&server, &dir, (90, 24), &[]);
    pane.type_text("use your own host");
    pane.keys(&["Enter"]);
    let text = pane.wait_everything("the answer", |text| {
        text.contains("Ran it on my own host.") && text.contains("idle")
    });
    assert_in_order(
        &text,
        &[
            "› use your own host",
            "✓ $ echo own-host",
            "│ own-host",
            "Ran it on my own host.",
        ],
    );
    pane.keys(&["C-c", "C-c"]);
    pane.wait_screen("dsh to exit", |screen| screen.contains("[exited 0]"));
    drop(pane);
    // Continued in a new terminal: the history is printed, then a new turn runs.
    let pane = own_host(&server, &dir, (90, 24), &["--continue"]);
    pane.wait_everything("the history", |text| {
        text.contains("Ran it on my own host.")
    });
    pane.type_text("and again");
    pane.keys(&["Enter"]);
    let text = pane.wait_everything("the second answer", |text| {
        text.contains("Second turn, same session.")
    });
    assert_in_order(
        &text,
        &[
            "› use your own host",
            "Ran it on my own host.",
            "› and again",
            "Second turn, same session.",
        ],
    );
}

#[test]
fn a_host_that_dies_is_reported_restarted_with_ctrl_r_and_sigterm_restores_the_terminal() {
    needs_tmux!(
        "tui::lifecycle::a_host_that_dies_is_reported_restarted_with_ctrl_r_and_sigterm_restores_the_terminal"
    );
    let server = FakeDeepSeek::start(vec![
        Reply::text("Before the crash."),
        Reply::text("After the restart."),
    ]);
    let dir = TestDir::new("tui-host-dies");
    let pane = own_host(&server, &dir, (90, 24), &[]);
    pane.type_text("first");
    pane.keys(&["Enter"]);
    pane.wait_screen("the first answer", |screen| {
        screen.contains("Before the crash.") && screen.contains("idle")
    });
    let (dsh, hosts) = pane.program_pids();
    assert_eq!(hosts.len(), 1, "one child host: {hosts:?}");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &hosts[0].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    pane.wait_screen("the report", |screen| {
        screen.contains("The host stopped") && screen.contains("Ctrl-R restarts it")
    });
    pane.keys(&["C-r"]);
    // A new host, the same session: its history printed again, then a new turn.
    pane.wait_screen("the session again", |screen| {
        screen.contains("own host") && !screen.contains("The host stopped")
    });
    pane.type_text("second");
    pane.keys(&["Enter"]);
    let text = pane.wait_everything("the second answer", |text| {
        text.contains("After the restart.")
    });
    assert_in_order(
        &text,
        &[
            "› first",
            "Before the crash.",
            "› second",
            "After the restart.",
        ],
    );
    let (_, restarted) = pane.program_pids();
    assert!(
        restarted.len() == 1 && restarted != hosts,
        "a new host: {restarted:?}"
    );
    // SIGTERM: dsh leaves as on a quit (143), the terminal back in a shell's mode.
    std::process::Command::new("kill")
        .args(["-TERM", &dsh.to_string()])
        .status()
        .unwrap();
    let end = pane.wait_screen("dsh to exit", |screen| screen.contains("icanon"));
    assert!(end.contains("[exited 143]"), "{end}");
    assert!(end.contains("icanon echo"), "{end}");
}

#[test]
fn a_terminal_that_hangs_up_without_a_signal_ends_dsh_and_its_host() {
    needs_tmux!("tui::lifecycle::a_terminal_that_hangs_up_without_a_signal_ends_dsh_and_its_host");
    let server = FakeDeepSeek::start(Vec::new());
    let dir = TestDir::new("tui-hang-up");
    let envs = own_host_env(&server, &dir);
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // Under `setsid` dsh has no controlling terminal: the hang-up sends it no signal, and it
    // must see for itself that its terminal is gone (crossterm alone reads on, at full speed).
    let dsh_path = dsh_bin();
    let pane = Pane::start(
        &dir,
        &dir.join("work"),
        (80, 24),
        std::path::Path::new("setsid"),
        &[dsh_path.to_str().unwrap()],
        &envs,
    );
    pane.wait_screen("the composer", |screen| screen.contains("Ask anything"));
    let (dsh, hosts) = pane.program_pids();
    assert_eq!(hosts.len(), 1, "dsh and its host: {dsh} {hosts:?}");
    // Idle first: a draw after the hang-up would fail and end dsh anyway; an idle one draws
    // nothing and has only its input to notice with.
    pane.wait_screen("an idle status line", |screen| screen.contains("idle"));
    std::thread::sleep(std::time::Duration::from_secs(1));
    drop(pane);
    let running = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z'))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while (running(dsh) || running(hosts[0])) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (dsh_ran_on, host_ran_on) = (running(dsh), running(hosts[0]));
    // Still ours only while running (an ended one's pid may be another's by now).
    for pid in [(dsh, dsh_ran_on), (hosts[0], host_ran_on)]
        .into_iter()
        .filter_map(|(pid, on)| on.then_some(pid))
    {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .output();
    }
    assert!(
        !dsh_ran_on,
        "dsh ({dsh}) still ran 15 s after its terminal hung up"
    );
    assert!(!host_ran_on, "its host ({}) still ran", hosts[0]);
}

#[test]
fn dsh_p_prints_the_answer_and_its_tool_lines() {
    let server = FakeDeepSeek::start(bash_then_text("echo one-shot", "One shot done."));
    let dir = TestDir::new("tui-print");
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n",
            server.url()
        ),
    );
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let output = std::process::Command::new(dsh_bin())
        .args(["-p", "run it once"])
        .current_dir(dir.join("work"))
        .env("DSH_HOME", dir.home())
        .env("DSH_AGENTS_HOME", dir.join("agents"))
        .env("DEEPSEEK_API_KEY", "sk-test")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout, "One shot done.\n");
    assert!(stderr.contains("✓ $ echo one-shot"), "{stderr}");
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(sent.contains("run it once"), "{sent}");
}

#[test]
fn bad_command_lines_are_refused_before_the_screen_is_taken() {
    let dir = TestDir::new("tui-bad-args");
    let missing = dir.join("no-such.sock");
    let run = |args: &[&str]| {
        std::process::Command::new(dsh_bin())
            .args(args)
            .env("DSH_HOME", dir.home())
            .output()
            .unwrap()
    };
    let output = run(&["--attach", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no socket at") && stderr.contains("no-such.sock"),
        "{stderr}"
    );
    // `--attach` alone with no host running in the home says where it looked.
    let output = run(&["--attach"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no running host to attach to"), "{stderr}");
    let output = run(&["--resume", "x", "--continue"]);
    assert_eq!(output.status.code(), Some(2), "clap's usage error");
    // Not a terminal: dsh says how to run without one.
    let output = run(&[]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("dsh -p"), "{stderr}");
}

#[test]
fn ctrl_z_stops_dsh_in_an_interactive_shell_and_fg_brings_the_screen_back() {
    needs_tmux!(
        "tui::lifecycle::ctrl_z_stops_dsh_in_an_interactive_shell_and_fg_brings_the_screen_back"
    );
    let server = FakeDeepSeek::start(vec![Reply::text("Back from the shell.")]);
    let dir = TestDir::new("tui-suspend");
    let envs = own_host_env(&server, &dir);
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // An interactive shell with job control, as a person has; dsh started from its prompt.
    let pane = Pane::start(
        &dir,
        &dir.join("work"),
        (90, 24),
        std::path::Path::new("bash"),
        &["--norc", "--noprofile", "-i"],
        &envs,
    );
    pane.type_text(&format!("{} ", dsh_bin().display()));
    pane.keys(&["Enter"]);
    pane.wait_screen("the composer", |screen| screen.contains("Ask anything"));
    pane.keys(&["C-z"]);
    let screen = pane.wait_screen("the shell's job line", |screen| screen.contains("Stopped"));
    assert!(
        !screen.contains("Ask anything"),
        "the composer is cleared before the shell takes the terminal:\n{screen}"
    );
    // The pane's program is the shell; its child, dsh, is stopped (state T).
    let (shell, children) = pane.program_pids();
    let dsh = *children.first().expect("the shell runs dsh");
    let stat = std::fs::read_to_string(format!("/proc/{dsh}/stat")).unwrap();
    let state = stat.rsplit_once(") ").map(|(_, rest)| &rest[..1]);
    assert_eq!(
        state,
        Some("T"),
        "dsh (pid {dsh}, shell {shell}) is stopped: {stat}"
    );
    pane.type_text("fg");
    pane.keys(&["Enter"]);
    pane.wait_screen("the composer back", |screen| {
        screen.contains("Ask anything")
    });
    // Keys reach the composer again (raw mode is back), and a turn runs.
    pane.type_text("still there?");
    pane.keys(&["Enter"]);
    let text = pane.wait_everything("the answer", |text| {
        text.contains("Back from the shell.") && text.contains("idle")
    });
    assert_in_order(
        &text,
        &["Stopped", "fg", "› still there?", "Back from the shell."],
    );
}
