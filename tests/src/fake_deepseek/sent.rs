//! What the model was sent, read back from the recorded requests: the tool messages (the
//! results the model read, with the calls they answer) and the user messages, as text. One
//! reading for every test, so "the results the model saw" means the same thing everywhere.

use serde_json::Value;

use super::script::RecordedRequest;
use super::server::FakeDeepSeek;

/// A message's content as the model read it: a string as it is, anything else as its JSON.
fn content_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

impl RecordedRequest {
    /// The messages of this chat request (none when it sent no list).
    fn messages(&self) -> &[Value] {
        self.body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Each tool message, in order: the call id it answers and its content as text.
    pub fn tool_messages(&self) -> Vec<(String, String)> {
        self.messages()
            .iter()
            .filter(|message| message["role"] == "tool")
            .map(|message| {
                let call = message["tool_call_id"].as_str().unwrap_or_default();
                (call.to_owned(), content_text(message))
            })
            .collect()
    }

    /// The content of each tool message, as text, in order.
    pub fn tool_texts(&self) -> Vec<String> {
        self.tool_messages()
            .into_iter()
            .map(|(_, text)| text)
            .collect()
    }

    /// The content of each user message, as text, in order.
    pub fn user_texts(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|message| message["role"] == "user")
            .map(content_text)
            .collect()
    }

    /// The names of the tools offered, in order.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
            .collect()
    }
}

impl FakeDeepSeek {
    /// The tools offered in the first request with a user message `text`, waiting for it at
    /// most [`crate::WAIT`].
    pub fn tools_offered_with(&self, text: &str) -> Vec<String> {
        let deadline = std::time::Instant::now() + crate::WAIT;
        loop {
            if let Some(request) = self
                .requests()
                .into_iter()
                .find(|request| request.user_texts().iter().any(|said| said == text))
            {
                return request.tool_names();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no request for `{text}`"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The tool messages of the model's last request (none before the first), by call id.
    pub fn last_tool_messages(&self) -> Vec<(String, String)> {
        self.requests()
            .last()
            .map(RecordedRequest::tool_messages)
            .unwrap_or_default()
    }

    /// The tool messages of the model's last request, as text: the results it read last.
    pub fn last_tool_texts(&self) -> Vec<String> {
        self.requests()
            .last()
            .map(RecordedRequest::tool_texts)
            .unwrap_or_default()
    }
}
