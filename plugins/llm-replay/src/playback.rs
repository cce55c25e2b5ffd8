//! Answering one model call from its script: the request checked against its session's log, the
//! entry of the call, placeholders filled from the request, and the chunks played back.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, RNone, ROk, RSome};
use async_ffi::{FfiFuture, FutureExt};
use dsh_llm_seam::{ChunkStream, ChunkStream_TO, NextChunk, StreamOutcome};
use dsh_plugin_api::{Context, Json, lock};
use dsh_protocol::{FailureCode, GenerateRequest, LlmFailure, StreamChunk};
use dsh_sessions_seam::SessionBox;

use crate::entry::Entry;
use crate::failure;
use crate::script::Scripts;
use crate::template::{fill, has_placeholders, string_leaves};

/// The context playback waits on, and how long before each chunk.
#[derive(Clone)]
pub(crate) struct Pace {
    pub(crate) ctx: Context,
    pub(crate) millis: u64,
}

/// The answer to `request`: its call's recorded stream, or why there is none.
pub(crate) async fn answer(
    scripts: &Scripts,
    pace: &Pace,
    request: GenerateRequest,
) -> StreamOutcome {
    let session = match dsh_visible_check::check_request(&pace.ctx, &request).await {
        Ok(session) => session,
        Err(refusal) => return RErr(failure(FailureCode::InvalidRequest, refusal.to_string())),
    };
    let key = request.session_id.clone().unwrap_or_default();
    let script = match scripts.for_session(&key) {
        Ok(script) => script,
        Err(error) => {
            return RErr(failure(
                FailureCode::InvalidRequest,
                format!("llm-replay: {error}"),
            ));
        }
    };
    let (index, entry) = script.next_call();
    let Some(entry) = entry else {
        let why = if script.is_gap(index) {
            format!(
                "llm-replay: call {} of {} is a recorded stream that failed without a finish; say how in replay.override.json",
                index + 1,
                script.file
            )
        } else {
            format!(
                "llm-replay: request {} has no recorded answer ({} recorded in {})",
                index + 1,
                script.len(),
                script.file
            )
        };
        return RErr(failure(FailureCode::Unknown, why));
    };
    let chunks = if has_placeholders(entry.chunks()) {
        match fill(entry.chunks(), &request_text(&request, session.as_ref())) {
            Ok(chunks) => chunks,
            Err(error) => {
                return RErr(failure(
                    FailureCode::Unknown,
                    format!("llm-replay: call {} of {}: {error}", index + 1, script.file),
                ));
            }
        }
    } else {
        entry.chunks().to_vec()
    };
    let then = match entry {
        Entry::Chunks(_) => Then::End,
        Entry::Throw { message, code, .. } => Then::Fail(LlmFailure::new(code, message)),
        Entry::Hang { ready_file, .. } => Then::Hang(ready_file),
    };
    let playback = Playback {
        chunks: chunks
            .iter()
            .map(|chunk| Json::<StreamChunk>::from_text(scripts.live_ids(chunk.to_string())))
            .collect(),
        pace: pace.clone(),
        state: Arc::new(Mutex::new(State {
            next: 0,
            then,
            reached: false,
        })),
    };
    ROk(ChunkStream_TO::from_value(playback, TD_Opaque))
}

/// The string leaves of the request as the model would get it: its history read from the log.
fn request_text(request: &GenerateRequest, session: Option<&SessionBox>) -> String {
    let mut full = request.clone();
    if let (Some(history), Some(session)) = (full.history.take(), session) {
        let view = session.derive_messages();
        full.messages = (0..history.count)
            .filter_map(|index| view.message(index).into_option())
            .filter_map(|message| message.decode().ok())
            .collect();
    }
    serde_json::to_value(&full)
        .map(|value| string_leaves(&value))
        .unwrap_or_default()
}

/// How a stream ends once its chunks are played.
enum Then {
    End,
    Fail(LlmFailure),
    /// Create the file (when given), then never yield.
    Hang(Option<String>),
}

struct State {
    next: usize,
    then: Then,
    /// Whether the end was reached: a failure is answered once, a ready file made once.
    reached: bool,
}

/// One recorded attempt, played back chunk by chunk.
struct Playback {
    chunks: Vec<Json<StreamChunk>>,
    pace: Pace,
    state: Arc<Mutex<State>>,
}

impl ChunkStream for Playback {
    fn next(&self) -> FfiFuture<NextChunk> {
        let step = {
            let mut state = lock(&self.state);
            match self.chunks.get(state.next) {
                Some(chunk) => {
                    state.next += 1;
                    Step::Chunk(chunk.clone())
                }
                None => {
                    let first = !std::mem::replace(&mut state.reached, true);
                    match &state.then {
                        Then::Fail(failure) if first => Step::Fail(failure.clone()),
                        Then::Hang(ready) => Step::Hang(ready.clone().filter(|_| first)),
                        Then::End | Then::Fail(_) => Step::End,
                    }
                }
            }
        };
        let pace = self.pace.clone();
        async move {
            match step {
                Step::Chunk(chunk) => {
                    if pace.millis > 0 {
                        pace.ctx.sleep(Duration::from_millis(pace.millis)).await;
                    }
                    ROk(RSome(chunk))
                }
                Step::End => ROk(RNone),
                Step::Fail(failure) => RErr(Json::encode(&failure)),
                Step::Hang(ready) => {
                    if let Some(ready) = ready
                        && let Err(error) = std::fs::write(&ready, b"")
                    {
                        return RErr(failure(
                            FailureCode::Unknown,
                            format!("llm-replay: cannot create {ready}: {error}"),
                        ));
                    }
                    std::future::pending().await
                }
            }
        }
        .into_ffi()
    }
}

enum Step {
    Chunk(Json<StreamChunk>),
    End,
    Fail(LlmFailure),
    Hang(Option<String>),
}
