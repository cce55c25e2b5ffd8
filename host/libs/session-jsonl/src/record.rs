//! Reading one JSONL record: a packed row expands back to its exact events; anything else must be
//! an event envelope this crate can represent without loss.
//!
//! The reference passes non-row values through unvalidated. We cannot: `SessionEvent` is typed, so
//! an extra envelope field or a `null` optional would silently vanish on the next write. Such a
//! line is refused with the reason instead ("unknown envelope shape").

use dsh_protocol::kinds;
use serde::Deserialize;
use serde_json::{Map, Value};

use dsh_session_log::SessionEvent;
use dsh_session_log::probe::{Counted, List, Member, Obj};

use crate::chunks::{RowKind, has_exact_keys};
use crate::error::RecordError;
use crate::header::MAX_SAFE_INTEGER;

/// Keys a v0 event envelope may carry.
const ENVELOPE_KEYS: [&str; 7] = [
    "type",
    "seq",
    "time",
    "data",
    "surfaceOp",
    "sourceEventSeqs",
    "ignorable",
];

/// What every record is asked first, whatever its layout: its type tag and its seq, borrowed
/// from the parsed record. The rest of the record is skipped, not copied.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Head<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Member<'a>,
    #[serde(default, borrow)]
    seq: Member<'a>,
}

impl<'a> Head<'a> {
    /// The head of a parsed record; empty for a value that is not an object.
    pub(crate) fn of(value: &'a Value) -> Self {
        match value {
            // Both members read any JSON value, so reading an object cannot fail.
            Value::Object(_) => Self::deserialize(value).unwrap_or_default(),
            _ => Self::default(),
        }
    }

    pub(crate) fn kind(&self) -> Option<&'a str> {
        self.kind.as_str()
    }

    pub(crate) fn seq(&self) -> Option<u64> {
        self.seq.as_u64()
    }

    /// The row kind the record is tagged as, if any.
    pub(crate) fn row_kind(&self) -> Option<RowKind> {
        match self.kind()? {
            "text-chunks" => Some(RowKind::Text),
            "reasoning-chunks" => Some(RowKind::Reasoning),
            "tool-call-chunks" => Some(RowKind::ToolCall),
            _ => None,
        }
    }
}

/// A packed row's envelope, read in place (its exact key set is checked on the object first).
#[derive(Debug, Default, Deserialize)]
struct RowLine<'a> {
    #[serde(default, borrow)]
    seq0: Member<'a>,
    #[serde(default, borrow)]
    time0: Member<'a>,
    #[serde(default, borrow)]
    data: Obj<Counted<RowData<'a>>>,
}

/// A packed row's data: text rows carry `texts`, tool-call rows `id`, `name?` and `args`.
#[derive(Debug, Default, Deserialize)]
struct RowData<'a> {
    #[serde(default, borrow)]
    turn: Member<'a>,
    #[serde(default, borrow)]
    step: Member<'a>,
    #[serde(default, borrow)]
    index: Member<'a>,
    #[serde(default, borrow)]
    id: Member<'a>,
    #[serde(default, borrow)]
    name: Member<'a>,
    #[serde(default, borrow)]
    dt: List<Member<'a>>,
    #[serde(default, borrow)]
    args: List<Member<'a>>,
    #[serde(default, borrow)]
    texts: List<Member<'a>>,
}

impl RowData<'_> {
    /// Whether the data has exactly the members a `kind` row carries (`members` is how many the
    /// object has, so any member outside the fields fails too).
    fn is_exact(&self, kind: RowKind, members: usize) -> bool {
        let here = |member: Member<'_>| member != Member::Absent;
        let listed = |list: &List<Member<'_>>| !matches!(list, List::Absent);
        let common = here(self.turn) && here(self.step) && here(self.index) && listed(&self.dt);
        let (payload, other) = if kind == RowKind::ToolCall {
            (here(self.id) && listed(&self.args), listed(&self.texts))
        } else {
            (
                listed(&self.texts),
                here(self.id) || here(self.name) || listed(&self.args),
            )
        };
        let known = [self.turn, self.step, self.index, self.id, self.name]
            .into_iter()
            .filter(|member| here(*member))
            .count()
            + [&self.dt, &self.args, &self.texts]
                .into_iter()
                .filter(|list| listed(list))
                .count();
        common && payload && !other && known == members
    }
}

fn safe_i64(member: &Member<'_>) -> Option<i64> {
    member
        .as_i64()
        .filter(|n| n.unsigned_abs() <= MAX_SAFE_INTEGER)
}

/// Validate a row (`record`, a parsed line tagged as a row of `kind`) and expand it to its
/// member events, in order.
pub(crate) fn expand_row(kind: RowKind, record: &Value) -> Result<Vec<SessionEvent>, RecordError> {
    let tag = kind.tag();
    let bad = |reason: &str| RecordError::MalformedRow {
        tag,
        reason: reason.to_owned(),
    };
    if !record
        .as_object()
        .is_some_and(|obj| has_exact_keys(obj, &["type", "seq0", "time0", "data"]))
    {
        return Err(bad("envelope must be exactly {type, seq0, time0, data}"));
    }
    // Every member reads whatever its JSON kind, so reading an object cannot fail.
    let row = RowLine::deserialize(record).map_err(|e| bad(&e.to_string()))?;
    let seq0 = row
        .seq0
        .as_u64()
        .filter(|n| *n <= MAX_SAFE_INTEGER)
        .ok_or_else(|| bad("seq0 must be a non-negative safe integer"))?;
    let time0 = safe_i64(&row.time0).ok_or_else(|| bad("time0 must be a safe integer"))?;
    let Obj::Found(Counted {
        value: data,
        members,
    }) = row.data
    else {
        return Err(bad("data must be an object"));
    };
    let (payload_key, payload, call) = if kind == RowKind::ToolCall {
        if !data.is_exact(kind, members) {
            return Err(bad(
                "data must be exactly {turn, step, index, id, name?, dt, args}",
            ));
        }
        let id = data.id.as_str();
        let name = match data.name {
            Member::Absent => Ok(None),
            Member::Str(name) => Ok(Some(name)),
            _ => Err(()),
        };
        let (Some(id), Ok(name)) = (id, name) else {
            return Err(bad("id (and name when present) must be strings"));
        };
        ("args", &data.args, Some((id, name)))
    } else {
        if !data.is_exact(kind, members) {
            return Err(bad("data must be exactly {turn, step, index, dt, texts}"));
        }
        ("texts", &data.texts, None)
    };
    let number = |member: Member<'_>| member.is_number().then(|| member.to_value()).flatten();
    let (Some(turn), Some(step), Some(index)) =
        (number(data.turn), number(data.step), number(data.index))
    else {
        return Err(bad("turn/step/index must be numbers"));
    };
    let payload: Vec<&str> = match payload.found() {
        Some(items) if !items.is_empty() => items
            .iter()
            .map(|item| item.as_str())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad(&format!("{payload_key} must be a non-empty string array")))?,
        _ => {
            return Err(bad(&format!(
                "{payload_key} must be a non-empty string array"
            )));
        }
    };
    let dt: Vec<i64> = data
        .dt
        .found()
        .and_then(|gaps| gaps.iter().map(safe_i64).collect::<Option<Vec<_>>>())
        .ok_or_else(|| bad("dt must be an array of safe integers"))?;
    if dt.len() + 1 != payload.len() {
        return Err(bad(&format!(
            "dt length {} does not match {} members",
            dt.len(),
            payload.len()
        )));
    }
    // Every member seq and time must stay where a JS reader computes them exactly.
    if seq0 + (payload.len() as u64 - 1) > MAX_SAFE_INTEGER {
        return Err(bad("member seqs must stay safe integers"));
    }
    let mut times = Vec::with_capacity(payload.len());
    let mut time = time0;
    times.push(time);
    for gap in &dt {
        time += gap;
        if time.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(bad("member times must stay safe integers"));
        }
        times.push(time);
    }
    let mut events = Vec::with_capacity(payload.len());
    for (k, (member, time)) in payload.into_iter().zip(times).enumerate() {
        // Keys in the order the reference's chunks carry them.
        let mut chunk = Map::new();
        chunk.insert("type".into(), Value::from(kind.delta_type()));
        chunk.insert("index".into(), index.clone());
        match call {
            Some((id, name)) => {
                chunk.insert("id".into(), Value::from(id));
                if let Some(name) = name {
                    chunk.insert("name".into(), Value::from(name));
                }
                chunk.insert("argumentsDelta".into(), Value::from(member));
            }
            None => {
                chunk.insert("text".into(), Value::from(member));
            }
        }
        let mut event_data = Map::new();
        event_data.insert("turn".into(), turn.clone());
        event_data.insert("step".into(), step.clone());
        event_data.insert("chunk".into(), Value::Object(chunk));
        events.push(SessionEvent {
            kind: kinds::ASSISTANT_CHUNK.into(),
            seq: seq0 + k as u64,
            time,
            data: Value::Object(event_data),
            surface_op: None,
            source_event_seqs: None,
            ignorable: None,
        });
    }
    Ok(events)
}

/// Decode an event envelope exactly, or say why it cannot be represented.
pub(crate) fn event_from_object(mut obj: Map<String, Value>) -> Result<SessionEvent, RecordError> {
    let shape = |why: String| RecordError::Envelope(why);
    if let Some(key) = obj.keys().find(|k| !ENVELOPE_KEYS.contains(&k.as_str())) {
        return Err(shape(format!("unknown envelope field {key:?}")));
    }
    let data = obj
        .remove("data")
        .ok_or_else(|| shape("missing data".to_owned()))?;
    // Decode the envelope without its (possibly large) data, then re-encode it and compare: any
    // difference (a null optional, an extra key inside surfaceOp, ...) would be lost on write.
    obj.insert("data".into(), Value::Null);
    let envelope = Value::Object(obj);
    let mut event: SessionEvent =
        serde_json::from_value(envelope.clone()).map_err(|e| shape(e.to_string()))?;
    let back = serde_json::to_value(&event).map_err(|e| shape(e.to_string()))?;
    if back != envelope {
        return Err(shape(
            "envelope does not survive a round trip (null optional field or extra surfaceOp key)"
                .to_owned(),
        ));
    }
    event.data = data;
    Ok(event)
}

/// Decode one parsed line into the events it stores, whatever the layout (row or event).
pub fn decode_record(value: Value) -> Result<Vec<SessionEvent>, RecordError> {
    if let Some(kind) = Head::of(&value).row_kind() {
        return expand_row(kind, &value);
    }
    let Value::Object(obj) = value else {
        return Err(RecordError::Envelope(
            "a record must be a JSON object".to_owned(),
        ));
    };
    Ok(vec![event_from_object(obj)?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(v: Value) -> Result<Vec<SessionEvent>, RecordError> {
        decode_record(v)
    }

    #[test]
    fn expands_text_rows() {
        let row = json!({"type":"text-chunks","seq0":84,"time0":1000,"data":{"turn":1,"step":2,"index":1,"dt":[0,5,-1],"texts":["d","sh","-s","dk"]}});
        let events = decode(row).unwrap();
        assert_eq!(events.len(), 4);
        assert_eq!(
            events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [84, 85, 86, 87]
        );
        assert_eq!(
            events.iter().map(|e| e.time).collect::<Vec<_>>(),
            [1000, 1000, 1005, 1004]
        );
        assert_eq!(
            events[1].data,
            json!({"turn":1,"step":2,"chunk":{"type":"text-delta","index":1,"text":"sh"}})
        );
    }

    #[test]
    fn expands_tool_rows_with_and_without_name() {
        let row = json!({"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":1,"dt":[1,1],"id":"c","name":"bash","args":["","{","}"]}});
        let events = decode(row).unwrap();
        assert_eq!(
            events[2].data["chunk"],
            json!({"type":"tool-call-delta","index":1,"id":"c","name":"bash","argumentsDelta":"}"})
        );
        let row = json!({"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":1,"dt":[1,1],"id":"c","args":["","{","}"]}});
        let chunk = &decode(row).unwrap()[0].data["chunk"];
        assert!(chunk.get("name").is_none());
    }

    #[test]
    fn refuses_malformed_rows() {
        for row in [
            json!({"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[0],"texts":["a"]}}),
            json!({"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":[]}}),
            json!({"type":"text-chunks","seq0":-1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}),
            json!({"type":"text-chunks","seq0":0,"time0":0,"extra":1,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}),
            json!({"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[0.5],"texts":["a","b"]}}),
            json!({"type":"reasoning-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":"0","dt":[],"texts":["a"]}}),
            json!({"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"args":["a"]}}),
            json!({"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"id":"c","name":null,"dt":[],"args":["a"]}}),
            json!({"type":"text-chunks","seq0":9007199254740991u64,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[0],"texts":["a","b"]}}),
        ] {
            assert!(
                matches!(decode(row.clone()), Err(RecordError::MalformedRow { .. })),
                "{row}"
            );
        }
    }

    #[test]
    fn events_pass_exactly_or_not_at_all() {
        let ok = json!({"type":"tool/result","seq":3,"time":5,"data":{"x":null},"surfaceOp":{"op":"replace","start":1,"end":2},"sourceEventSeqs":[],"ignorable":true});
        let e = decode(ok.clone()).unwrap();
        assert_eq!(serde_json::to_value(&e[0]).unwrap(), ok);
        // A plain envelope passes exactly too.
        let plain = json!({"type":"turn/end","seq":7,"time":-3,"data":{"a":[1.5,"b"]}});
        let e = decode(plain.clone()).unwrap();
        assert_eq!(serde_json::to_value(&e[0]).unwrap(), plain);
        for bad in [
            // Four members like a plain envelope, each one off.
            json!({"type":1,"seq":0,"time":0,"data":{}}),
            json!({"type":"x","seq":-1,"time":0,"data":{}}),
            json!({"type":"x","seq":0,"time":18446744073709551615u64,"data":{}}),
            json!({"type":"x","seq":0,"time":0,"extra":{}}),
            json!({"type":"x","seq":0,"time":0,"data":{},"extra":1}),
            json!({"type":"x","seq":0,"time":0,"data":{},"surfaceOp":null}),
            json!({"type":"x","seq":0,"time":0,"data":{},"surfaceOp":{"op":"replace","start":1,"end":2,"z":0}}),
            json!({"type":"x","seq":0,"time":0}),
            json!({"type":"x","seq":0,"time":0.5,"data":{}}),
            json!({"seq":0,"time":0,"data":{}}),
            json!([1]),
        ] {
            assert!(
                matches!(decode(bad.clone()), Err(RecordError::Envelope(_))),
                "{bad}"
            );
        }
    }
}
