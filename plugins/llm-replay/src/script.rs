//! The replay scripts: the model attempts recorded in a session log (REFERENCE §10), changed by
//! an override file, and the child logs of nested agents, each bound to the live session whose
//! first call comes in its turn.
//!
//! The script of a log is its `assistant/chunk` events split at every `finish` chunk (one entry
//! per model attempt; a retried attempt is an entry of its own). A `compaction/summary` made by
//! a model call (`llmStreamCall: true`) with its whole `rawOutput` is replayed, at its place,
//! as the canonical stream of that output. A group of chunks without a `finish` is the trace of
//! a stream that failed: an override must say how it failed, and until one does, its call
//! fails naming the gap.

use dsh_protocol::kinds;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use dsh_plugin_api::lock;
use dsh_protocol::{ContentBlock, FinishReason, StreamChunk, TokenUsage};
use serde::Deserialize;
use serde_json::Value;

use crate::entry::{Entry, Override, OverrideError};

/// Why the scripts could not be read, or a session has none.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScriptError {
    #[error("{file}: {error}")]
    Read { file: String, error: std::io::Error },
    #[error("{file}:{line}: {message}")]
    Line {
        file: String,
        line: usize,
        message: String,
    },
    #[error(transparent)]
    Override(#[from] OverrideError),
    #[error(
        "{count} session(s) have replay scripts, and session `{session}` is one more: every live session binds to the next script in order of its first call"
    )]
    TooManySessions { count: usize, session: String },
}

/// One log's script: what its calls answer, in order.
pub(crate) struct Script {
    /// Where it came from, for messages.
    pub(crate) file: String,
    entries: Vec<Option<Entry>>,
    calls: Mutex<usize>,
}

impl Script {
    /// The same script, from its first call again.
    fn restarted(&self) -> Self {
        Self {
            file: self.file.clone(),
            entries: self.entries.clone(),
            calls: Mutex::new(0),
        }
    }

    /// The entry of the script's next call (`None` past its end or at a gap) and its index.
    pub(crate) fn next_call(&self) -> (usize, Option<Entry>) {
        let mut calls = lock(&self.calls);
        let index = *calls;
        *calls += 1;
        (index, self.entries.get(index).cloned().flatten())
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether call `index` is a recorded stream that failed without an override.
    pub(crate) fn is_gap(&self, index: usize) -> bool {
        matches!(self.entries.get(index), Some(None))
    }
}

/// The scripts of a replay, and which live session each is bound to.
pub(crate) struct Scripts {
    scripts: Vec<std::sync::Arc<Script>>,
    bound: Mutex<HashMap<String, std::sync::Arc<Script>>>,
    /// Sessions past the last script start the scripts over (a demo replayed many times).
    repeat: bool,
    /// The session id each script's header names, in script order.
    recorded_ids: Vec<Option<String>>,
    /// The live sessions created since the replay began, in creation order.
    created: Mutex<Vec<String>>,
}

impl Scripts {
    /// The log's script (changed by `overrides`, or by `replay.override.json` beside it) and
    /// those of `children`, ordered by their headers' `createdAt`.
    pub(crate) fn load(
        log: &str,
        overrides: Option<&str>,
        children: &[String],
    ) -> Result<Self, ScriptError> {
        let beside = Path::new(log).with_file_name("replay.override.json");
        let overrides = match overrides {
            Some(path) => Some(Path::new(path).to_path_buf()),
            None if beside.is_file() => Some(beside),
            None => None,
        };
        let (created, id, mut entries) = derive(Path::new(log))?;
        if let Some(path) = overrides {
            let filled = entries
                .into_iter()
                .map(|entry| entry.unwrap_or(Entry::Chunks(Vec::new())))
                .collect();
            let patched = Override::load(&path)?.apply(filled, &path)?;
            entries = patched.into_iter().map(Some).collect();
        }
        let mut scripts = vec![(created, id, log.to_owned(), entries)];
        for child in children {
            let (created, id, entries) = derive(Path::new(child))?;
            scripts.push((created, id, child.clone(), entries));
        }
        scripts.sort_by_key(|(created, _, _, _)| *created);
        Ok(Self {
            recorded_ids: scripts.iter().map(|(_, id, _, _)| id.clone()).collect(),
            created: Mutex::new(Vec::new()),
            scripts: scripts
                .into_iter()
                .map(|(_, _, file, entries)| {
                    std::sync::Arc::new(Script {
                        file,
                        entries,
                        calls: Mutex::new(0),
                    })
                })
                .collect(),
            bound: Mutex::new(HashMap::new()),
            repeat: false,
        })
    }

    /// A session created while the replay runs: the k-th one stands for the k-th script.
    pub(crate) fn session_created(&self, id: &str) {
        lock(&self.created).push(id.to_owned());
    }

    /// `text` with each recorded session id replaced by the id of the live session created in
    /// its place: a recorded call that names a child (`send_message` to `3333…`) names the
    /// child this run created. Scripts are ordered by creation as sessions are, so the k-th
    /// script's id maps to the k-th session created.
    pub(crate) fn live_ids(&self, text: String) -> String {
        let created = lock(&self.created);
        let mut text = text;
        for (recorded, live) in self.recorded_ids.iter().zip(created.iter()) {
            if let Some(recorded) = recorded.as_deref().filter(|recorded| *recorded != live)
                && text.contains(recorded)
            {
                text = text.replace(recorded, live);
            }
        }
        text
    }

    /// How many calls the scripts answer in all.
    pub(crate) fn calls(&self) -> usize {
        self.scripts.iter().map(|script| script.len()).sum()
    }

    /// Sessions past the last script start the scripts over instead of failing.
    pub(crate) fn repeating(mut self) -> Self {
        self.repeat = true;
        self
    }

    /// The script of `session`, bound at its first call to the next unbound one.
    pub(crate) fn for_session(&self, session: &str) -> Result<std::sync::Arc<Script>, ScriptError> {
        let mut bound = lock(&self.bound);
        if let Some(script) = bound.get(session) {
            return Ok(script.clone());
        }
        let next = bound.len();
        let script = match self.scripts.get(next) {
            Some(script) => script.clone(),
            None if self.repeat && !self.scripts.is_empty() => {
                std::sync::Arc::new(self.scripts[next % self.scripts.len()].restarted())
            }
            None => {
                return Err(ScriptError::TooManySessions {
                    count: self.scripts.len(),
                    session: session.to_owned(),
                });
            }
        };
        bound.insert(session.to_owned(), script.clone());
        Ok(script)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    #[serde(default)]
    llm_stream_call: bool,
    #[serde(default)]
    raw_output: Option<Vec<ContentBlock>>,
    #[serde(default)]
    usage: Option<TokenUsage>,
}

/// A log's header `createdAt` (0 without one) and session id, and its entries (`None` for a
/// gap).
type Derived = (i64, Option<String>, Vec<Option<Entry>>);

fn derive(path: &Path) -> Result<Derived, ScriptError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| ScriptError::Read {
        file: file.clone(),
        error,
    })?;
    /// What a replay reads of a session header line (anything else on it is the log's concern).
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct ScriptHeader {
        #[serde(rename = "type")]
        kind: String,
        #[serde(default)]
        created_at: i64,
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        seed_length: u64,
    }
    let mut created = 0;
    let mut id = None;
    // A forked log starts with the events it was seeded with: answers its parent got.
    let mut seed_length = 0;
    let mut entries = Vec::new();
    let mut current = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| ScriptError::Line {
            file: file.clone(),
            line: number + 1,
            message,
        };
        let value: Value = serde_json::from_str(line).map_err(|error| bad(error.to_string()))?;
        if let Ok(header) = ScriptHeader::deserialize(&value)
            && header.kind == "session"
        {
            created = header.created_at;
            id = header.id;
            seed_length = header.seed_length;
            continue;
        }
        // Replay scripts need not be durable logs (no header checks), so lines are read one
        // by one, packed chunk rows expanded.
        let events =
            dsh_session_jsonl::decode_record(value).map_err(|error| bad(error.to_string()))?;
        for event in events.into_iter().filter(|event| event.seq >= seed_length) {
            match event.kind.as_str() {
                kinds::ASSISTANT_CHUNK => {
                    let Some(chunk) = event.data.get("chunk") else {
                        continue;
                    };
                    let finished = chunk.get("type").and_then(Value::as_str) == Some("finish");
                    current.push(chunk.clone());
                    if finished {
                        entries.push(Some(Entry::Chunks(std::mem::take(&mut current))));
                    }
                }
                kinds::COMPACTION_SUMMARY => {
                    let summary: Summary = serde_json::from_value(event.data.clone())
                        .map_err(|error| bad(format!("compaction/summary: {error}")))?;
                    if let (true, Some(output)) = (summary.llm_stream_call, summary.raw_output) {
                        entries.push(Some(Entry::Chunks(canonical(&output, summary.usage))));
                    }
                }
                _ => {}
            }
        }
    }
    if !current.is_empty() {
        entries.push(None);
    }
    Ok((created, id, entries))
}

/// The canonical successful stream of `blocks`: one block-start/block-end pair per block, the
/// recorded usage, finish `stop`.
fn canonical(blocks: &[ContentBlock], usage: Option<TokenUsage>) -> Vec<Value> {
    let mut chunks = Vec::with_capacity(blocks.len() * 2 + 2);
    for (index, block) in (0u32..).zip(blocks) {
        chunks.push(StreamChunk::BlockStart {
            index,
            block_type: block.block_type(),
        });
        chunks.push(StreamChunk::BlockEnd {
            index,
            block: block.clone(),
        });
    }
    if let Some(usage) = usage {
        chunks.push(StreamChunk::Usage { usage });
    }
    chunks.push(StreamChunk::finish(FinishReason::Stop));
    chunks
        .iter()
        .filter_map(|chunk| serde_json::to_value(chunk).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn log(dir: &Path, name: &str, created: i64, extra: &str) -> String {
        let path = dir.join(name);
        let header = format!(
            "{{\"type\":\"session\",\"version\":0,\"id\":\"{name}\",\"createdAt\":{created},\"delegationDepth\":0}}\n"
        );
        std::fs::write(&path, header + extra).unwrap();
        path.display().to_string()
    }

    const ONE_CALL: &str = "{\"type\":\"assistant/chunk\",\"seq\":0,\"time\":1,\"data\":{\"chunk\":{\"type\":\"finish\",\"reason\":{\"kind\":\"stop\"}}}}\n";

    #[test]
    fn scripts_go_by_created_at_and_bind_in_order_of_first_call() {
        let dir = std::env::temp_dir().join(format!("replay-script-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let parent = log(&dir, "session.jsonl", 30, ONE_CALL);
        let late = log(&dir, "session.1.jsonl", 20, ONE_CALL);
        let early = log(&dir, "session.2.jsonl", 10, ONE_CALL);
        let scripts = Scripts::load(&parent, None, &[late.clone(), early.clone()]).unwrap();
        assert_eq!(scripts.calls(), 3);
        // The first session to call gets the earliest recording, whatever the listing order.
        assert_eq!(scripts.for_session("b").unwrap().file, early);
        assert_eq!(scripts.for_session("a").unwrap().file, late);
        assert_eq!(scripts.for_session("b").unwrap().file, early, "bound once");
        assert_eq!(scripts.for_session("c").unwrap().file, parent);
        let error = scripts.for_session("d").err().unwrap().to_string();
        assert!(error.contains("`d` is one more"), "{error}");
        // Repeating, a fourth session starts the first script over, from its first call.
        let scripts = Scripts::load(&parent, None, &[late, early.clone()])
            .unwrap()
            .repeating();
        for session in ["a", "b", "c"] {
            scripts.for_session(session).unwrap().next_call();
        }
        let again = scripts.for_session("d").unwrap();
        assert_eq!(again.file, early);
        assert!(
            again.next_call().1.is_some(),
            "the restarted script answers its first call"
        );
    }

    #[test]
    fn a_stream_without_its_finish_is_a_gap_only_an_override_fills() {
        let dir = std::env::temp_dir().join(format!("replay-gap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cut = "{\"type\":\"assistant/chunk\",\"seq\":1,\"time\":2,\"data\":{\"chunk\":{\"type\":\"block-start\",\"index\":0,\"blockType\":\"text\"}}}\n";
        let parent = log(&dir, "session.jsonl", 1, &format!("{ONE_CALL}{cut}"));
        let scripts = Scripts::load(&parent, None, &[]).unwrap();
        let script = scripts.for_session("s").unwrap();
        assert_eq!(script.len(), 2);
        assert!(!script.is_gap(0));
        assert!(script.is_gap(1));
    }
}
