//! The replay script: recorded attempts from a session log, or the override file.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

/// What request *i* gets.
pub(crate) enum Answer {
    /// The chunks of one attempt, as JSON.
    Chunks(Arc<Vec<String>>),
    /// Never answer; create this file first, if given.
    Hang(Option<String>),
}

pub(crate) struct Script {
    answers: Vec<Answer>,
}

impl Script {
    pub(crate) fn len(&self) -> usize {
        self.answers.len()
    }

    pub(crate) fn answer(&self, index: usize) -> Option<Answer> {
        self.answers.get(index).map(|answer| match answer {
            Answer::Chunks(chunks) => Answer::Chunks(chunks.clone()),
            Answer::Hang(ready) => Answer::Hang(ready.clone()),
        })
    }

    /// The override file when there is one (given, or beside the log), else the log's attempts.
    pub(crate) fn load(log: &str, overrides: Option<&str>) -> Result<Self, String> {
        let beside = Path::new(log).with_file_name("replay.override.json");
        let overrides = match overrides {
            Some(path) => Some(Path::new(path).to_path_buf()),
            None if beside.is_file() => Some(beside),
            None => None,
        };
        match overrides {
            Some(path) => Self::from_overrides(&path),
            None => Self::from_log(Path::new(log)),
        }
    }

    fn from_overrides(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("{}: {error}", path.display()))?;
        let entries: Vec<Value> =
            serde_json::from_str(&text).map_err(|error| format!("{}: {error}", path.display()))?;
        let answers = entries
            .iter()
            .enumerate()
            .map(
                |(index, entry)| match entry.get("kind").and_then(Value::as_str) {
                    Some("chunks") => {
                        let chunks =
                            entry
                                .get("chunks")
                                .and_then(Value::as_array)
                                .ok_or_else(|| {
                                    format!(
                                        "{}: entry {index}: `chunks` must be an array",
                                        path.display()
                                    )
                                })?;
                        Ok(Answer::Chunks(Arc::new(
                            chunks.iter().map(Value::to_string).collect(),
                        )))
                    }
                    Some("hang") => Ok(Answer::Hang(
                        entry
                            .get("readyFile")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    )),
                    other => Err(format!(
                        "{}: entry {index}: unknown kind {other:?} (expected chunks or hang)",
                        path.display()
                    )),
                },
            )
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Self { answers })
    }

    /// Every `assistant/chunk` of the log in order, cut into attempts at each `finish`. Replay
    /// scripts need not be durable logs (no header checks), so lines are read one by one.
    fn from_log(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("{}: {error}", path.display()))?;
        let mut answers = Vec::new();
        let mut current = Vec::new();
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(line)
                .map_err(|error| format!("{}:{}: {error}", path.display(), number + 1))?;
            if value.get("type").and_then(Value::as_str) == Some("session") {
                continue;
            }
            let events = dsh_session_jsonl::decode_record(value)
                .map_err(|error| format!("{}:{}: {error}", path.display(), number + 1))?;
            for event in events
                .iter()
                .filter(|event| event.kind == "assistant/chunk")
            {
                let Some(chunk) = event.data.get("chunk") else {
                    continue;
                };
                let finished = chunk.get("type").and_then(Value::as_str) == Some("finish");
                current.push(chunk.to_string());
                if finished {
                    answers.push(Answer::Chunks(Arc::new(std::mem::take(&mut current))));
                }
            }
        }
        if !current.is_empty() {
            // An attempt cut off without a finish is still an answer (an interrupted stream).
            answers.push(Answer::Chunks(Arc::new(current)));
        }
        Ok(Self { answers })
    }
}
