//! The incremental body scanner: feeds plaintext (a raw file's bytes after the header, or each
//! decoded zstd frame) and keeps the contiguous, committed event prefix.
//!
//! The torn-tail rule is the reference's: the first defective record (unparsable line, malformed
//! row, seq gap) ends the committed prefix. If any later record is a `turn/end`, the defect sits
//! inside committed history and the log is corrupt; otherwise everything from the defect on is a
//! torn tail that repair may truncate. A well-formed record whose envelope this crate cannot
//! represent is different: it is not damage, so it is always an error and never truncated.

use dsh_protocol::kinds;
use std::path::Path;

use serde_json::Value;

use dsh_session_log::SessionEvent;

use crate::error::{ReadError, RecordError};
use crate::record::{Head, event_from_object, expand_row};

/// What a scan keeps of each committed record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// The events, decoded.
    Events,
    /// Each event's JSON line: a plain envelope's bytes as they are (checked in place, not
    /// decoded), a packed row's events written out. For a reader that decodes them itself
    /// (the session service, across the plugin boundary), which then parses each line once.
    Lines,
}

/// What a scan kept.
pub(crate) struct ScanResult {
    /// With [`Keep::Events`].
    pub(crate) events: Vec<SessionEvent>,
    /// With [`Keep::Lines`].
    pub(crate) lines: Vec<String>,
    /// Plaintext bytes (header included) up to the end of the last committed record.
    pub(crate) committed_bytes: u64,
    /// The first defect, when the prefix ends before the input does for a reason other than a
    /// final line without its newline.
    pub(crate) issue: Option<ReadError>,
}

pub(crate) struct Scanner<'p> {
    path: &'p Path,
    keep: Keep,
    events: Vec<SessionEvent>,
    lines: Vec<String>,
    /// An incomplete record carried over to the next `write`.
    fragment: Vec<u8>,
    input_bytes: u64,
    committed_bytes: u64,
    /// 1-based line number of the last consumed line (the header is line 1).
    line: u64,
    /// 1-based zstd frame the current input came from; `None` for raw files.
    frame: Option<usize>,
    issue: Option<ReadError>,
}

/// The plain envelope, read in place: these members only (none twice), a string type, a `u64`
/// seq, an `i64` time, any JSON as data, and the optional members only in the one form each
/// writes back (a surface op exactly as the vocabulary spells it, seqs as an array of `u64`,
/// a boolean; never `null`). Such an envelope needs no lossless round trip
/// (`record::event_from_object`): it decodes and re-encodes to itself, so a line that reads as
/// this one is the event that line decodes to, and its text can stand for it. Every surface
/// event carries a surface op, a quarter of a long log's lines; the round trip made them the
/// larger part of reading one.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainLine<'a> {
    #[serde(rename = "type", borrow)]
    _kind: std::borrow::Cow<'a, str>,
    seq: u64,
    #[serde(rename = "time")]
    _time: i64,
    #[serde(rename = "data", borrow)]
    _data: &'a serde_json::value::RawValue,
    #[serde(rename = "surfaceOp", default)]
    _surface_op: Present<PlainSurfaceOp>,
    #[serde(rename = "sourceEventSeqs", default)]
    _source_event_seqs: Present<Vec<u64>>,
    #[serde(rename = "ignorable", default)]
    _ignorable: Present<bool>,
}

/// An optional envelope member that, when present, must read as `T` (so `null` does not: an
/// absent member and a `null` one decode alike but only one of them is written back).
struct Present<T>(std::marker::PhantomData<T>);

impl<T> Default for Present<T> {
    fn default() -> Self {
        Self(std::marker::PhantomData)
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Present<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(|_| Self(std::marker::PhantomData))
    }
}

/// A surface op in the form the vocabulary writes: `"append"`, or the replacement object with
/// exactly its three members.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum PlainSurfaceOp {
    Append(#[allow(dead_code, reason = "read to be checked")] dsh_protocol::AppendTag),
    Replace(#[allow(dead_code, reason = "read to be checked")] PlainReplace),
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainReplace {
    #[serde(rename = "op")]
    _op: dsh_protocol::ReplaceTag,
    #[serde(rename = "start")]
    _start: u64,
    #[serde(rename = "end")]
    _end: u64,
}

/// A defect that ends the committed prefix, or a line this crate must refuse outright.
enum Defect {
    Damage(ReadError),
    Refuse(ReadError),
}

fn mentions_turn_end(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line)
        .ok()
        .is_some_and(|value| Head::of(&value).kind() == Some(kinds::TURN_END))
}

impl<'p> Scanner<'p> {
    /// A scanner positioned after a header record of `header_bytes` bytes (newline included).
    #[cfg(test)]
    pub(crate) fn new(path: &'p Path, header_bytes: u64, frame: Option<usize>) -> Self {
        Self::keeping(Keep::Events, path, header_bytes, frame)
    }

    /// A scanner that keeps `keep` of each record.
    pub(crate) fn keeping(
        keep: Keep,
        path: &'p Path,
        header_bytes: u64,
        frame: Option<usize>,
    ) -> Self {
        Self {
            path,
            keep,
            events: Vec::new(),
            lines: Vec::new(),
            fragment: Vec::new(),
            input_bytes: header_bytes,
            committed_bytes: header_bytes,
            line: 1,
            frame,
            issue: None,
        }
    }

    pub(crate) fn set_frame(&mut self, frame: usize) {
        self.frame = Some(frame);
    }

    pub(crate) fn event_count(&self) -> usize {
        self.events.len() + self.lines.len()
    }

    /// Whether every fed byte belongs to a committed record.
    pub(crate) fn fully_committed(&self) -> bool {
        self.committed_bytes == self.input_bytes
    }

    /// The first defect, if one ended the prefix (taken, for reporting it as the error).
    pub(crate) fn take_issue(&mut self) -> Option<ReadError> {
        self.issue.take()
    }

    /// Feed the next plaintext bytes.
    pub(crate) fn write(&mut self, chunk: &[u8]) -> Result<(), ReadError> {
        let chunk_start = self.input_bytes;
        self.input_bytes += chunk.len() as u64;
        let mut line_start = 0;
        while let Some(pos) = chunk[line_start..].iter().position(|b| *b == b'\n') {
            let newline = line_start + pos;
            let end = chunk_start + newline as u64 + 1;
            if self.fragment.is_empty() {
                self.consume(&chunk[line_start..newline], end)?;
            } else {
                let mut line = std::mem::take(&mut self.fragment);
                line.extend_from_slice(&chunk[line_start..newline]);
                self.consume(&line, end)?;
            }
            line_start = newline + 1;
        }
        self.fragment.extend_from_slice(&chunk[line_start..]);
        Ok(())
    }

    /// Stop; a final record without its newline is left uncommitted (a torn tail).
    pub(crate) fn finish(self) -> ScanResult {
        ScanResult {
            events: self.events,
            lines: self.lines,
            committed_bytes: self.committed_bytes,
            issue: self.issue,
        }
    }

    fn consume(&mut self, line: &[u8], end: u64) -> Result<(), ReadError> {
        self.line += 1;
        if let Some(issue) = self.issue.take() {
            // Past a defect only one question matters: is the defect inside committed history?
            if mentions_turn_end(line) {
                return Err(issue);
            }
            self.issue = Some(issue);
            return Ok(());
        }
        let decoded = match self.keep {
            Keep::Events => self.decode(line).map(|events| self.events.extend(events)),
            Keep::Lines => self
                .decode_lines(line)
                .map(|lines| self.lines.extend(lines)),
        };
        match decoded {
            Ok(()) => {
                self.committed_bytes = end;
                Ok(())
            }
            Err(Defect::Refuse(error)) => Err(error),
            Err(Defect::Damage(error)) => {
                if mentions_turn_end(line) {
                    return Err(error);
                }
                self.issue = Some(error);
                Ok(())
            }
        }
    }

    fn record_error(&self, source: RecordError) -> ReadError {
        ReadError::Record {
            path: self.path.to_owned(),
            line: self.line,
            frame: self.frame,
            expected_seq: self.event_count() as u64,
            source,
        }
    }

    fn seq_gap(&self, found: Option<u64>) -> Defect {
        Defect::Damage(ReadError::SeqGap {
            path: self.path.to_owned(),
            line: self.line,
            frame: self.frame,
            expected: self.event_count() as u64,
            found,
        })
    }

    /// [`Keep::Lines`]: a plain envelope (`{type, seq, time, data}`, exactly) is checked in
    /// place and kept as it is; anything else goes the decoding way and its events are
    /// written as lines. Both accept exactly what [`decode`](Self::decode) accepts: the
    /// in-place check takes only what the decoding way's plain case takes, and hands the rest
    /// to it.
    fn decode_lines(&self, line: &[u8]) -> Result<Vec<String>, Defect> {
        if let Some(placed) = self.plain(line)
            && let Ok(text) = std::str::from_utf8(line)
        {
            placed?;
            return Ok(vec![text.trim_end().to_owned()]);
        }
        self.decode_record(line)?
            .iter()
            .map(|event| {
                serde_json::to_string(event).map_err(|error| {
                    Defect::Refuse(self.record_error(RecordError::Envelope(error.to_string())))
                })
            })
            .collect()
    }

    /// `None` when `line` is not a plain envelope; else whether it is in its place (its seq
    /// the next one), or the gap.
    fn plain(&self, line: &[u8]) -> Option<Result<(), Defect>> {
        let plain = serde_json::from_slice::<PlainLine<'_>>(line).ok()?;
        Some(match plain.seq == self.event_count() as u64 {
            true => Ok(()),
            false => Err(self.seq_gap(Some(plain.seq))),
        })
    }

    fn decode(&self, line: &[u8]) -> Result<Vec<SessionEvent>, Defect> {
        // The plain envelope nearly every event has: read as the vocabulary's type at once,
        // without the round trip of `decode_record` (it decodes and re-encodes to itself by
        // construction; the round trip was the larger part of reading a long log).
        if let Some(placed) = self.plain(line)
            && let Ok(event) = serde_json::from_slice::<SessionEvent>(line)
        {
            placed?;
            return Ok(vec![event]);
        }
        self.decode_record(line)
    }

    /// Any record the decoding way: parsed whole, a packed row expanded, an envelope checked
    /// to survive its round trip.
    fn decode_record(&self, line: &[u8]) -> Result<Vec<SessionEvent>, Defect> {
        let expected = self.event_count() as u64;
        let value: Value = serde_json::from_slice(line)
            .map_err(|e| Defect::Damage(self.record_error(RecordError::Json(e))))?;
        let head = Head::of(&value);
        if let Some(kind) = head.row_kind() {
            let events =
                expand_row(kind, &value).map_err(|e| Defect::Damage(self.record_error(e)))?;
            return match events.first() {
                Some(first) if first.seq == expected => Ok(events),
                first => Err(self.seq_gap(first.map(|e| e.seq))),
            };
        }
        let seq = head.seq();
        // A non-object has no seq, which is how the reference sees it: a gap.
        let Value::Object(obj) = value else {
            return Err(self.seq_gap(None));
        };
        // Seq first: a record out of place is damage whatever its shape.
        if seq != Some(expected) {
            return Err(self.seq_gap(seq));
        }
        let event = event_from_object(obj).map_err(|e| Defect::Refuse(self.record_error(e)))?;
        Ok(vec![event])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "/t/session.jsonl";

    fn line(seq: u64, kind: &str) -> String {
        format!("{{\"type\":\"{kind}\",\"seq\":{seq},\"time\":0,\"data\":{{}}}}\n")
    }

    fn scan(body: &str) -> Result<ScanResult, ReadError> {
        let mut s = Scanner::new(Path::new(P), 10, None);
        s.write(body.as_bytes())?;
        Ok(s.finish())
    }

    /// Both ways of keeping records over `body`: the lines decode to the events, or both fail
    /// alike.
    fn both_ways(body: &str) {
        let run = |keep: Keep| {
            let mut s = Scanner::keeping(keep, Path::new(P), 0, None);
            s.write(body.as_bytes()).map(|()| s.finish())
        };
        match (run(Keep::Events), run(Keep::Lines)) {
            (Ok(events), Ok(lines)) => {
                let decoded: Vec<SessionEvent> = lines
                    .lines
                    .iter()
                    .map(|line| serde_json::from_str(line).unwrap())
                    .collect();
                assert_eq!(decoded, events.events, "{body}");
                assert_eq!(events.committed_bytes, lines.committed_bytes, "{body}");
                assert_eq!(
                    events.issue.map(|e| e.to_string()),
                    lines.issue.map(|e| e.to_string()),
                    "{body}"
                );
            }
            (Err(events), Err(lines)) => assert_eq!(events.to_string(), lines.to_string()),
            (events, lines) => panic!(
                "{body}: {:?} against {:?}",
                events.map(|r| r.events.len()),
                lines.map(|r| r.lines.len())
            ),
        }
    }

    #[test]
    fn lines_and_events_read_alike() {
        for body in [
            // Plain, with escapes and nested data.
            "{\"type\":\"a\\u0041\",\"seq\":0,\"time\":-5,\"data\":{\"x\":[1,2.5,\"\\n\"]}}\n",
            // A duplicate member: the last one counts on both ways.
            "{\"type\":\"a\",\"seq\":7,\"seq\":0,\"time\":0,\"data\":{}}\n",
            // A packed row, then a plain event after it.
            "{\"type\":\"text-chunks\",\"seq0\":0,\"time0\":1,\"data\":{\"turn\":1,\"step\":1,\"index\":0,\"dt\":[0,1],\"texts\":[\"a\",\"b\"]}}\n{\"type\":\"b\",\"seq\":2,\"time\":0,\"data\":null}\n",
            // Out of place, then a float time, an extra member, a null optional: refused or torn.
            "{\"type\":\"a\",\"seq\":1,\"time\":0,\"data\":{}}\n",
            "{\"type\":\"a\",\"seq\":0,\"time\":0.5,\"data\":{}}\n",
            "{\"type\":\"a\",\"seq\":0,\"time\":0,\"data\":{},\"extra\":1}\n",
            "{\"type\":\"a\",\"seq\":0,\"time\":0,\"data\":{},\"surfaceOp\":null}\n",
            "{\"type\":\"a\",\"seq\":0,\"time\":0,\"data\":{},\"ignorable\":true}\n",
            "not json\n{\"type\":\"turn/end\",\"seq\":1,\"time\":0,\"data\":{}}\n",
            // Trailing white space after a plain record.
            "{\"type\":\"a\",\"seq\":0,\"time\":0,\"data\":{}}  \r\n",
            // The optional members in the forms written back, and in forms that are not.
            "{\"type\":\"a\",\"seq\":0,\"time\":0,\"data\":{},\"surfaceOp\":\"append\",\"sourceEventSeqs\":[],\"ignorable\":true}\n",
            "{\"type\":\"a\",\"seq\":0,\"time\":0,\"data\":{},\"surfaceOp\":{\"end\":3,\"op\":\"replace\",\"start\":1},\"sourceEventSeqs\":[1,2]}\n",
            "{\"type\":\"a\",\"seq\":0,\"time\":0,\"data\":{},\"surfaceOp\":{\"op\":\"replace\",\"start\":1,\"end\":3,\"x\":0}}\n",
            "{\"type\":\"a\",\"seq\":0,\"time\":0,\"data\":{},\"surfaceOp\":{\"op\":\"replace\",\"start\":1.0,\"end\":3}}\n",
            "{\"type\":\"a\",\"seq\":0,\"time\":0,\"data\":{},\"surfaceOp\":\"prepend\"}\n",
            "{\"type\":\"a\",\"seq\":0,\"time\":0,\"data\":{},\"surfaceOp\":\"append\",\"surfaceOp\":\"append\"}\n",
            "{\"type\":\"a\",\"seq\":0,\"time\":0,\"data\":{},\"sourceEventSeqs\":null}\n",
            "{\"type\":\"a\",\"seq\":0,\"time\":0,\"data\":{},\"sourceEventSeqs\":[-1]}\n",
            "{\"type\":\"a\",\"seq\":0,\"time\":0,\"data\":{},\"ignorable\":false}\n",
        ] {
            both_ways(body);
        }
    }

    #[test]
    fn lines_split_across_writes() {
        let body = format!("{}{}", line(0, "a"), line(1, "b"));
        let mut s = Scanner::new(Path::new(P), 0, None);
        for b in body.as_bytes().chunks(7) {
            s.write(b).unwrap();
        }
        let r = s.finish();
        assert_eq!(r.events.len(), 2);
        assert_eq!(r.committed_bytes, body.len() as u64);
    }

    #[test]
    fn torn_last_line_is_uncommitted() {
        let body = format!("{}{}", line(0, "a"), &line(1, "b")[..12]);
        let r = scan(&body).unwrap();
        assert_eq!(r.events.len(), 1);
        assert_eq!(r.committed_bytes, 10 + line(0, "a").len() as u64);
        assert!(r.issue.is_none());
    }

    #[test]
    fn defect_without_later_turn_end_is_a_torn_tail() {
        let body = format!("{}garbage\n{}", line(0, "a"), line(2, "b"));
        let r = scan(&body).unwrap();
        assert_eq!(r.events.len(), 1);
        assert!(matches!(r.issue, Some(ReadError::Record { line: 3, .. })));
        let gap = format!("{}{}", line(0, "a"), line(5, "b"));
        let r = scan(&gap).unwrap();
        assert!(matches!(
            r.issue,
            Some(ReadError::SeqGap {
                expected: 1,
                found: Some(5),
                ..
            })
        ));
    }

    #[test]
    fn defect_before_turn_end_is_corruption() {
        let body = format!("{}garbage\n{}", line(0, "a"), line(1, "turn/end"));
        let e = scan(&body).err().unwrap();
        assert!(
            matches!(
                e,
                ReadError::Record {
                    line: 3,
                    expected_seq: 1,
                    ..
                }
            ),
            "{e}"
        );
        let gap = format!("{}{}", line(0, "a"), line(2, "turn/end"));
        assert!(matches!(scan(&gap), Err(ReadError::SeqGap { .. })));
    }

    #[test]
    fn a_malformed_row_names_file_line_and_member() {
        let row = r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[0.5],"texts":["a","b"]}}"#;
        let body = format!("{}{row}\n{}", line(0, "a"), line(3, "turn/end"));
        let e = scan(&body).err().unwrap();
        assert_eq!(
            e.to_string(),
            format!(
                "{P}: corrupt session log at line 3 (expected seq 1): malformed text-chunks storage row: dt must be an array of safe integers"
            )
        );
        let row = r#"{"type":"tool-call-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":"1","index":0,"id":"c","dt":[],"args":["{}"]}}"#;
        let body = format!("{}{row}\n{}", line(0, "a"), line(2, "turn/end"));
        let e = scan(&body).err().unwrap();
        assert!(
            e.to_string().ends_with(
                "malformed tool-call-chunks storage row: turn/step/index must be numbers"
            ),
            "{e}"
        );
    }

    #[test]
    fn unknown_envelope_is_refused_even_at_the_end() {
        let body = format!(
            "{}{{\"type\":\"x\",\"seq\":1,\"time\":0,\"data\":{{}},\"new\":1}}\n",
            line(0, "a")
        );
        let e = scan(&body).err().unwrap();
        assert!(e.to_string().contains("line 3"), "{e}");
        assert!(
            e.to_string().contains("unknown envelope field \"new\""),
            "{e}"
        );
    }
}
