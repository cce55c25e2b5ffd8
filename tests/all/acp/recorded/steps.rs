//! The steps of a recorded case's `input.json`, driven as the reference's snapshot harness
//! drives them: requests awaited, prompts cancelled once their turn is under way, and the
//! waits on what the run stored (a turn started or closed, a child's closed turn, a title).

use std::path::Path;
use std::time::Duration;

use dsh_tests::acp::{AcpClient, stored_children, wait_stored};
use dsh_tests::{TestDir, WAIT};
use serde_json::{Value, json};

/// One run of a case: its client, directories and the sessions it created.
pub(super) struct Run<'a> {
    pub(super) client: AcpClient,
    pub(super) dir: &'a TestDir,
    pub(super) work: &'a Path,
    pub(super) sessions: Vec<String>,
}

impl Run<'_> {
    fn session(&self) -> Result<String, String> {
        self.sessions
            .last()
            .cloned()
            .ok_or_else(|| "a step needs a session before newSession".to_owned())
    }

    fn prompt_params(&self, text: &str) -> Result<Value, String> {
        Ok(json!({"sessionId": self.session()?, "prompt": [{"type": "text", "text": text}]}))
    }

    fn wait_file(&self, path: &str, timeout: Duration) -> Result<(), String> {
        // The reference's settlement marker is written by a test-only plugin of its own; the
        // same moment is the first child's closed turn in its stored log.
        if path == ".dsh-snapshot-subagent-settled" {
            return self.wait_child_turn_end(1, 1);
        }
        let file = self.work.join(path);
        let deadline = std::time::Instant::now() + timeout;
        while !file.exists() {
            if std::time::Instant::now() >= deadline {
                return Err(format!("timed out waiting for the file {path}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    fn wait_child_turn_end(&self, child: usize, minimum: u64) -> Result<(), String> {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            if let Some(id) = stored_children(&self.dir.home()).get(child - 1) {
                return wait_stored(
                    &self.dir.home(),
                    id,
                    &format!("a closed turn of child {child}"),
                    WAIT,
                    |events| {
                        events.iter().any(|e| {
                            e["type"] == "turn/end" && e["data"]["turn"].as_u64() >= Some(minimum)
                        })
                    },
                );
            }
            if std::time::Instant::now() >= deadline {
                return Err(format!("child {child} never stored a log"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(super) fn step(&mut self, step: &Value) -> Result<(), String> {
        let op = step["op"].as_str().unwrap_or_default();
        let long = Duration::from_secs(60);
        let text = step["text"].as_str().unwrap_or_default();
        match op {
            "initialize" => {
                self.client.call(
                    "initialize",
                    json!({"protocolVersion": 1, "clientCapabilities": {}}),
                );
            }
            "newSession" => {
                let answer = self
                    .client
                    .call("session/new", json!({"cwd": self.work, "mcpServers": []}));
                let id = answer["result"]["sessionId"]
                    .as_str()
                    .ok_or(format!("session/new failed: {answer}"))?;
                self.sessions.push(id.to_owned());
            }
            "newSessionExpectError" => {
                let answer = self.client.call(
                    "session/new",
                    json!({"cwd": self.work, "mcpServers": [], "additionalDirectories": step["additionalDirectories"]}),
                );
                if answer.get("error").is_none() {
                    return Err(format!("session/new was expected to fail: {answer}"));
                }
            }
            "prompt" | "promptExpectError" => {
                let id = self
                    .client
                    .request("session/prompt", self.prompt_params(text)?);
                let answer = self.client.response(id, long);
                if (op == "promptExpectError") != answer.get("error").is_some() {
                    return Err(format!("{op}: unexpected answer {answer}"));
                }
            }
            "promptContent" => {
                // A prompt of ACP content blocks as given (text and inline images).
                let params = json!({"sessionId": self.session()?, "prompt": step["content"]});
                let id = self.client.request("session/prompt", params);
                let answer = self.client.response(id, long);
                if answer.get("error").is_some() {
                    return Err(format!("{op}: unexpected answer {answer}"));
                }
            }
            "promptAndWaitForAgentMessage" => {
                let id = self
                    .client
                    .request("session/prompt", self.prompt_params(text)?);
                self.client.response(id, long);
                let wanted = step["waitForText"].clone();
                self.client
                    .wait_frame("the awaited agent message", long, |frame| {
                        frame["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
                            && frame["params"]["update"]["content"]["text"] == wanted
                    });
            }
            "promptAndCancel" => {
                let id = self
                    .client
                    .request("session/prompt", self.prompt_params(text)?);
                match step["waitForFile"]["path"].as_str() {
                    Some(path) => self.wait_file(path, WAIT)?,
                    None => self.wait_turn(1, false)?,
                }
                self.client
                    .notify("session/cancel", json!({"sessionId": self.session()?}));
                self.client.response(id, long);
            }
            "cancel" => {
                if let Some(path) = step["waitForFile"]["path"].as_str() {
                    self.wait_file(path, WAIT)?;
                }
                self.client
                    .notify("session/cancel", json!({"sessionId": self.session()?}));
            }
            "waitForFile" => self.wait_file(text_of(step, "path"), WAIT)?,
            "waitForTurnStart" => {
                self.wait_turn(step["minimumTurn"].as_u64().unwrap_or(1), false)?;
            }
            "waitForTurnEnd" => self.wait_turn(0, true)?,
            "waitForSubagentTurnEnd" => {
                let child = step["child"].as_u64().unwrap_or(1);
                self.wait_child_turn_end(
                    usize::try_from(child).unwrap(),
                    step["minimumTurn"].as_u64().unwrap_or(1),
                )?;
            }
            "waitForTitleAfterTurnEnd" => {
                wait_stored(
                    &self.dir.home(),
                    &self.session()?,
                    "a title after the turn",
                    WAIT,
                    |events| {
                        let end = events.iter().rposition(|e| e["type"] == "turn/end");
                        end.is_some_and(|end| {
                            events[end..].iter().any(|e| e["type"] == "session/title")
                        })
                    },
                )?;
            }
            other => return Err(format!("step `{other}` is not one this runner knows")),
        }
        Ok(())
    }

    /// Waits for a stored `turn/start` of at least `minimum`, or (`closed`) for the latest
    /// turn boundary to be a `turn/end`.
    fn wait_turn(&self, minimum: u64, closed: bool) -> Result<(), String> {
        wait_stored(
            &self.dir.home(),
            &self.session()?,
            "a turn boundary",
            WAIT,
            |events| {
                let boundaries: Vec<&Value> = events
                    .iter()
                    .filter(|e| e["type"] == "turn/start" || e["type"] == "turn/end")
                    .collect();
                match closed {
                    true => boundaries.last().is_some_and(|e| e["type"] == "turn/end"),
                    false => boundaries.iter().any(|e| {
                        e["type"] == "turn/start" && e["data"]["turn"].as_u64() >= Some(minimum)
                    }),
                }
            },
        )
    }
}

fn text_of<'a>(step: &'a Value, key: &str) -> &'a str {
    step[key].as_str().unwrap_or_default()
}
