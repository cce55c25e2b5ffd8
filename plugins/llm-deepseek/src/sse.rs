//! Server-sent-events framing over arbitrary byte splits (the WHATWG event-stream rules).
//!
//! Reads may split anywhere, mid-line, mid-CRLF or mid-UTF-8 sequence. Lines end at CR, LF or
//! CRLF; `:` lines are comments; `data:` lines accumulate, joined by LF; a blank line
//! dispatches. An event is only complete at its blank line, so an unterminated tail at end of
//! stream is truncation, never a payload.

use dsh_protocol::{FailureCode, LlmFailure};

/// One decoded item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A dispatched event.
    Event(SseEvent),
    /// A comment (`: keep-alive`), without its colon and one leading space. Carries no payload
    /// but proves the connection alive, so it re-arms the idle watchdog.
    Comment(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when set.
    pub event: Option<String>,
    /// The `data:` lines joined by LF.
    pub data: String,
    /// The `id:` field, when set.
    pub id: Option<String>,
}

/// The largest event (one line plus the data gathered so far) the decoder buffers: far above
/// any real chunk, low enough that a broken server cannot exhaust memory.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

/// Incremental decoder: feed reads to [`SseDecoder::push`], get the items they complete.
#[derive(Debug, Clone)]
pub struct SseDecoder {
    line: Vec<u8>,
    data: String,
    event: Option<String>,
    id: Option<String>,
    /// The last byte was CR: a following LF belongs to the same line end.
    after_cr: bool,
    /// No line has been completed yet (a byte-order mark may lead the first one).
    first_line: bool,
    max_event_bytes: usize,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::with_limit(DEFAULT_MAX_EVENT_BYTES)
    }

    pub fn with_limit(max_event_bytes: usize) -> Self {
        Self {
            line: Vec::new(),
            data: String::new(),
            event: None,
            id: None,
            after_cr: false,
            first_line: true,
            max_event_bytes,
        }
    }

    /// Decodes one read. Fails only when an event outgrows the limit.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseItem>, LlmFailure> {
        let mut items = Vec::new();
        for &byte in bytes {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' | b'\n' => {
                    self.after_cr = byte == b'\r';
                    self.end_line(&mut items);
                }
                _ => {
                    self.after_cr = false;
                    self.line.push(byte);
                    if self.line.len() + self.data.len() > self.max_event_bytes {
                        return Err(LlmFailure::new(
                            FailureCode::MalformedResponse,
                            format!("SSE event exceeds {} bytes", self.max_event_bytes),
                        ));
                    }
                }
            }
        }
        Ok(items)
    }

    /// Whether bytes of an unfinished event are buffered (what a close now would cut off).
    pub fn has_partial_event(&self) -> bool {
        !self.line.is_empty() || !self.data.is_empty()
    }

    fn end_line(&mut self, items: &mut Vec<SseItem>) {
        let bytes = std::mem::take(&mut self.line);
        // Splitting at CR/LF bytes never cuts a UTF-8 sequence, so a whole line decodes alone.
        let decoded = String::from_utf8_lossy(&bytes);
        let mut line: &str = &decoded;
        if std::mem::replace(&mut self.first_line, false) {
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(items);
            return;
        }
        if let Some(comment) = line.strip_prefix(':') {
            let comment = comment.strip_prefix(' ').unwrap_or(comment);
            items.push(SseItem::Comment(comment.to_owned()));
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
            }
            "event" => self.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.id = Some(value.to_owned()),
            // `retry` and unknown fields mean nothing to a one-shot stream.
            _ => {}
        }
    }

    fn dispatch(&mut self, items: &mut Vec<SseItem>) {
        let event = self.event.take();
        if self.data.is_empty() {
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the LF after the last data line
        items.push(SseItem::Event(SseEvent {
            event,
            data,
            id: self.id.clone(),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(items: &[SseItem]) -> Vec<&str> {
        items
            .iter()
            .filter_map(|item| match item {
                SseItem::Event(event) => Some(event.data.as_str()),
                SseItem::Comment(_) => None,
            })
            .collect()
    }

    /// Decodes `text` split into reads of `size` bytes.
    fn split_reads(text: &str, size: usize) -> Vec<SseItem> {
        let mut decoder = SseDecoder::new();
        let mut items = Vec::new();
        for read in text.as_bytes().chunks(size) {
            items.extend(decoder.push(read).unwrap());
        }
        items
    }

    #[test]
    fn any_split_yields_the_same_events() {
        let stream =
            "data: {\"a\":\"é😀\"}\r\n\r\n: keep-alive\n\ndata: x\rdata: y\r\rdata: [DONE]\n\n";
        for size in 1..=stream.len() {
            let items = split_reads(stream, size);
            assert_eq!(
                data(&items),
                ["{\"a\":\"é😀\"}", "x\ny", "[DONE]"],
                "reads of {size}"
            );
            assert!(items.contains(&SseItem::Comment("keep-alive".into())));
        }
    }

    #[test]
    fn multi_line_data_joins_with_line_feeds_and_fields_are_kept() {
        let items = split_reads(
            "event: delta\nid: 7\nretry: 10\ndata: a\ndata:b\ndata\n\n",
            4,
        );
        assert_eq!(
            items,
            [SseItem::Event(SseEvent {
                event: Some("delta".into()),
                data: "a\nb\n".into(),
                id: Some("7".into()),
            })]
        );
    }

    #[test]
    fn a_leading_bom_is_dropped_and_blank_events_are_not_dispatched() {
        let items = split_reads("\u{feff}data: 1\n\nevent: only\n\n\n\n", 1);
        assert_eq!(data(&items), ["1"]);
    }

    #[test]
    fn an_unterminated_tail_is_not_an_event() {
        let mut decoder = SseDecoder::new();
        let items = decoder.push(b"data: {\"a\":1}\n\ndata: [DONE]").unwrap();
        assert_eq!(data(&items), ["{\"a\":1}"]);
        assert!(decoder.has_partial_event());
    }

    #[test]
    fn an_oversized_event_is_malformed() {
        let mut decoder = SseDecoder::with_limit(8);
        let error = decoder.push(b"data: 0123456789").unwrap_err();
        assert_eq!(error.code, FailureCode::MalformedResponse);
    }
}
