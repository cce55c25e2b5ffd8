//! The sandbox through the real host: the fail-closed refusal when no backend works, a command
//! that stays inside works and the model is told the policy, the allow, deny and ask rules,
//! the Landlock fallback and fenced reads. The escape catalogue is `escapes`. Runs against real
//! bubblewrap (`cargo xtask test` installs it).

use std::net::TcpListener;

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::against_patched;
use serde_json::{Value, json};

fn bash(command: String) -> Value {
    json!({"command": command, "description": "try it"})
}

/// The headless profile against `server`, sandbox rows patched with `sandbox` (YAML config
/// lines), in `dir`, with `envs`.
fn run(
    server: &FakeDeepSeek,
    dir: &TestDir,
    sandbox: &str,
    envs: &[(&str, &str)],
) -> dsh_tests::Output {
    let rows = format!("- id: sandbox\n  config:\n{sandbox}");
    against_patched(server, dir, &rows, &["try to get out"], envs)
}

#[test]
fn with_no_working_backend_a_command_is_refused_and_says_how_to_install_one() {
    let dir = TestDir::new("sandbox-no-backend");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let command = bash("touch ran".to_owned()).to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &command)]),
        Reply::text("refused"),
    ]);
    let out = run(
        &server,
        &dir,
        "    backend: bwrap\n    bwrap: /nonexistent/bwrap\n",
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let results = server.last_tool_messages();
    let text = &results[0].1;
    assert!(
        text.contains("[sandbox: refused]") && text.contains("apt-get install bubblewrap"),
        "{text}"
    );
    assert!(
        text.contains("/nonexistent/bwrap"),
        "the failed backend is not named: {text}"
    );
    assert!(!dir.join("work/ran").exists(), "the command ran unconfined");
    // The model was told, in its runtime context, that commands are refused here.
    let first = server.requests()[0].body.to_string();
    assert!(first.contains("refuses every command"), "{first}");
}

#[test]
fn inside_the_workspace_commands_write_and_the_model_is_told_the_policy() {
    dsh_tests::needs_bubblewrap!("the bubblewrap policy text");
    let dir = TestDir::new("sandbox-inside");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let command = bash("echo made > made.txt && cat made.txt && echo tmp > /tmp/dsh-sandbox-inside-$$ && rm /tmp/dsh-sandbox-inside-$$ && echo ok".to_owned()).to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &command)]),
        Reply::text("done"),
    ]);
    let out = run(&server, &dir, "    network: false\n", &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let text = &server.last_tool_messages()[0].1;
    assert!(text.contains("made") && text.contains("ok"), "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.join("work/made.txt")).unwrap(),
        "made\n"
    );
    let first = server.requests()[0].body.to_string();
    assert!(
        first.contains("Sandbox: workspace-write (enforced by bwrap)"),
        "{first}"
    );
}

/// Rules from the user's settings and the project's file, through the real pipeline: a denied
/// command and a compound one with a denied part are refused naming the rule, an asked one is
/// put to a person (none answers headless: refused), an allowed one runs; a project file with
/// a broken rule refuses calls naming its file and line.
#[test]
fn allow_deny_and_ask_rules_decide_before_the_call() {
    let dir = TestDir::new("permission-rules");
    dir.trust_projects();
    let work = dir.join("work");
    std::fs::create_dir_all(work.join(".dsh")).unwrap();
    std::fs::create_dir_all(dir.home()).unwrap();
    std::fs::write(
        dir.home().join("settings.yaml"),
        "permissions:\n  deny: [\"bash(rm *)\"]\n  ask: [\"bash(git push*)\"]\n",
    )
    .unwrap();
    std::fs::write(
        work.join(".dsh/settings.yaml"),
        "permissions:\n  deny: [\"write(secrets/**)\"]\n",
    )
    .unwrap();
    let calls = [
        ("bash", bash("rm -rf build".to_owned())),
        ("bash", bash("echo fine && rm notes.txt".to_owned())),
        ("bash", bash("git push origin main".to_owned())),
        (
            "write",
            json!({"file_path": "secrets/key.pem", "content": "x"}),
        ),
        ("bash", bash("echo allowed-ran".to_owned())),
    ];
    let script = Reply::one_call_per_step(
        calls.iter().map(|(tool, arguments)| (*tool, arguments)),
        "done",
    );
    let server = FakeDeepSeek::start(script);
    std::fs::write(work.join("notes.txt"), "keep").unwrap();
    let out = run(&server, &dir, "    network: false\n", &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let answered = server.last_tool_messages();
    let expect = [
        "denied by the rule `bash(rm *)` (user settings)",
        "denied by the rule `bash(rm *)` (user settings): `rm notes.txt`",
        "requires approval",
        "denied by the rule `write(secrets/**)` (.dsh/settings.yaml)",
        "allowed-ran",
    ];
    for (index, fragment) in expect.iter().enumerate() {
        assert!(
            answered[index].1.contains(fragment),
            "call {index}: {}",
            answered[index].1
        );
    }
    assert_eq!(
        std::fs::read_to_string(work.join("notes.txt")).unwrap(),
        "keep"
    );
    assert!(!work.join("secrets").exists());
    // A broken project rule: every call is refused, naming the file and the line.
    std::fs::write(
        work.join(".dsh/settings.yaml"),
        "permissions:\n  allow:\n    - \"bash(ls\"\n",
    )
    .unwrap();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_0", "bash", &bash("echo hi".to_owned()).to_string())]),
        Reply::text("done"),
    ]);
    let out = run(&server, &dir, "    network: false\n", &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let text = &server.last_tool_messages()[0].1;
    assert!(
        text.contains(".dsh/settings.yaml:3") && text.contains("bash(ls"),
        "{text}"
    );
    // A broken rule in the user's settings: named with that file and line.
    std::fs::remove_file(work.join(".dsh/settings.yaml")).unwrap();
    std::fs::write(
        dir.home().join("settings.yaml"),
        "permissions:\n  deny:\n    - \"bash(rm *)\"\n    - \"write(\"\n",
    )
    .unwrap();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_0", "bash", &bash("echo hi".to_owned()).to_string())]),
        Reply::text("done"),
    ]);
    let out = run(&server, &dir, "    network: false\n", &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let text = &server.last_tool_messages()[0].1;
    assert!(
        text.contains("home/settings.yaml:4") && text.contains("`write(`"),
        "{text}"
    );
}

/// Without bubblewrap, `auto` falls back to Landlock (where the kernel has it): files outside
/// the writable roots are fenced, IP sockets refused by the seccomp filter, secrets are still
/// removed, and the model is told the enforcement is partial.
#[test]
fn without_bubblewrap_landlock_fences_files_and_the_network() {
    let dir = TestDir::new("sandbox-landlock");
    let work = dir.join("work");
    let outside = dir.join("outside");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = bash(format!(
        "echo in > inside.txt && cat inside.txt; echo x > {}/a.txt; exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected; echo \"secret=[$DSH_TEST_SECRET_TOKEN]\"",
        outside.display()
    ))
    .to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &command)]),
        Reply::text("done"),
    ]);
    // /tmp stays out of the writable roots here, so the test's own directory is outside.
    let out = run(
        &server,
        &dir,
        "    bwrap: /nonexistent/bwrap\n    writableRoots: []\n    tempWritable: false\n",
        &[("DSH_TEST_SECRET_TOKEN", "hunter2")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let first = server.requests()[0].body.to_string();
    if first.contains("No sandbox backend works") {
        dsh_tests::skip(
            "without_bubblewrap_landlock_fences_files_and_the_network",
            "this kernel has no usable Landlock",
        );
        return;
    }
    assert!(
        first.contains("Sandbox: workspace-write (enforced by landlock)"),
        "{first}"
    );
    let text = &server.last_tool_messages()[0].1;
    assert!(text.contains("in\n") || text.contains("in\\n"), "{text}");
    assert!(text.contains("a.txt: Permission denied"), "{text}");
    // Without a network namespace, the seccomp filter refuses IP sockets outright.
    assert!(
        text.contains("socket: Operation not permitted") && !text.contains("connected\n"),
        "{text}"
    );
    assert!(text.contains("secret=[]"), "{text}");
    assert!(!outside.join("a.txt").exists());
    assert!(listener.accept().is_err());
    assert_eq!(
        std::fs::read_to_string(work.join("inside.txt")).unwrap(),
        "in\n"
    );
}

/// With `readableRoots`, reads are fenced too: a command sees only the system's program
/// directories, the readable roots and the workspace, and the file tools refuse the rest.
#[test]
fn readable_roots_fence_reads_for_commands_and_file_tools() {
    dsh_tests::needs_bubblewrap!("fenced reads under bubblewrap");
    let dir = TestDir::new("sandbox-readable");
    let work = dir.join("work");
    let outside = dir.join("outside");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("private.txt"), "not for the agent").unwrap();
    std::fs::write(work.join("mine.txt"), "for the agent").unwrap();
    let out_dir = outside.display().to_string();
    let calls = [
        (
            "bash",
            bash(format!(
                "cat mine.txt; cat {out_dir}/private.txt; ls /usr/bin/env"
            )),
        ),
        (
            "read",
            json!({"file_path": format!("{out_dir}/private.txt")}),
        ),
        ("grep", json!({"pattern": "agent", "path": out_dir})),
        ("read", json!({"file_path": "mine.txt"})),
    ];
    let script = Reply::one_call_per_step(
        calls.iter().map(|(tool, arguments)| (*tool, arguments)),
        "done",
    );
    let server = FakeDeepSeek::start(script);
    // The temp dir stays out of the roots: the test's own directory lies in it.
    let out = run(
        &server,
        &dir,
        "    readableRoots: []\n    tempWritable: false\n",
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let answered = server.last_tool_messages();
    let shell = &answered[0].1;
    assert!(
        shell.contains("for the agent") && shell.contains("/usr/bin/env"),
        "{shell}"
    );
    assert!(
        !shell.contains("not for the agent") && shell.contains("No such file"),
        "{shell}"
    );
    assert!(
        answered[1].1.contains("[sandbox: file access denied"),
        "{}",
        answered[1].1
    );
    assert!(
        answered[2].1.contains("[sandbox: file access denied"),
        "{}",
        answered[2].1
    );
    assert!(answered[3].1.contains("for the agent"), "{}", answered[3].1);
}
