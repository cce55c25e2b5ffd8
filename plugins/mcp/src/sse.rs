//! Server-sent events, read incrementally: bytes in, each complete event out. What matters to
//! MCP is an event's `data:` lines (joined with newlines) and, for the legacy HTTP+SSE
//! transport, its `event:` name (`endpoint` or `message`); `id:`, `retry:` and comments are
//! read past. An event is capped at [`MAX_EVENT`] bytes (as the stdio
//! reader caps a line): the rest of a longer one is dropped, so it fails to read as JSON and is
//! reported, and a server that never ends an event cannot grow the host's memory without bound.

/// The most bytes of one event kept (its lines and its data together).
pub(crate) const MAX_EVENT: usize = 64 * 1024 * 1024;

/// One complete event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// Its `event:` name (`None`: the default, `message`).
    pub(crate) name: Option<String>,
    pub(crate) data: String,
}

/// The part of a stream read so far.
#[derive(Debug)]
pub(crate) struct Events {
    line: Vec<u8>,
    data: Vec<String>,
    /// The current event's `event:` name, if it gave one.
    name: Option<String>,
    /// Bytes of the current event kept so far (its data and the line being read).
    kept: usize,
    /// The line being read has bytes (kept or not): a cut line is no blank line.
    in_line: bool,
    max: usize,
    /// The previous byte was a CR (a CRLF's LF then ends nothing more).
    after_cr: bool,
}

impl Default for Events {
    fn default() -> Self {
        Self::capped(MAX_EVENT)
    }
}

impl Events {
    /// A reader keeping at most `max` bytes of an event.
    pub(crate) fn capped(max: usize) -> Self {
        Self {
            line: Vec::new(),
            data: Vec::new(),
            name: None,
            kept: 0,
            in_line: false,
            max,
            after_cr: false,
        }
    }

    /// Feeds `bytes`; answers the data of every event they complete.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.push_named(bytes)
            .into_iter()
            .map(|event| event.data)
            .collect()
    }

    /// Feeds `bytes`; answers every event they complete, with its name.
    pub(crate) fn push_named(&mut self, bytes: &[u8]) -> Vec<Event> {
        let mut complete = Vec::new();
        for &byte in bytes {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    self.end_line(&mut complete);
                }
                _ => {
                    self.after_cr = false;
                    self.in_line = true;
                    if self.kept < self.max {
                        self.line.push(byte);
                        self.kept += 1;
                    }
                }
            }
        }
        complete
    }

    fn end_line(&mut self, complete: &mut Vec<Event>) {
        let line = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        let blank = !std::mem::take(&mut self.in_line);
        if blank {
            let name = self.name.take();
            if !self.data.is_empty() {
                complete.push(Event {
                    name,
                    data: self.data.join("\n"),
                });
                self.data.clear();
            }
            self.kept = 0;
            return;
        }
        let field = |prefix: &str| {
            line.strip_prefix(prefix)
                .map(|value| value.strip_prefix(' ').unwrap_or(value).to_owned())
        };
        if let Some(value) = field("data:") {
            self.data.push(value);
        } else if let Some(name) = field("event:") {
            self.name = Some(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Events;

    #[test]
    fn events_split_across_chunks_and_line_endings_come_out_whole() {
        let mut events = Events::default();
        assert!(
            events
                .push(b"event: message\r\nid: 1\r\ndata: {\"a\"")
                .is_empty()
        );
        let out = events.push(b":1}\r\n\r\n: comment\n\ndata: x\ndata: y\n\n");
        assert_eq!(out, ["{\"a\":1}", "x\ny"]);
        assert!(events.push(b"id: 2\n\n").is_empty());
    }

    #[test]
    fn an_events_name_comes_with_it_and_does_not_outlive_it() {
        let mut events = Events::default();
        let out = events.push_named(b"event: endpoint\ndata: /message?sessionId=1\n\ndata: {}\n\n");
        assert_eq!(out[0].name.as_deref(), Some("endpoint"));
        assert_eq!(out[0].data, "/message?sessionId=1");
        assert_eq!(out[1].name, None);
        // A named event without data is no event, and its name goes with it.
        let out = events.push_named(b"event: ping\n\ndata: x\n\n");
        assert_eq!(
            out,
            [super::Event {
                name: None,
                data: "x".into()
            }]
        );
    }

    #[test]
    fn an_event_past_the_cap_is_cut_and_the_next_one_reads_whole() {
        let mut events = Events::capped(16);
        let long = format!("data: {}\n", "x".repeat(1000));
        assert!(events.push(long.as_bytes()).is_empty());
        assert!(
            events
                .push(format!("data: {}\n", "y".repeat(1000)).as_bytes())
                .is_empty()
        );
        let out = events.push(b"\ndata: {\"ok\":1}\n\n");
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(out[0].len() <= 16, "kept {} bytes", out[0].len());
        assert_eq!(out[1], "{\"ok\":1}");
    }
}
