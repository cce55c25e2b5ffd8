//! Writing packed chunk rows: a run of at least three consecutive `assistant/chunk` delta events
//! of one block becomes one `text-chunks` / `reasoning-chunks` / `tool-call-chunks` row.
//!
//! Providers stream token-sized deltas, so unpacked logs are mostly envelope (the reference
//! measured envelopes at ~56x their payload). Packing is a pure storage encoding: only an
//! exact, whitelisted shape packs, so anything unusual (an extra field, a `surfaceOp`, a float
//! seq, a future chunk variant) is stored verbatim and loses compression, never data. Reading
//! (`record.rs`) is layout-blind.

use dsh_protocol::kinds;
use serde::Serialize;
use serde_json::{Map, Value};

use dsh_session_log::SessionEvent;

use crate::header::MAX_SAFE_INTEGER;

/// Fewer members than this never pack: the row's own envelope would rival the lines it saves.
/// A format constant, not a tunable; both layouts decode to the same events.
const MIN_RUN: usize = 3;

/// The only event type that packs.
const CHUNK_TYPE: &str = kinds::ASSISTANT_CHUNK;

/// Which delta a row packs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Text,
    Reasoning,
    ToolCall,
}

impl RowKind {
    /// The row's `type` tag (slash-less, so it can never be mistaken for an event type).
    pub fn tag(self) -> &'static str {
        match self {
            RowKind::Text => "text-chunks",
            RowKind::Reasoning => "reasoning-chunks",
            RowKind::ToolCall => "tool-call-chunks",
        }
    }

    /// The `chunk.type` of the members.
    pub fn delta_type(self) -> &'static str {
        match self {
            RowKind::Text => "text-delta",
            RowKind::Reasoning => "reasoning-delta",
            RowKind::ToolCall => "tool-call-delta",
        }
    }
}

/// The run-constant identity of a tool-call delta; `name` must match in presence and value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ToolCall<'a> {
    id: &'a str,
    name: Option<&'a str>,
}

/// A whitelisted delta event, borrowed from the event it describes.
struct Delta<'a> {
    kind: RowKind,
    seq: u64,
    time: i64,
    turn: &'a Value,
    step: &'a Value,
    index: &'a Value,
    call: Option<ToolCall<'a>>,
    payload: &'a str,
}

/// One packed run, borrowed from the events it replaces.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkRow<'a> {
    kind: RowKind,
    seq0: u64,
    time0: i64,
    turn: &'a Value,
    step: &'a Value,
    index: &'a Value,
    dt: Vec<i64>,
    call: Option<ToolCall<'a>>,
    payload: Vec<&'a str>,
}

impl ChunkRow<'_> {
    pub fn kind(&self) -> RowKind {
        self.kind
    }
    /// Seq of the first member; member k has seq `seq0 + k`.
    pub fn seq0(&self) -> u64 {
        self.seq0
    }
    /// Number of events the row stands for.
    pub fn len(&self) -> usize {
        self.payload.len()
    }
    /// Always false: a row has at least [`MIN_RUN`] members.
    pub fn is_empty(&self) -> bool {
        self.payload.is_empty()
    }
}

/// One line of a log body: an event verbatim, or a packed row.
#[derive(Debug, Clone, PartialEq)]
pub enum StorageRecord<'a> {
    Event(&'a SessionEvent),
    Row(ChunkRow<'a>),
}

impl StorageRecord<'_> {
    /// Number of events this record stands for.
    pub fn event_count(&self) -> usize {
        match self {
            StorageRecord::Event(_) => 1,
            StorageRecord::Row(row) => row.len(),
        }
    }
}

#[derive(Serialize)]
struct RowOut<'r, 'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    seq0: u64,
    time0: i64,
    data: RowData<'r, 'a>,
}

/// Field order is the reference's: turn, step, index, dt, then id/name and the payload.
#[derive(Serialize)]
#[serde(untagged)]
enum RowData<'r, 'a> {
    Text {
        turn: &'a Value,
        step: &'a Value,
        index: &'a Value,
        dt: &'r [i64],
        texts: &'r [&'a str],
    },
    Tool {
        turn: &'a Value,
        step: &'a Value,
        index: &'a Value,
        dt: &'r [i64],
        id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<&'a str>,
        args: &'r [&'a str],
    },
}

impl Serialize for ChunkRow<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (turn, step, index, dt) = (self.turn, self.step, self.index, self.dt.as_slice());
        let data = match self.call {
            Some(call) => RowData::Tool {
                turn,
                step,
                index,
                dt,
                id: call.id,
                name: call.name,
                args: &self.payload,
            },
            None => RowData::Text {
                turn,
                step,
                index,
                dt,
                texts: &self.payload,
            },
        };
        RowOut {
            kind: self.kind.tag(),
            seq0: self.seq0,
            time0: self.time0,
            data,
        }
        .serialize(serializer)
    }
}

impl Serialize for StorageRecord<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            StorageRecord::Event(event) => event.serialize(serializer),
            StorageRecord::Row(row) => row.serialize(serializer),
        }
    }
}

/// Exactly these keys, nothing else.
pub(crate) fn has_exact_keys(map: &Map<String, Value>, keys: &[&str]) -> bool {
    map.len() == keys.len() && keys.iter().all(|k| map.contains_key(*k))
}

/// Within the range where a JS number is exact, so gaps and sums round-trip in both worlds.
fn is_safe(n: i64) -> bool {
    n.unsigned_abs() <= MAX_SAFE_INTEGER
}

/// The delta an event is, when its whole shape (envelope, data, chunk) is whitelisted.
fn classify(event: &SessionEvent) -> Option<Delta<'_>> {
    let plain_envelope = event.surface_op.is_none()
        && event.source_event_seqs.is_none()
        && event.ignorable.is_none();
    if event.kind != CHUNK_TYPE || !plain_envelope {
        return None;
    }
    if event.seq > MAX_SAFE_INTEGER || !is_safe(event.time) {
        return None;
    }
    let data = event
        .data
        .as_object()
        .filter(|d| has_exact_keys(d, &["turn", "step", "chunk"]))?;
    let turn = data.get("turn").filter(|v| v.is_number())?;
    let step = data.get("step").filter(|v| v.is_number())?;
    let chunk = data.get("chunk")?.as_object()?;
    let index = chunk.get("index").filter(|v| v.is_number())?;
    let text = |key: &str| chunk.get(key).and_then(Value::as_str);
    let (kind, call, payload) = match chunk.get("type")?.as_str()? {
        "text-delta" if has_exact_keys(chunk, &["type", "index", "text"]) => {
            (RowKind::Text, None, text("text")?)
        }
        "reasoning-delta" if has_exact_keys(chunk, &["type", "index", "text"]) => {
            (RowKind::Reasoning, None, text("text")?)
        }
        "tool-call-delta" => {
            let name = if has_exact_keys(chunk, &["type", "index", "id", "argumentsDelta"]) {
                None
            } else if has_exact_keys(chunk, &["type", "index", "id", "name", "argumentsDelta"]) {
                Some(text("name")?)
            } else {
                return None;
            };
            let call = ToolCall {
                id: text("id")?,
                name,
            };
            (RowKind::ToolCall, Some(call), text("argumentsDelta")?)
        }
        // Block boundaries, usage, finish and any future variant stay one event per line.
        _ => return None,
    };
    Some(Delta {
        kind,
        seq: event.seq,
        time: event.time,
        turn,
        step,
        index,
        call,
        payload,
    })
}

/// Whether `next` extends a run ending in `prev`.
fn continues(prev: &Delta<'_>, next: &Delta<'_>) -> bool {
    // Both times are safe integers, so the subtraction cannot overflow an i64; the gap must be
    // safe too or a JS reader would round it.
    next.kind == prev.kind
        && next.seq == prev.seq + 1
        && is_safe(next.time - prev.time)
        // Number equality is by representation (1 and 1.0 differ), which is stricter than JS and
        // so can only keep a run apart, never merge values that would expand differently.
        && next.turn == prev.turn
        && next.step == prev.step
        && next.index == prev.index
        && next.call == prev.call
}

fn build_row<'a>(run: &[(Delta<'a>, &'a SessionEvent)]) -> Option<ChunkRow<'a>> {
    let (first, _) = run.first()?;
    Some(ChunkRow {
        kind: first.kind,
        seq0: first.seq,
        time0: first.time,
        turn: first.turn,
        step: first.step,
        index: first.index,
        dt: run.windows(2).map(|w| w[1].0.time - w[0].0.time).collect(),
        call: first.call,
        payload: run.iter().map(|(d, _)| d.payload).collect(),
    })
}

/// End the current run: one row when it is long enough, else its events verbatim.
fn flush_run<'a>(run: &mut Vec<(Delta<'a>, &'a SessionEvent)>, out: &mut Vec<StorageRecord<'a>>) {
    match build_row(run) {
        Some(row) if run.len() >= MIN_RUN => out.push(StorageRecord::Row(row)),
        _ => out.extend(run.iter().map(|(_, event)| StorageRecord::Event(event))),
    }
    run.clear();
}

/// Pack a batch for storage. Pure and stateless: runs split across batches simply pack per batch.
pub fn pack_chunk_runs(events: &[SessionEvent]) -> Vec<StorageRecord<'_>> {
    let mut out = Vec::with_capacity(events.len());
    let mut run: Vec<(Delta<'_>, &SessionEvent)> = Vec::new();
    for event in events {
        let Some(delta) = classify(event) else {
            flush_run(&mut run, &mut out);
            out.push(StorageRecord::Event(event));
            continue;
        };
        if !run.last().is_some_and(|(last, _)| continues(last, &delta)) {
            flush_run(&mut run, &mut out);
        }
        run.push((delta, event));
    }
    flush_run(&mut run, &mut out);
    out
}

/// One committed event as the log already serialized it (its JSON line is exactly what
/// `serde_json::to_string` of the event gives).
#[derive(Debug, Clone, Copy)]
pub struct CommittedLine<'a> {
    pub seq: u64,
    pub kind: &'a str,
    pub json: &'a str,
}

/// [`encode_lines`] for events that are already serialized: lines are written as they are and
/// only runs of `assistant/chunk` long enough to pack are parsed, so a batch without such a run
/// costs no JSON work at all. The output is byte-equal to `encode_lines` of the parsed events,
/// because packing only ever looks inside a run of consecutive chunk events.
pub fn encode_committed(
    lines: &[CommittedLine<'_>],
    pack: bool,
) -> Result<String, serde_json::Error> {
    let mut out = String::with_capacity(lines.iter().map(|line| line.json.len() + 1).sum());
    let mut rest = lines;
    while let Some(first) = rest.first() {
        let run = match pack && first.kind == CHUNK_TYPE {
            true => rest
                .iter()
                .take_while(|line| line.kind == CHUNK_TYPE)
                .count(),
            false => 1,
        };
        let (group, after) = rest.split_at(run);
        if run >= MIN_RUN {
            let events = group
                .iter()
                .map(|line| serde_json::from_str::<SessionEvent>(line.json))
                .collect::<Result<Vec<_>, _>>()?;
            out.push_str(&encode_lines(&events, true)?);
        } else {
            for line in group {
                out.push_str(line.json);
                out.push('\n');
            }
        }
        rest = after;
    }
    Ok(out)
}

/// Serialize a batch as JSONL, one record per line, each line ending in `\n`.
pub fn encode_lines(events: &[SessionEvent], pack: bool) -> Result<String, serde_json::Error> {
    let mut out = String::new();
    let mut push = |line: String| {
        out.push_str(&line);
        out.push('\n');
    };
    if pack {
        for record in pack_chunk_runs(events) {
            push(serde_json::to_string(&record)?);
        }
    } else {
        for event in events {
            push(serde_json::to_string(event)?);
        }
    }
    Ok(out)
}
