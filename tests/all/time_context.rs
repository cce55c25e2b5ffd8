//! The opt-in `time-context` row through the real host: turned on by a patch row, each step's
//! request carries a logged reading (turn, step, the time in the configured zone with its
//! offset, the time elapsed); with `refreshIntervalMs` a second step within the interval gets
//! none; a zone that does not exist fails the row, naming the field, and nothing is told.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::{against_patched, stream_json};
use serde_json::{Value, json};

fn on(config: &str) -> String {
    format!("- id: time-context\n  disabled: false\n  config: {config}\n")
}

fn readings(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|event| {
            event["type"] == "user/message" && event["data"]["source"]["plugin"] == "time-context"
        })
        .map(|event| {
            assert_eq!(event["data"]["source"]["form"], "snapshot", "{event}");
            assert_eq!(
                event["data"]["source"]["sections"][0]["name"], "time-context",
                "{event}"
            );
            event["data"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

fn two_steps() -> FakeDeepSeek {
    let read = json!({"file_path": "a.txt"}).to_string();
    FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "read", &read)]),
        Reply::text("done"),
    ])
}

#[test]
fn each_step_is_told_the_time_in_the_configured_zone() {
    if !std::path::Path::new("/usr/share/zoneinfo/Asia/Tokyo").is_file() {
        eprintln!("skipped: no zone files under /usr/share/zoneinfo");
        return;
    }
    let server = two_steps();
    let dir = TestDir::new("time-context");
    dir.write("work/a.txt", "a\n");
    let rows = on("{timeZone: Asia/Tokyo}");
    let out = against_patched(
        &server,
        &dir,
        &rows,
        &["--output", "stream-json", "go"],
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, _) = stream_json(&out.stdout);
    let texts = readings(&events);
    assert_eq!(texts.len(), 2, "one reading a step: {texts:?}");
    let first: Vec<&str> = texts[0].lines().collect();
    assert!(
        first[0].starts_with("Time sampled while preparing turn 1, step 1: ")
            && first[0].ends_with("+09:00[Asia/Tokyo]"),
        "{first:?}"
    );
    assert!(first[1].starts_with("Browser time zone for this request: unavailable."));
    assert_eq!(
        first[2],
        "Elapsed since the preceding model-visible message: unavailable."
    );
    let second: Vec<&str> = texts[1].lines().collect();
    assert!(
        second[0].starts_with("Time sampled while preparing turn 1, step 2: "),
        "{second:?}"
    );
    assert!(
        second[2].starts_with("Elapsed since the preceding step context: ")
            && second[2].ends_with("s."),
        "{second:?}"
    );
    // What was logged is what the model was sent.
    let requests = server.requests();
    assert!(
        requests[1].body["messages"]
            .to_string()
            .contains("turn 1, step 2"),
        "{}",
        requests[1].body
    );
}

#[test]
fn a_refresh_interval_skips_readings_within_it() {
    let server = two_steps();
    let dir = TestDir::new("time-context-interval");
    dir.write("work/a.txt", "a\n");
    let rows = on("{timeZone: UTC, refreshIntervalMs: 3600000}");
    let out = against_patched(
        &server,
        &dir,
        &rows,
        &["--output", "stream-json", "go"],
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, _) = stream_json(&out.stdout);
    let texts = readings(&events);
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(texts[0].contains("+00:00[UTC]"), "{texts:?}");
}

#[test]
fn an_unknown_zone_refuses_the_row() {
    let server = FakeDeepSeek::start(vec![Reply::text("fine")]);
    let dir = TestDir::new("time-context-bad");
    let rows = on("{timeZone: Mars/Olympus_Mons}");
    let out = against_patched(
        &server,
        &dir,
        &rows,
        &["--output", "stream-json", "go"],
        &[],
    );
    // A failing row is reported and left out; the rest of the agent runs.
    assert!(
        out.stderr
            .contains("invalid config: timeZone: time zone `Mars/Olympus_Mons`")
            && out.stderr.contains("row=time-context"),
        "{}",
        out.stderr
    );
    let (events, _) = stream_json(&out.stdout);
    assert!(readings(&events).is_empty(), "{events:?}");
}
