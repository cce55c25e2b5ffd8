//! Server-sent events, read incrementally: bytes in, the data of each complete event out.
//! Only `data:` lines matter to MCP (an event's lines joined with newlines); `id:`, `event:`,
//! `retry:` and comments are read past.

/// The part of a stream read so far.
#[derive(Debug, Default)]
pub(crate) struct Events {
    line: Vec<u8>,
    data: Vec<String>,
    /// The previous byte was a CR (a CRLF's LF then ends nothing more).
    after_cr: bool,
}

impl Events {
    /// Feeds `bytes`; answers the data of every event they complete.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<String> {
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
                    self.line.push(byte);
                }
            }
        }
        complete
    }

    fn end_line(&mut self, complete: &mut Vec<String>) {
        let line = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        if line.is_empty() {
            if !self.data.is_empty() {
                complete.push(self.data.join("\n"));
                self.data.clear();
            }
            return;
        }
        if let Some(value) = line.strip_prefix("data:") {
            self.data
                .push(value.strip_prefix(' ').unwrap_or(value).to_owned());
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
}
