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

/// What a scan kept.
pub(crate) struct ScanResult {
    pub(crate) events: Vec<SessionEvent>,
    /// Plaintext bytes (header included) up to the end of the last committed record.
    pub(crate) committed_bytes: u64,
    /// The first defect, when the prefix ends before the input does for a reason other than a
    /// final line without its newline.
    pub(crate) issue: Option<ReadError>,
}

pub(crate) struct Scanner<'p> {
    path: &'p Path,
    events: Vec<SessionEvent>,
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
    pub(crate) fn new(path: &'p Path, header_bytes: u64, frame: Option<usize>) -> Self {
        Scanner {
            path,
            events: Vec::new(),
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
        self.events.len()
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
        match self.decode(line) {
            Ok(decoded) => {
                self.events.extend(decoded);
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
            expected_seq: self.events.len() as u64,
            source,
        }
    }

    fn seq_gap(&self, found: Option<u64>) -> Defect {
        Defect::Damage(ReadError::SeqGap {
            path: self.path.to_owned(),
            line: self.line,
            frame: self.frame,
            expected: self.events.len() as u64,
            found,
        })
    }

    fn decode(&self, line: &[u8]) -> Result<Vec<SessionEvent>, Defect> {
        let expected = self.events.len() as u64;
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
