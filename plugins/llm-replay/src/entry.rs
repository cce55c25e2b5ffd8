//! One answer of a replay script, and the override file that replaces or patches a derived
//! script (REFERENCE §10).
//!
//! An override is a bare array of entries, which replaces the script, or
//! `{"patches":[{"at":N,"entry":{..}}]}`, which keeps it and swaps call N (`at` equal to the
//! script's length appends). Exact keys: an unknown kind, key or chunk type, a missing key, an
//! empty string where one is required, or a duplicate `at` fails loud, naming the file and
//! `entry N` or `patches[N]`.

use std::path::Path;

use dsh_protocol::{BlockType, FailureCode, StreamChunk};
use serde::Deserialize;
use serde_json::Value;

/// What one model call of the script answers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// These chunks, then the end of the stream.
    Chunks(Vec<Value>),
    /// These chunks, then a failure with `message` and `code`.
    Throw {
        chunks: Vec<Value>,
        message: String,
        code: FailureCode,
    },
    /// These chunks (by default the reference's prefix, [`hang_prefix`]), then create
    /// `ready_file` (when given) and never yield again, so a test can cancel mid-stream.
    Hang {
        chunks: Vec<Value>,
        ready_file: Option<String>,
    },
}

impl Entry {
    /// The chunks the entry yields before it ends, fails or hangs.
    pub(crate) fn chunks(&self) -> &[Value] {
        match self {
            Self::Chunks(chunks) | Self::Throw { chunks, .. } | Self::Hang { chunks, .. } => chunks,
        }
    }
}

/// An entry as the override file spells it.
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum Spelled {
    Chunks {
        chunks: Vec<Value>,
    },
    Throw {
        chunks: Vec<Value>,
        message: String,
        code: String,
    },
    Hang {
        /// Ours, not the reference's: the prefix in place of [`hang_prefix`] (`[]` for none).
        #[serde(default = "hang_prefix")]
        chunks: Vec<Value>,
        #[serde(default, rename = "readyFile")]
        ready_file: Option<String>,
    },
}

/// What a hang yields before it waits, unless its entry names its own `chunks`: the reference's
/// replay opens a text block and streams `partial`, so a cancelled turn has a partial answer to
/// keep (its recorded `cancel` case logs and sends it, interrupted).
fn hang_prefix() -> Vec<Value> {
    [
        StreamChunk::BlockStart {
            index: 0,
            block_type: BlockType::Text,
        },
        StreamChunk::TextDelta {
            index: 0,
            text: "partial".to_owned(),
        },
    ]
    .iter()
    .filter_map(|chunk| serde_json::to_value(chunk).ok())
    .collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Patches {
    patches: Vec<Patch>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Patch {
    at: usize,
    entry: Value,
}

/// A bad override, naming where.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OverrideError {
    #[error("{file}: {error}")]
    Read { file: String, error: std::io::Error },
    #[error("{file}: not JSON: {error}")]
    Json {
        file: String,
        error: serde_json::Error,
    },
    #[error(
        "{file}: an override is an array of entries or {{\"patches\": [{{\"at\": N, \"entry\": ..}}]}}: {error}"
    )]
    Shape {
        file: String,
        error: serde_json::Error,
    },
    #[error("{file}: {place}: {problem}")]
    Entry {
        file: String,
        place: String,
        problem: EntryProblem,
    },
}

/// What is wrong with one entry.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EntryProblem {
    #[error("{0}")]
    Shape(serde_json::Error),
    #[error("chunks[{index}]: {error}")]
    Chunk {
        index: usize,
        error: serde_json::Error,
    },
    #[error("chunks[{index}]: unknown chunk type `{tag}`")]
    UnknownChunk { index: usize, tag: String },
    #[error("a throw needs a non-empty `message` and `code`")]
    ThrowWithoutCause,
    #[error("`readyFile` must not be empty")]
    EmptyReadyFile,
    #[error("a second patch at {0}")]
    SecondPatch(usize),
    #[error("`at` {at} is past the script's end ({calls} calls)")]
    PastTheEnd { at: usize, calls: usize },
}

/// How an override changes the derived script.
pub(crate) enum Override {
    Replace(Vec<Entry>),
    Patch(Vec<(usize, Entry)>),
}

impl Override {
    pub(crate) fn load(path: &Path) -> Result<Self, OverrideError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| OverrideError::Read {
            file: file.clone(),
            error,
        })?;
        let value: Value = serde_json::from_str(&text).map_err(|error| OverrideError::Json {
            file: file.clone(),
            error,
        })?;
        let entry_error = |place: String, problem: EntryProblem| OverrideError::Entry {
            file: file.clone(),
            place,
            problem,
        };
        if let Value::Array(entries) = value {
            let entries = entries
                .into_iter()
                .enumerate()
                .map(|(index, entry)| {
                    parse(entry).map_err(|problem| entry_error(format!("entry {index}"), problem))
                })
                .collect::<Result<_, _>>()?;
            return Ok(Self::Replace(entries));
        }
        let patches: Patches =
            serde_json::from_value(value).map_err(|error| OverrideError::Shape {
                file: file.clone(),
                error,
            })?;
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for (index, patch) in patches.patches.into_iter().enumerate() {
            let place = format!("patches[{index}]");
            if !seen.insert(patch.at) {
                return Err(entry_error(place, EntryProblem::SecondPatch(patch.at)));
            }
            let entry = parse(patch.entry).map_err(|problem| entry_error(place, problem))?;
            out.push((patch.at, entry));
        }
        Ok(Self::Patch(out))
    }

    /// The script after this override.
    pub(crate) fn apply(
        self,
        derived: Vec<Entry>,
        file: &Path,
    ) -> Result<Vec<Entry>, OverrideError> {
        match self {
            Self::Replace(entries) => Ok(entries),
            Self::Patch(patches) => {
                let mut script = derived;
                let mut patches = patches;
                patches.sort_by_key(|(at, _)| *at);
                for (index, (at, entry)) in patches.into_iter().enumerate() {
                    match at.cmp(&script.len()) {
                        std::cmp::Ordering::Less => script[at] = entry,
                        std::cmp::Ordering::Equal => script.push(entry),
                        std::cmp::Ordering::Greater => {
                            return Err(OverrideError::Entry {
                                file: file.display().to_string(),
                                place: format!("patches[{index}]"),
                                problem: EntryProblem::PastTheEnd {
                                    at,
                                    calls: script.len(),
                                },
                            });
                        }
                    }
                }
                Ok(script)
            }
        }
    }
}

/// One spelled entry, checked: its chunks are stream chunks, its strings are not empty.
fn parse(value: Value) -> Result<Entry, EntryProblem> {
    let spelled: Spelled = serde_json::from_value(value).map_err(EntryProblem::Shape)?;
    let check_chunks = |chunks: &[Value]| -> Result<(), EntryProblem> {
        for (index, chunk) in chunks.iter().enumerate() {
            let chunk = serde_json::from_value::<StreamChunk>(chunk.clone())
                .map_err(|error| EntryProblem::Chunk { index, error })?;
            // A script is written for this version: a chunk type it does not name is a typo.
            if let StreamChunk::Other(unknown) = chunk {
                return Err(EntryProblem::UnknownChunk {
                    index,
                    tag: unknown.tag().unwrap_or_default().to_owned(),
                });
            }
        }
        Ok(())
    };
    match spelled {
        Spelled::Chunks { chunks } => {
            check_chunks(&chunks)?;
            Ok(Entry::Chunks(chunks))
        }
        Spelled::Throw {
            chunks,
            message,
            code,
        } => {
            check_chunks(&chunks)?;
            if message.is_empty() || code.is_empty() {
                return Err(EntryProblem::ThrowWithoutCause);
            }
            Ok(Entry::Throw {
                chunks,
                message,
                code: FailureCode::parse(&code),
            })
        }
        Spelled::Hang { chunks, ready_file } => {
            check_chunks(&chunks)?;
            if ready_file.as_deref() == Some("") {
                return Err(EntryProblem::EmptyReadyFile);
            }
            Ok(Entry::Hang { chunks, ready_file })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(name: &str, value: &Value) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("replay-entry-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("replay.override.json");
        std::fs::write(&path, value.to_string()).unwrap();
        path
    }

    fn stop() -> Value {
        json!({"type": "finish", "reason": {"kind": "stop"}})
    }

    #[test]
    fn a_bare_array_replaces_and_every_kind_reads() {
        let path = write(
            "kinds",
            &json!([
                {"kind": "chunks", "chunks": [stop()]},
                {"kind": "throw", "chunks": [], "message": "nope", "code": "AUTH"},
                {"kind": "hang", "readyFile": "ready"},
            ]),
        );
        let Override::Replace(entries) = Override::load(&path).unwrap() else {
            panic!("expected a replacement");
        };
        assert_eq!(entries[0], Entry::Chunks(vec![stop()]));
        assert!(matches!(
            &entries[1],
            Entry::Throw {
                code: FailureCode::Auth,
                ..
            }
        ));
        assert!(matches!(&entries[2], Entry::Hang { ready_file: Some(f), .. } if f == "ready"));
    }

    #[test]
    fn a_hang_streams_the_reference_prefix_unless_it_names_its_own() {
        let path = write(
            "prefix",
            &json!([{"kind": "hang"}, {"kind": "hang", "chunks": []}]),
        );
        let Override::Replace(entries) = Override::load(&path).unwrap() else {
            panic!("expected a replacement");
        };
        assert_eq!(
            entries[0].chunks(),
            [
                json!({"type": "block-start", "index": 0, "blockType": "text"}),
                json!({"type": "text-delta", "index": 0, "text": "partial"}),
            ]
        );
        assert!(entries[1].chunks().is_empty());
    }

    #[test]
    fn patches_swap_and_append_and_refuse_a_duplicate() {
        let path = write(
            "patches",
            &json!({"patches": [{"at": 1, "entry": {"kind": "chunks", "chunks": []}}, {"at": 0, "entry": {"kind": "hang"}}]}),
        );
        let derived = vec![Entry::Chunks(vec![stop()])];
        let script = Override::load(&path)
            .unwrap()
            .apply(derived, &path)
            .unwrap();
        assert!(matches!(script[0], Entry::Hang { .. }));
        assert_eq!(script[1], Entry::Chunks(vec![]));
        let path = write(
            "dup",
            &json!({"patches": [{"at": 0, "entry": {"kind": "hang"}}, {"at": 0, "entry": {"kind": "hang"}}]}),
        );
        let error = Override::load(&path).err().unwrap().to_string();
        assert!(error.contains("patches[1]"), "{error}");
    }

    #[test]
    fn unknown_kinds_keys_and_chunk_types_fail_naming_the_entry() {
        for (value, place) in [
            (
                json!([{"kind": "chunks", "chunks": []}, {"kind": "sing"}]),
                "entry 1",
            ),
            (
                json!([{"kind": "chunks", "chunks": [], "extra": 1}]),
                "entry 0",
            ),
            (
                json!([{"kind": "chunks", "chunks": [{"type": "shout"}]}]),
                "entry 0",
            ),
            (
                json!([{"kind": "throw", "chunks": [], "message": "", "code": "AUTH"}]),
                "entry 0",
            ),
            (
                json!([{"kind": "throw", "chunks": [], "message": "m"}]),
                "entry 0",
            ),
            (
                json!({"patches": [{"at": 0, "entry": {"kind": "chunks"}}]}),
                "patches[0]",
            ),
        ] {
            let path = write("bad", &value);
            let error = Override::load(&path).err().unwrap().to_string();
            assert!(error.contains(place), "{value}: {error}");
            assert!(error.contains("replay.override.json"), "{error}");
        }
    }
}
