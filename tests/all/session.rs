//! `dsh-host session list/show/derive/check` on the reference's recorded logs and on damaged
//! copies of them.

use std::path::{Path, PathBuf};

use dsh_tests::{TestDir, corpus_dir, run_host};

fn web_fetch() -> PathBuf {
    corpus_dir().join("acp/snapshots/web-fetch/session.jsonl")
}

fn session(dir: &TestDir, args: &[&str]) -> dsh_tests::Output {
    let mut all = vec!["session"];
    all.extend(args);
    run_host(&dir.home(), &all)
}

fn durable_logs(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            durable_logs(&path, out);
        } else {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            // The ralph-loop files are replay scripts, not durable logs (REFERENCE §10).
            let replay_script = path.to_string_lossy().contains("/ralph-loop/");
            if name.starts_with("session") && name.ends_with(".jsonl") && !replay_script {
                out.push(path);
            }
        }
    }
}

#[test]
fn every_recorded_log_checks_sound() {
    dsh_tests::needs_corpus!("every_recorded_log_checks_sound");
    let dir = TestDir::new("session-check-all");
    let mut logs = Vec::new();
    durable_logs(&corpus_dir(), &mut logs);
    assert!(
        logs.len() > 100,
        "fixtures not found under {}",
        corpus_dir().display()
    );
    for log in logs {
        let out = session(&dir, &["check", log.to_str().unwrap()]);
        assert_eq!(out.code, Some(0), "{}: {out:?}", log.display());
        assert!(
            out.stdout.contains("sound: "),
            "{}: {}",
            log.display(),
            out.stdout
        );
    }
}

#[test]
fn show_counts_events_turns_and_usage() {
    dsh_tests::needs_corpus!("show_counts_events_turns_and_usage");
    let dir = TestDir::new("session-show");
    let out = session(&dir, &["show", web_fetch().to_str().unwrap(), "--json"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let value: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        value["header"]["id"],
        "c12fa9af-1042-4a92-9ba4-4a968ff23495"
    );
    assert_eq!(value["summary"]["events"], 130);
    assert_eq!(value["summary"]["byType"]["assistant/chunk"], 113);
    assert_eq!(value["summary"]["turns"][0]["reason"]["kind"], "completed");
    assert_eq!(value["summary"]["usage"]["outputTokens"], 137);
}

#[test]
fn derive_prints_the_model_history() {
    dsh_tests::needs_corpus!("derive_prints_the_model_history");
    let dir = TestDir::new("session-derive");
    let out = session(&dir, &["derive", web_fetch().to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let messages: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let roles: Vec<&str> = messages
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "user", "assistant", "user", "assistant"]);
    assert_eq!(messages[3]["content"][0]["type"], "tool-result");
    assert!(
        out.stdout
            .lines()
            .all(|line| line.starts_with("{\"role\":")),
        "{}",
        out.stdout
    );
}

#[test]
fn a_torn_tail_is_reported_as_repairable_not_corrupt() {
    dsh_tests::needs_corpus!("a_torn_tail_is_reported_as_repairable_not_corrupt");
    let dir = TestDir::new("session-torn");
    let mut text = std::fs::read_to_string(web_fetch()).unwrap();
    text.push_str("{\"type\":\"turn/st");
    let torn = dir.write("torn/session.jsonl", &text);
    let out = session(&dir, &["check", torn.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("repairable: torn tail"),
        "{}",
        out.stdout
    );
    // Read-only: the file is untouched.
    assert_eq!(std::fs::read_to_string(&torn).unwrap(), text);
}

#[test]
fn an_open_turn_is_what_a_load_would_close() {
    dsh_tests::needs_corpus!("an_open_turn_is_what_a_load_would_close");
    let dir = TestDir::new("session-open-turn");
    let recorded = std::fs::read_to_string(corpus_dir().join(
        "headless/semantic-checkpoint-snapshots/tool-outcome-unknown/session.expected.jsonl",
    ))
    .unwrap();
    // The header and seqs 0..=4: the process died while the tool call was running.
    let crashed: String = recorded
        .lines()
        .take(6)
        .map(|line| format!("{line}\n"))
        .collect();
    let path = dir.write("crashed/session.jsonl", &crashed);
    let out = session(&dir, &["check", path.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("repairable:"), "{}", out.stdout);
    let derived = session(&dir, &["derive", path.to_str().unwrap()]);
    assert_eq!(derived.code, Some(0), "{derived:?}");
    // The closers a load appends give the model a tool result saying the outcome is unknown.
    let last: serde_json::Value =
        serde_json::from_str(derived.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["content"][0]["type"], "tool-result");
    assert_eq!(last["content"][0]["isError"], true);
}

#[test]
fn a_seq_gap_before_a_turn_end_is_corruption_naming_the_line() {
    dsh_tests::needs_corpus!("a_seq_gap_before_a_turn_end_is_corruption_naming_the_line");
    let dir = TestDir::new("session-gap");
    let text =
        std::fs::read_to_string(web_fetch())
            .unwrap()
            .replacen("\"seq\":3,", "\"seq\":30,", 1);
    let path = dir.write("gap/session.jsonl", &text);
    let out = session(&dir, &["check", path.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stdout.starts_with("corrupt:"), "{}", out.stdout);
    assert!(out.stdout.contains("seq"), "{}", out.stdout);
}

#[test]
fn a_foreign_version_is_refused() {
    dsh_tests::needs_corpus!("a_foreign_version_is_refused");
    let dir = TestDir::new("session-version");
    let text =
        std::fs::read_to_string(web_fetch())
            .unwrap()
            .replacen("\"version\":0", "\"version\":1", 1);
    let path = dir.write("v1/session.jsonl", &text);
    let out = session(&dir, &["check", path.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stdout.contains("version"), "{}", out.stdout);
}

#[test]
fn an_unknown_required_event_type_is_refused_naming_it() {
    dsh_tests::needs_corpus!("an_unknown_required_event_type_is_refused_naming_it");
    let dir = TestDir::new("session-unknown-type");
    let mut text = std::fs::read_to_string(web_fetch()).unwrap();
    text.push_str("{\"type\":\"plugin/mystery\",\"seq\":130,\"time\":1,\"data\":{}}\n");
    let path = dir.write("unknown/session.jsonl", &text);
    let out = session(&dir, &["check", path.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stdout.contains("plugin/mystery"), "{}", out.stdout);
    let ignorable = text.replace("\"data\":{}}\n", "\"data\":{},\"ignorable\":true}\n");
    let path = dir.write("ignorable/session.jsonl", &ignorable);
    let out = session(&dir, &["check", path.to_str().unwrap()]);
    assert_eq!(
        out.code,
        Some(0),
        "an ignorable unknown type must not refuse the log: {out:?}"
    );
}

#[test]
fn list_finds_sessions_under_the_home() {
    dsh_tests::needs_corpus!("list_finds_sessions_under_the_home");
    let dir = TestDir::new("session-list");
    let stored = dir.home().join(
        "sessions/--~007B~007Bcwd~007D~007D--/c12fa9af-1042-4a92-9ba4-4a968ff23495/session.jsonl",
    );
    std::fs::create_dir_all(stored.parent().unwrap()).unwrap();
    std::fs::copy(web_fetch(), &stored).unwrap();
    let out = session(&dir, &["list"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains("c12fa9af-1042-4a92-9ba4-4a968ff23495"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("turns=1"), "{}", out.stdout);
    let by_id = session(&dir, &["show", "c12fa9af-1042-4a92-9ba4-4a968ff23495"]);
    assert_eq!(by_id.code, Some(0), "{by_id:?}");
    assert!(by_id.stdout.contains("events: 130"), "{}", by_id.stdout);
}
