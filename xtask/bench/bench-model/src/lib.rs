//! Benchmark plugin `bench-model`: registers the model route `instant`, which answers at once
//! (a `noop` tool call until `steps` requests were made, then a short text), and the `noop`
//! tool. Its calls alternate between two arguments (`{}` and `{"n":1}`), as a model's calls
//! differ from step to step: one call repeated would have the repeat-tool reminder splice its
//! reminders into the history at the third, fifth and eighth step, which a real session does
//! not see (and which the baseline's figures, measured before that plugin, did not carry).
//! Every request is timed against the previous one, so the gap is one whole step of the
//! harness: logging, derive, the model-visible check, request serialization, the tool pipeline.
//! It prints `bench step_gap_us <request number> <µs>` for the requests listed in `report`.
//! With `concurrent`, it also drives that many sessions itself, one turn each, all at once,
//! and prints `bench concurrent_steps_per_s <n>` and `bench concurrent_done`. With
//! `textDeltas` and `paceMs`, the closing text streams at a fixed rate instead.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RVec;
use abi_stable::std_types::{RNone, ROk, ROption, RSome, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_agents_seam::{AGENT_LOOP_SERVICE, AgentLoopService, TurnRequest};
use dsh_llm_seam::{
    Adapter, Adapter_TO, ChunkStream, ChunkStream_TO, HistoryBox, LLM_SERVICE, LlmService,
    NextChunk, StreamOutcome,
};
use dsh_plugin_api::cancel::{CancelBox, CancelFlag};
use dsh_plugin_api::lock;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{
    CatalogModel, ContentBlock, FinishReason, GenerateRequest, Message, MessageSource,
    OutcomeSummary, StreamChunk, ToolDecl, ToolReply,
};
use dsh_sessions_seam::{CreateSession, SESSIONS_SERVICE, SessionsService};
use dsh_tools_seam::{CallView, TOOLS_SERVICE, Tool, ToolsService, tool_box};

/// Config of `bench-model`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    /// Requests answered with a tool call before the closing text.
    pub steps: usize,
    /// Request numbers whose gap to the previous request is printed.
    #[serde(default)]
    pub report: Vec<usize>,
    /// Sessions to run at once (each one turn of `steps` steps), driven by this plugin.
    #[serde(default)]
    pub concurrent: Option<usize>,
    /// The ids of those sessions: `<sessionPrefix>-<n>` (two hosts on one store each need
    /// their own).
    #[serde(default = "bench_prefix", rename = "sessionPrefix")]
    pub session_prefix: String,
    /// The closing text streamed as this many deltas (`"w1 w2 …"`), one every `paceMs` (on a
    /// schedule from the first, so the rate holds though the timer is coarse): a live feed at a
    /// known rate, for the page's commit-to-paint figure.
    #[serde(default, rename = "textDeltas")]
    pub text_deltas: usize,
    #[serde(default, rename = "paceMs")]
    pub pace_ms: u64,
    /// Words (`wN`, a token each) in one delta of the word answer: the timer's 1 ms floor
    /// keeps one delta a millisecond, so 2,000 tokens a second are two words a delta.
    #[serde(default = "one", rename = "wordsPerDelta")]
    pub words_per_delta: usize,
    /// With `textDeltas`: the text is a Markdown answer of this many bytes (headings,
    /// paragraphs, lists, a table, fenced code, repeated) cut into the deltas, instead of words.
    #[serde(default, rename = "markdownBytes")]
    pub markdown_bytes: usize,
    /// Call `bash` with this command at each step instead of the no-op tool (the sandbox's
    /// cost per command, end to end).
    #[serde(default)]
    pub shell: Option<String>,
    /// Call this tool with these raw JSON arguments at each step instead of the no-op tool
    /// (an MCP server's tool: the cost of a call over MCP); `{n}` in them becomes the
    /// request's number (a new file per step).
    #[serde(default)]
    pub tool: Option<String>,
    #[serde(default)]
    pub arguments: Option<String>,
    /// Request numbers whose history size is printed (`bench request_bytes`). Reading the
    /// history takes time the next request's gap would show: keep these apart from `report`.
    #[serde(default, rename = "reportBytes")]
    pub report_bytes: Vec<usize>,
    /// The first session's first request answers this many `subagent` calls (waited for, run
    /// at once); every child answers at once; the first session's next request prints
    /// `bench delegation_wall_us <n> <µs>` (from the calls to the results) and its answer is
    /// held `holdMs`, so the host's memory can be read with every child still in it.
    #[serde(default)]
    pub delegate: Option<usize>,
    #[serde(default, rename = "holdMs")]
    pub hold_ms: u64,
}

fn bench_prefix() -> String {
    "bench".to_owned()
}

struct Clock {
    ctx: Context,
    /// Tool-call answers given, per session.
    steps_done: Mutex<std::collections::HashMap<String, usize>>,
    shell: Option<String>,
    /// The tool and the arguments each step calls instead of `noop`.
    tool: Option<(String, String)>,
    text_deltas: usize,
    words_per_delta: usize,
    markdown_bytes: usize,
    pace: std::time::Duration,
    last: Mutex<Option<Instant>>,
    requests: AtomicUsize,
    steps: usize,
    report: Vec<usize>,
    report_bytes: Vec<usize>,
    delegation: Option<Delegation>,
}

/// The `delegate` mode's state: how many children, the parent, when it delegated.
struct Delegation {
    children: usize,
    hold: std::time::Duration,
    parent: Mutex<Option<String>>,
    delegated_at: Mutex<Option<Instant>>,
}

impl Delegation {
    /// The answer to a request of `session` in the `delegate` mode.
    fn answer(&self, ctx: &Context, session: &str) -> Chunks {
        let is_parent = lock(&self.parent).get_or_insert_with(|| session.to_owned()) == session;
        let mut pace = None;
        let chunks = if !is_parent {
            answer(ContentBlock::text("child done"), FinishReason::Stop)
        } else if let Some(at) = *lock(&self.delegated_at) {
            let _ = writeln!(
                std::io::stdout().lock(),
                "bench delegation_wall_us {} {:.3}",
                self.children,
                at.elapsed().as_secs_f64() * 1e6
            );
            pace = Some((ctx.clone(), self.hold));
            answer(ContentBlock::text("all answered"), FinishReason::Stop)
        } else {
            *lock(&self.delegated_at) = Some(Instant::now());
            calls(self.children)
        };
        Chunks::new(chunks, pace)
    }
}

/// `count` waited-for `subagent` calls in one answer.
fn calls(count: usize) -> Vec<Json<StreamChunk>> {
    let mut chunks = Vec::with_capacity(count * 2 + 1);
    for index in 0..count {
        let arguments = dsh_plugin_api::serde_json::json!({
            "description": format!("child {index}"),
            "prompt": "Answer at once.",
            "run_in_background": false
        });
        let block = ContentBlock::tool_call(format!("d{index}"), "subagent", arguments.to_string());
        #[allow(clippy::cast_possible_truncation, reason = "a handful of children")]
        let index = index as u32;
        chunks.push(StreamChunk::BlockStart {
            index,
            block_type: block.block_type(),
        });
        chunks.push(StreamChunk::BlockEnd { index, block });
    }
    chunks.push(StreamChunk::finish(FinishReason::ToolCalls));
    chunks.iter().map(Json::encode).collect()
}

struct Instantly(Arc<Clock>);

struct Chunks {
    chunks: Vec<Json<StreamChunk>>,
    next: AtomicUsize,
    /// The interval between chunks, kept on the host's timer (with its context) against a
    /// schedule from the first chunk: chunk `n` is due `n` intervals after it, and one late for
    /// its time goes at once. Sleeping the interval before each chunk instead ran slower than
    /// asked by the timer's millisecond rounding (a 2 ms pace streamed at about 3 ms).
    pace: Option<(Context, std::time::Duration)>,
    started: std::sync::OnceLock<Instant>,
}

impl Chunks {
    fn new(chunks: Vec<Json<StreamChunk>>, pace: Option<(Context, std::time::Duration)>) -> Self {
        Self {
            chunks,
            next: AtomicUsize::new(0),
            pace,
            started: std::sync::OnceLock::new(),
        }
    }
}

impl ChunkStream for Chunks {
    fn next(&self) -> FfiFuture<NextChunk> {
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        let chunk = self.chunks.get(index).cloned();
        let started = *self.started.get_or_init(Instant::now);
        let pause = self
            .pace
            .as_ref()
            .filter(|_| index > 0 && chunk.is_some())
            .and_then(|(ctx, pace)| {
                let due = started + pace.saturating_mul(u32::try_from(index).unwrap_or(u32::MAX));
                let wait = due.saturating_duration_since(Instant::now());
                (wait >= std::time::Duration::from_millis(1)).then(|| ctx.sleep(wait))
            });
        async move {
            if let Some(pause) = pause {
                pause.await;
            }
            ROk(chunk.map_or(RNone, RSome))
        }
        .into_ffi()
    }
}

/// A text streamed as `count` deltas, then its block and the finish.
/// A Markdown answer of about `bytes` bytes, of the blocks a model writes.
fn markdown_answer(bytes: usize) -> String {
    const SECTION: &str = "## Step {n}\n\nThe change touches **three files** and keeps the `Fold` \
        API as it was; each call is checked before it runs, and the [design](https://example.com/d) \
        says why.\n\n- read the module\n- write the test\n- [x] run it\n\n\
        | file | lines | note |\n|---|---:|---|\n| src/fold.rs | 120 | the fold |\n| src/live.rs | 80 | the hub |\n\n\
        ```rust\nfn step_{n}(items: &mut Vec<Item>) -> usize {\n    items.retain(|item| item.live);\n    items.len()\n}\n```\n\n";
    let mut text = String::with_capacity(bytes + SECTION.len());
    let mut n = 1;
    while text.len() < bytes {
        text.push_str(&SECTION.replace("{n}", &n.to_string()));
        n += 1;
    }
    text
}

/// `text` cut into `count` pieces of about equal length, at character boundaries.
fn cut(text: &str, count: usize) -> Vec<String> {
    let size = text.len().div_ceil(count.max(1)).max(1);
    let mut pieces = Vec::with_capacity(count);
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(text[start..end].to_owned());
        start = end;
    }
    pieces
}

fn streamed_text(words: Vec<String>) -> Vec<Json<StreamChunk>> {
    let mut chunks = vec![StreamChunk::BlockStart {
        index: 0,
        block_type: ContentBlock::text("").block_type(),
    }];
    chunks.extend(words.iter().map(|word| StreamChunk::TextDelta {
        index: 0,
        text: word.clone(),
    }));
    chunks.push(StreamChunk::BlockEnd {
        index: 0,
        block: ContentBlock::text(words.concat()),
    });
    chunks.push(StreamChunk::finish(FinishReason::Stop));
    chunks.iter().map(Json::encode).collect()
}

/// The `sessionId` of a request's JSON text, or `""`.
fn session_of(text: &str) -> &str {
    const KEY: &str = "\"sessionId\":\"";
    text.find(KEY)
        .map(|at| &text[at + KEY.len()..])
        .and_then(|rest| rest.find('"').map(|end| &rest[..end]))
        .unwrap_or("")
}

/// One block, then the finish.
fn answer(block: ContentBlock, reason: FinishReason) -> Vec<Json<StreamChunk>> {
    [
        StreamChunk::BlockStart {
            index: 0,
            block_type: block.block_type(),
        },
        StreamChunk::BlockEnd { index: 0, block },
        StreamChunk::finish(reason),
    ]
    .iter()
    .map(Json::encode)
    .collect()
}

impl Adapter for Instantly {
    fn provider(&self) -> RString {
        "instant".into()
    }

    fn models(&self) -> Json<Vec<CatalogModel>> {
        Json::encode(&vec![CatalogModel {
            id: "instant".to_owned(),
            name: Some("Instant".to_owned()),
            description: None,
            input_modalities: None,
            context_window: None,
            max_tokens: None,
            reasoning: None,
        }])
    }

    fn stream(
        &self,
        request: Json<GenerateRequest>,
        history: HistoryBox,
    ) -> FfiFuture<StreamOutcome> {
        // Read without decoding the request (its tool list would make the model's own work
        // part of the step it measures): is it a summary request, and whose is it.
        let text = request.text();
        if text.contains("\"purpose\":\"compaction\"") {
            let stream = Chunks::new(
                answer(
                    ContentBlock::text("A summary of the work so far."),
                    FinishReason::Stop,
                ),
                None,
            );
            return async move { ROk(ChunkStream_TO::from_value(stream, TD_Opaque)) }.into_ffi();
        }
        let clock = &self.0;
        if let Some(delegation) = &clock.delegation {
            let stream = delegation.answer(&clock.ctx, session_of(text));
            return async move { ROk(ChunkStream_TO::from_value(stream, TD_Opaque)) }.into_ffi();
        }
        let number = clock.requests.fetch_add(1, Ordering::Relaxed) + 1;
        let now = Instant::now();
        if let Some(last) = lock(&clock.last).replace(now)
            && clock.report.contains(&number)
        {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(
                stdout,
                "bench step_gap_us {number} {:.3}",
                now.duration_since(last).as_secs_f64() * 1e6
            );
        }
        if clock.report_bytes.contains(&number) {
            // What the request carries: its history, as JSON bytes.
            let bytes: usize = (0..history.count())
                .filter_map(|index| history.message(index).into_option())
                .map(|message| message.text().len())
                .sum();
            let _ = writeln!(
                std::io::stdout().lock(),
                "bench request_bytes {number} {bytes}"
            );
        }
        // Each session's own progress, counted by its requests (a compacted history is shorter
        // than the steps it went through).
        let session = session_of(text).to_owned();
        let steps_done = *lock(&clock.steps_done).entry(session.clone()).or_default();
        let chunks = if steps_done < clock.steps {
            let call = match &clock.shell {
                Some(command) => {
                    let arguments = dsh_plugin_api::serde_json::json!({"command": command, "description": "bench"});
                    ContentBlock::tool_call(format!("n{number}"), "bash", arguments.to_string())
                }
                None => match &clock.tool {
                    Some((tool, arguments)) => ContentBlock::tool_call(
                        format!("n{number}"),
                        tool,
                        arguments.replace("{n}", &number.to_string()),
                    ),
                    None => ContentBlock::tool_call(
                        format!("n{number}"),
                        "noop",
                        if number.is_multiple_of(2) {
                            "{\"n\":1}"
                        } else {
                            "{}"
                        },
                    ),
                },
            };
            *lock(&clock.steps_done).entry(session).or_default() += 1;
            answer(call, FinishReason::ToolCalls)
        } else if clock.text_deltas > 0 {
            let pieces = match clock.markdown_bytes {
                0 => word_deltas(clock.text_deltas, clock.words_per_delta),
                bytes => cut(&markdown_answer(bytes), clock.text_deltas),
            };
            streamed_text(pieces)
        } else {
            answer(ContentBlock::text("done"), FinishReason::Stop)
        };
        let stream = Chunks::new(
            chunks,
            (!clock.pace.is_zero()).then(|| (clock.ctx.clone(), clock.pace)),
        );
        async move { ROk(ChunkStream_TO::from_value(stream, TD_Opaque)) }.into_ffi()
    }
}

fn one() -> usize {
    1
}

/// `deltas` pieces of `per_delta` words each: `w1 w2 `, `w3 w4 `, ….
fn word_deltas(deltas: usize, per_delta: usize) -> Vec<String> {
    (0..deltas)
        .map(|delta| {
            (delta * per_delta + 1..=(delta + 1) * per_delta)
                .map(|word| format!("w{word} "))
                .collect()
        })
        .collect()
}

struct Noop;

impl Tool for Noop {
    fn spec(&self) -> Json<ToolDecl> {
        let parameters = dsh_plugin_api::serde_json::json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "additionalProperties": false
        });
        Json::encode(&ToolDecl::new("noop", "Does nothing.", parameters))
    }

    fn execute(&self, _call: CallView, _cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        async { Json::encode(&ToolReply::text("ok")) }.into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }
}

/// Runs `count` sessions at once, one turn of `steps` steps each, and prints the throughput.
fn drive(ctx: &Context, count: usize, steps: usize, prefix: &str) -> Result<(), PluginError> {
    let sessions = ctx.inject::<SessionsService>(SESSIONS_SERVICE)?;
    let agent = ctx.inject::<AgentLoopService>(AGENT_LOOP_SERVICE)?;
    let left = Arc::new(AtomicUsize::new(count));
    let all_done = CancelFlag::new();
    let started = Instant::now();
    for index in 0..count {
        let id = format!("{prefix}-{index}");
        let (sessions, agent, left, all_done) = (
            sessions.clone(),
            agent.clone(),
            left.clone(),
            all_done.clone(),
        );
        ctx.spawn(async move {
            let created = sessions
                .create(CreateSession {
                    id: RSome(id.as_str().into()),
                    cwd: RSome(".".into()),
                    ..CreateSession::default()
                })
                .await;
            if created.is_ok() {
                agent
                    .run_turn(TurnRequest {
                        session: id.as_str().into(),
                        input: Json::encode(&vec![Message::user(
                            "",
                            vec![ContentBlock::text("go")],
                            MessageSource::user(),
                        )]),
                        inbox: RNone,
                        provider: "instant".into(),
                        model: "instant".into(),
                        cwd: ".".into(),
                        scope: RVec::new(),
                    })
                    .await;
            }
            if left.fetch_sub(1, Ordering::AcqRel) == 1 {
                all_done.fire();
            }
        })?;
    }
    ctx.spawn(async move {
        all_done.wait().await;
        #[allow(clippy::cast_precision_loss, reason = "step counts far below 2^52")]
        let per_second = (count * steps) as f64 / started.elapsed().as_secs_f64();
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "bench concurrent_steps_per_s {per_second:.1}");
        let _ = writeln!(stdout, "bench concurrent_done");
        let _ = stdout.flush();
    })
}

pub struct BenchModel;

impl Plugin for BenchModel {
    const NAME: &'static str = "bench-model";
    const INJECT: &'static [&'static str] = &[LLM_SERVICE, TOOLS_SERVICE];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        let llm = ctx.inject::<LlmService>(LLM_SERVICE)?;
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let clock = Arc::new(Clock {
            ctx: ctx.clone(),
            steps_done: Mutex::default(),
            shell: config.shell,
            tool: config
                .tool
                .map(|tool| (tool, config.arguments.unwrap_or_else(|| "{}".to_owned()))),
            text_deltas: config.text_deltas,
            words_per_delta: config.words_per_delta.max(1),
            markdown_bytes: config.markdown_bytes,
            pace: std::time::Duration::from_millis(config.pace_ms),
            last: Mutex::new(None),
            requests: AtomicUsize::new(0),
            steps: config.steps,
            report: config.report,
            report_bytes: config.report_bytes,
            delegation: config.delegate.map(|children| Delegation {
                children,
                hold: std::time::Duration::from_millis(config.hold_ms),
                parent: Mutex::default(),
                delegated_at: Mutex::default(),
            }),
        });
        let adapter = llm
            .register(Adapter_TO::from_value(Instantly(clock), TD_Opaque))
            .into_result()
            .map_err(|error| PluginError::plugin(error.text().to_owned()))?;
        let tool = tools
            .register(RString::from(ctx.row_id()), RString::new(), tool_box(Noop))
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?;
        ctx.on_dispose(move || drop((adapter, tool)))?;
        if let Some(count) = config.concurrent {
            drive(&ctx, count, config.steps, &config.session_prefix)?;
        }
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(BenchModel);
