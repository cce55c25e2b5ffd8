//! One prompt run to its end, as the reference SDK's `session.run` does it: the prompt is
//! queued, the notifications of the session's tree (the session and the children the tree
//! announced under it) are collected from the prompt's inbox receipt until the session is idle
//! again, and the final response is the text of the session's last assistant message.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{Client, ClientError, Notification};

/// What a run came to.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    pub session_id: String,
    /// The text blocks of the session's last assistant message, joined.
    pub final_response: String,
    /// The session's own events, in order.
    pub events: Vec<Value>,
    /// Every notification of the session's tree, in order.
    pub notifications: Vec<Notification>,
}

/// The text of the last assistant message among `events`.
pub fn final_response(events: &[Value]) -> String {
    events
        .iter()
        .rev()
        .find(|event| event["type"] == "assistant/message")
        .and_then(|event| event["data"]["message"]["content"].as_array())
        .map(|blocks| {
            blocks
                .iter()
                .filter(|block| block["type"] == "text")
                .filter_map(|block| block["text"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

/// Which sessions descend from which, from `subagent.started`.
#[derive(Default)]
struct Lineage(HashMap<String, String>);

impl Lineage {
    fn within(&self, session: &str, root: &str) -> bool {
        let mut current = session;
        for _ in 0..=self.0.len() {
            if current == root {
                return true;
            }
            match self.0.get(current) {
                Some(parent) => current = parent,
                None => return false,
            }
        }
        false
    }

    /// Whether `notification` belongs to the tree under `root` (recording lineage first).
    fn admits(&mut self, notification: &Notification, root: &str) -> bool {
        let params = &notification.params;
        let text = |key: &str| params[key].as_str().unwrap_or_default().to_owned();
        match notification.method.as_str() {
            "subagent.started" | "subagent.finished" => {
                if notification.method == "subagent.started" {
                    self.0
                        .insert(text("childSessionId"), text("parentSessionId"));
                }
                self.within(&text("parentSessionId"), root) || text("childSessionId") == root
            }
            _ => self.within(&text("sessionId"), root),
        }
    }
}

fn is_receipt(notification: &Notification, session: &str, message: &str) -> bool {
    let params = &notification.params;
    notification.method == "session.event"
        && params["sessionId"] == session
        && params["event"]["type"] == "agent/inbox/spliced"
        && params["event"]["data"]["inserted"]
            .as_array()
            .is_some_and(|inserted| inserted.iter().any(|item| item["id"] == message))
}

impl Client {
    /// Prompts session `session` with `text` and follows its tree until the session is idle
    /// again, within `timeout` overall.
    pub fn run(
        &self,
        session: &str,
        text: &str,
        timeout: Duration,
    ) -> Result<RunResult, ClientError> {
        let deadline = Instant::now() + timeout;
        let message = self.prompt(session, text, timeout)?;
        let mut lineage = Lineage::default();
        let mut received = false;
        let (mut events, mut notifications) = (Vec::new(), Vec::new());
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let notification = self.next_notification(left).map_err(|error| match error {
                ClientError::Timeout { .. } => ClientError::Timeout {
                    what: format!("session {session} to be idle again"),
                    after: timeout,
                },
                other => other,
            })?;
            if !lineage.admits(&notification, session) {
                continue;
            }
            received = received || is_receipt(&notification, session, &message);
            if !received {
                continue;
            }
            let params = &notification.params;
            let own = params["sessionId"] == session;
            if own && notification.method == "session.event" {
                events.push(params["event"].clone());
            }
            let idle = own && notification.method == "session.status" && params["status"] == "idle";
            notifications.push(notification);
            if idle {
                break;
            }
        }
        Ok(RunResult {
            session_id: session.to_owned(),
            final_response: final_response(&events),
            events,
            notifications,
        })
    }
}
