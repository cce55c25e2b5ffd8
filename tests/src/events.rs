//! Reading session events (`{"type", "seq", "data"}` values, from a stream-json run or a stored
//! log): those of one type, the durable sequence recorded runs are compared by, and what each
//! tool call and result said.

use serde_json::Value;

/// The event types whose order a recorded run is compared by: what the inbox, the turns, the
/// steps and the tools did, and not the streaming around them.
pub const DURABLE: [&str; 8] = [
    "agent/inbox/spliced",
    "turn/start",
    "turn/end",
    "step/start",
    "step/end",
    "assistant/message",
    "tool/call",
    "tool/result",
];

/// The events of type `kind`, in order.
pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|event| event["type"] == kind)
        .collect()
}

/// The types of the [`DURABLE`] events, in order.
pub fn durable_types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| event["type"].as_str())
        .filter(|kind| DURABLE.contains(kind))
        .map(str::to_owned)
        .collect()
}

/// The text of each `tool/result` (its first content part), in order; empty where it has none.
pub fn tool_result_texts(events: &[Value]) -> Vec<String> {
    of_type(events, "tool/result")
        .iter()
        .map(|event| {
            event["data"]["message"]["content"][0]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// The text of the first `tool/result`, empty when there is none.
pub fn first_tool_result_text(events: &[Value]) -> String {
    tool_result_texts(events)
        .into_iter()
        .next()
        .unwrap_or_default()
}

/// `call <name> <arguments>` for each `tool/call` and `result <text> <isError>` for each
/// `tool/result`, in order: what a run's tools did, comparable with a recording's.
pub fn calls_and_results(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event["type"].as_str() {
            Some("tool/call") => Some(format!(
                "call {} {}",
                event["data"]["name"].as_str().unwrap_or_default(),
                event["data"]["arguments"].as_str().unwrap_or_default()
            )),
            Some("tool/result") => {
                let block = &event["data"]["message"]["content"][0];
                Some(format!(
                    "result {} {}",
                    block["content"][0]["text"].as_str().unwrap_or_default(),
                    block["isError"]
                ))
            }
            _ => None,
        })
        .collect()
}
