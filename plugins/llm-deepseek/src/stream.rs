//! Response bytes to stream chunks: the SSE decoder and the translator, driven together.

use dsh_protocol::{LlmFailure, StreamChunk};

use crate::sse::{SseDecoder, SseItem};
use crate::translate::StreamTranslator;

/// What one read produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    pub chunks: Vec<StreamChunk>,
    /// An event or a comment arrived: the provider is alive, re-arm the idle watchdog.
    pub activity: bool,
}

/// The body of one successful (2xx) response, fed read by read.
///
/// After `[DONE]` ([`ResponseStream::is_done`]) the caller stops reading and closes the
/// connection; bytes pushed later are ignored. At end of body the caller asks
/// [`ResponseStream::finish`], which fails with `STREAM_CLOSED` when `[DONE]` never came.
#[derive(Debug, Clone, Default)]
pub struct ResponseStream {
    decoder: SseDecoder,
    translator: StreamTranslator,
}

impl ResponseStream {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, bytes: &[u8]) -> Result<Progress, LlmFailure> {
        let mut progress = Progress::default();
        if self.translator.is_done() {
            return Ok(progress);
        }
        for item in self.decoder.push(bytes)? {
            progress.activity = true;
            if let SseItem::Event(event) = item {
                progress.chunks.extend(self.translator.push(&event.data)?);
                if self.translator.is_done() {
                    break;
                }
            }
        }
        Ok(progress)
    }

    pub fn is_done(&self) -> bool {
        self.translator.is_done()
    }

    /// End of body reached.
    pub fn finish(&self) -> Result<(), LlmFailure> {
        self.translator.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::{FailureCode, FinishReason};

    #[test]
    fn bytes_in_chunks_out_and_done_stops_reading() {
        let body = concat!(
            ": warming up\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"late\"}}]}\n\n",
        );
        let mut stream = ResponseStream::new();
        let mut chunks = Vec::new();
        let mut saw_activity = false;
        for read in body.as_bytes().chunks(7) {
            let progress = stream.push(read).unwrap();
            saw_activity |= progress.activity;
            chunks.extend(progress.chunks);
        }
        assert!(saw_activity);
        assert!(stream.is_done());
        stream.finish().unwrap();
        assert_eq!(chunks.len(), 4, "{chunks:?}");
        assert_eq!(chunks[3], StreamChunk::finish(FinishReason::Stop));
    }

    #[test]
    fn a_comment_alone_is_activity() {
        let mut stream = ResponseStream::new();
        let progress = stream.push(b": ping\n").unwrap();
        assert!(progress.activity && progress.chunks.is_empty());
        assert!(!stream.push(b"da").unwrap().activity);
    }

    #[test]
    fn end_of_body_without_done_is_stream_closed() {
        let mut stream = ResponseStream::new();
        stream
            .push(b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]")
            .unwrap();
        assert_eq!(stream.finish().unwrap_err().code, FailureCode::StreamClosed);
    }
}
