//! Bounded collection of one stream: only the last `cap` bytes are kept in memory, because the
//! model reads the tail (errors and results cluster at the end) and a chatty command must not
//! grow the host without bound.

pub(crate) struct Tail {
    bytes: Vec<u8>,
    cap: usize,
    dropped: bool,
}

impl Tail {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            bytes: Vec::new(),
            cap,
            dropped: false,
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        // Trimmed at twice the cap so the copy is amortized; `tail_output` cuts to the cap.
        if self.bytes.len() > self.cap.saturating_mul(2) {
            let excess = self.bytes.len() - self.cap;
            self.bytes.drain(..excess);
            self.dropped = true;
        }
    }

    pub(crate) fn collect(&self) -> dsh_tools_core::CollectedOutput {
        let mut output = dsh_tools_core::tail_output(&self.bytes, self.cap);
        output.truncated |= self.dropped;
        output
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_bytes_and_says_it_cut() {
        let mut tail = Tail::new(4);
        for chunk in [b"abc".as_slice(), b"defgh", b"ij"] {
            tail.push(chunk);
        }
        let output = tail.collect();
        assert_eq!(output.text, "ghij");
        assert!(output.truncated);
    }

    #[test]
    fn short_output_is_whole() {
        let mut tail = Tail::new(64);
        tail.push(b"hello\n");
        let output = tail.collect();
        assert_eq!(output.text, "hello\n");
        assert!(!output.truncated);
    }
}
