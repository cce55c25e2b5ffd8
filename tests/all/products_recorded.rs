//! The reference's recorded product-subagent cases through the real `dsh-host`: the
//! compositions' tools word for word, and the recorded diagnostics case replayed with each
//! product's double behind its tool.

use std::path::PathBuf;

use dsh_tests::TestDir;
use dsh_tests::events::calls_and_results;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::replayed_run;
use dsh_tests::products::{double, product_row, run_task};
use dsh_tests::sessions::{PLAIN_STORE, read_log, stored_logs};
use serde_json::{Value, json};

/// The recorded product cases, by their path under the reference's fixtures.
fn recorded(case: &str) -> PathBuf {
    dsh_tests::corpus_dir().join("acp/snapshots").join(case)
}

/// `(name, description, parameters)` of each tool of the first request whose name `keep`s.
fn offered_tools(server: &FakeDeepSeek, keep: impl Fn(&str) -> bool) -> Vec<Value> {
    let requests = server.requests();
    let mut tools: Vec<Value> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| &tool["function"])
        .filter(|tool| keep(tool["name"].as_str().unwrap_or_default()))
        .map(|tool| json!({"name": tool["name"], "description": tool["description"], "parameters": tool["parameters"]}))
        .collect();
    tools.sort_by_key(|tool| tool["name"].to_string());
    tools
}

fn expected_tools(case: &str, keep: impl Fn(&str) -> bool) -> Vec<Value> {
    let text = std::fs::read_to_string(recorded(case).join("tool-schemas.expected.json")).unwrap();
    let expected: Value = serde_json::from_str(&text).unwrap();
    let mut tools: Vec<Value> = expected["initial"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|tool| keep(tool["name"].as_str().unwrap_or_default()))
        .cloned()
        .collect();
    tools.sort_by_key(|tool| tool["name"].to_string());
    tools
}

/// The product tools and the job tools the model is offered are the recording's, word for
/// word, for every named instance (the rest of the recorded catalog is other issues' tools).
#[test]
fn recorded_product_compositions_offer_the_recorded_tools() {
    dsh_tests::needs_corpus!("recorded_product_compositions_offer_the_recorded_tools");
    let is_ours = |name: &str| name.starts_with("subagent_c") || name.starts_with("job_");
    let instances = [
        (
            "product-subagent-codex",
            vec![("codex-primary", "codex"), ("codex-secondary", "codex")],
        ),
        (
            "product-subagent-both",
            vec![
                ("codex-primary", "codex"),
                ("codex-secondary", "codex"),
                ("claude-primary", "claude-code"),
                ("claude-secondary", "claude-code"),
            ],
        ),
    ];
    for (case, rows) in instances {
        let dir = TestDir::new(&format!("products-{case}"));
        let server = FakeDeepSeek::start(vec![Reply::text("PONG")]);
        let rows: String = rows
            .iter()
            .map(|(id, product)| {
                let tool = format!("subagent_{}", id.replace('-', "_"));
                let command = double(if *product == "codex" {
                    "fake-codex"
                } else {
                    "fake-claude"
                });
                product_row(&format!("subagent-{id}"), product, &tool, &command, &[])
            })
            .collect();
        let out = run_task(
            &server,
            &dir,
            &rows,
            "Reply with exactly the word: PONG. Do not use any tools.",
            "danger-full-access",
        );
        assert_eq!(out.code, Some(0), "{case}: stderr: {}", out.stderr);
        assert_eq!(
            offered_tools(&server, is_ours),
            expected_tools(case, is_ours),
            "{case}"
        );
    }
}

/// The recorded foreground and background diagnostics: one tool `subagent_codex` whose first
/// three calls meet a Claude Code failure and whose last three a Codex one. Replayed once with
/// each product behind the tool (its double failing that way); each run's half is compared
/// with the recording: results, the job's notice, and job_output's status.
#[test]
fn the_recorded_product_diagnostics_replay() {
    dsh_tests::needs_corpus!("the_recorded_product_diagnostics_replay");
    let case = "product-subagent-result-diagnostic";
    let (_, recorded_events) = read_log(&recorded(case).join("session.jsonl"));
    let halves = [
        (
            "claude-code",
            "fake-claude",
            ("FAKE_CLAUDE_TOKENS", "FAKE_RESULT=error_max_budget_usd"),
            "call_claude_",
        ),
        (
            "codex",
            "fake-codex",
            ("FAKE_CODEX_TOKENS", "FAKE_FAIL_HTTP=503"),
            "call_codex_",
        ),
    ];
    let mut problems = Vec::new();
    for (product, command, tokens, calls) in halves {
        let dir = TestDir::new(&format!("products-diagnostic-{product}"));
        let rows = product_row(
            "subagent-diagnostic",
            product,
            "subagent_codex",
            &double(command),
            &[tokens],
        );
        dir.write(
            "home/cordis.patch.yml",
            &format!("{}- insert:\n{rows}", PLAIN_STORE),
        );
        let replay = dir.join("replay");
        std::fs::create_dir_all(&replay).unwrap();
        for name in ["session.jsonl", "replay.override.json"] {
            std::fs::copy(recorded(case).join(name), replay.join(name)).unwrap();
        }
        let task = recorded_events
            .iter()
            .find(|event| {
                event["type"] == "user/message" && event["data"]["source"]["kind"] == "user"
            })
            .and_then(|event| event["data"]["content"][0]["text"].as_str())
            .unwrap()
            .to_owned();
        let out = replayed_run(&dir, &replay.join("session.jsonl"), &[&task]);
        let logs = stored_logs(&dir.home());
        let Some((_, ours)) = logs.first() else {
            problems.push(format!("{product}: nothing stored; stderr: {}", out.stderr));
            continue;
        };
        let label = match calls {
            "call_codex_" => "(subagent: Observe Codex",
            _ => "(subagent: Observe Claude",
        };
        let notices = |events: &[Value]| -> Vec<String> {
            events
                .iter()
                .filter(|event| {
                    event["type"] == "user/message"
                        && event["data"]["source"]["plugin"] == "tool-jobs"
                })
                .filter_map(|event| event["data"]["content"][0]["text"].as_str())
                .filter(|text| text.contains(label))
                .map(str::to_owned)
                .collect()
        };
        let results = |events: &[Value]| calls_and_results(&half_events(events, calls));
        let (mine, theirs) = (results(ours), results(&recorded_events));
        if mine != theirs {
            problems.push(format!(
                "{product}:\n  ours     {mine:?}\n  recorded {theirs:?}\nstderr: {}",
                out.stderr
            ));
        }
        // The recorded provider settled before the model's next step, so its notice came
        // first; a product process may settle while job_output already waits for it, and a
        // wait that collects the end leaves no notice beside it (as the reference does).
        // Whatever notice came must be the recorded one.
        let (mine, theirs) = (notices(ours), notices(&recorded_events));
        if mine.iter().any(|notice| !theirs.contains(notice)) {
            problems.push(format!(
                "{product}: notices\n  ours     {mine:?}\n  recorded {theirs:?}"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// The `tool/call` and `tool/result` events of the calls whose id starts with `prefix`.
fn half_events(events: &[Value], prefix: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|event| {
            let call = match event["type"].as_str() {
                Some("tool/call") => event["data"]["callId"].as_str(),
                Some("tool/result") => event["data"]["message"]["source"]["callId"].as_str(),
                _ => None,
            };
            call.is_some_and(|id| id.starts_with(prefix))
        })
        .cloned()
        .collect()
}
