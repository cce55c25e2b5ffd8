//! A session's enclave through the real host and real bubblewrap: the session's confined
//! commands enter one bubblewrap sandbox kept for it, each still in pid, mount and IPC
//! namespaces of its own with its own `/proc`, nothing a command leaves running outlives it,
//! a protected path that appears is read-only for the next command (a new layout, a new
//! enclave), and `enclaves: false` starts bubblewrap for every command as before.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::against_patched;
use serde_json::{Value, json};

fn bash(command: &str) -> Value {
    json!({"command": command, "description": "look around"})
}

/// One headless turn running `commands` one per step under the sandbox row patched with
/// `config` (YAML lines); the tool results in order.
fn results(dir: &TestDir, config: &str, commands: &[&str]) -> Vec<String> {
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let calls: Vec<Value> = commands.iter().map(|command| bash(command)).collect();
    let server = FakeDeepSeek::start(Reply::one_call_per_step(
        calls.iter().map(|arguments| ("bash", arguments)),
        "done",
    ));
    let rows = format!("- id: sandbox\n  config:\n    network: false\n{config}");
    let out = against_patched(&server, dir, &rows, &["look around"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    server
        .last_tool_messages()
        .into_iter()
        .map(|(_, text)| text)
        .collect()
}

/// What a command prints about where it runs: its first process, its shell's pid, its network
/// namespace, and the names of the processes it sees.
const WHERE: &str = "echo init=$(cat /proc/1/comm) pid=$$ netns=$(readlink /proc/self/ns/net) seen=$(cat /proc/[0-9]*/comm 2>/dev/null | tr '\\n' ,)";

fn field<'a>(text: &'a str, name: &str) -> &'a str {
    text.split_whitespace()
        .find_map(|word| word.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {name}= in {text}"))
}

#[test]
fn a_sessions_commands_share_one_enclave_and_nothing_a_command_leaves_outlives_it() {
    dsh_tests::needs_bubblewrap!("enclaves are bubblewrap sandboxes");
    let dir = TestDir::new("enclave-shared");
    // The first command leaves a process beating in the workspace, out of its group.
    let beat =
        "setsid sh -c 'while true; do date +%s%N > beat; sleep 0.05; done' > /dev/null 2>&1 &";
    let first = format!("{WHERE}; {beat} sleep 0.2; echo left-running");
    let second = format!(
        "{WHERE}; a=$(cat beat); sleep 0.5; b=$(cat beat); [ \"$a\" = \"$b\" ] && echo stopped || echo still-beating"
    );
    let answered = results(&dir, "", &[&first, &second]);
    let (one, two) = (&answered[0], &answered[1]);
    assert!(one.contains("left-running"), "{one}");
    for text in [one, two] {
        // The first process is the enclave's init, not bubblewrap's.
        assert_eq!(field(text, "init"), "dsh-sandbox-exe", "{text}");
        // Its own /proc: the init, the shell and what it runs, not the enclave's holder.
        let seen = field(text, "seen");
        assert!(seen.contains("bash") && !seen.contains("sleep"), "{text}");
        // A pid namespace of its own: the shell is the init's first child in each.
        assert_eq!(field(text, "pid"), "2", "{text}");
    }
    // One enclave (its network namespace) for both.
    assert_eq!(field(one, "netns"), field(two, "netns"), "{one}\n{two}");
    // The process the first command left ended with it.
    assert!(two.contains("stopped"), "{two}");
}

#[test]
fn a_protected_path_that_appears_is_read_only_for_the_next_command() {
    dsh_tests::needs_bubblewrap!("enclaves are bubblewrap sandboxes");
    let dir = TestDir::new("enclave-layout");
    let answered = results(
        &dir,
        "",
        &[
            // `.mcp.json` is protected by name, but a path that does not exist is not bound.
            &format!("{WHERE}; echo '{{}}' > .mcp.json && echo made"),
            &format!(
                "{WHERE}; echo '{{\"mcpServers\":{{}}}}' > .mcp.json && echo changed || echo refused"
            ),
        ],
    );
    assert!(answered[0].contains("made"), "{}", answered[0]);
    assert!(answered[1].contains("refused"), "{}", answered[1]);
    assert_eq!(
        std::fs::read_to_string(dir.join("work/.mcp.json")).unwrap(),
        "{}\n"
    );
    // The second ran in an enclave too: a new one, laid out with the file bound read-only.
    // (Namespace inode numbers are reused once freed, so they cannot tell the two apart.)
    assert_eq!(field(&answered[1], "init"), "dsh-sandbox-exe");
}

#[test]
fn without_enclaves_every_command_starts_bubblewrap() {
    dsh_tests::needs_bubblewrap!("the bubblewrap backend");
    let dir = TestDir::new("enclave-off");
    let answered = results(&dir, "    enclaves: false\n", &[WHERE, WHERE]);
    for text in &answered {
        assert_eq!(field(text, "init"), "bwrap", "{text}");
    }
}
