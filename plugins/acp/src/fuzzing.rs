//! Entry points for the fuzz targets (the `dsh-fuzz` crate): the client's bytes read the way
//! `stdin::serve` and `Server::line` read them (the same line reader, frame reader and params
//! types), without a server behind them. Hidden from the docs: not an API for plugins.

use crate::schema::{
    CancelNotification, InitializeRequest, NewSessionRequest, PromptRequest, methods,
};
use crate::stdin::{Read1, read_from};
use crate::wire::{Frame, params, read_frame};

/// Reads every line of `input` (lines capped at `max_line` bytes) as the agent would, and
/// answers how many read as frames.
pub fn read_client_lines(input: &[u8], max_line: u64) -> usize {
    let mut reader = input;
    let mut frames = 0;
    loop {
        match read_from(&mut reader, max_line) {
            Read1::Line(line) => frames += usize::from(read_line(&line)),
            Read1::TooLong => {}
            Read1::End => return frames,
        }
    }
}

/// One line through the frame reader and, for the methods the server parses itself, through
/// the params type the server would read it as.
fn read_line(line: &str) -> bool {
    if line.trim().is_empty() {
        return false;
    }
    let raw = match read_frame(line) {
        Ok(Frame::Request { method, params, .. }) => Some((method, params)),
        Ok(Frame::Notification { method, params }) => Some((method, params)),
        Ok(Frame::Response { .. }) => return true,
        Err(_) => return false,
    };
    if let Some((method, raw)) = raw {
        let raw = raw.as_deref();
        let _ = match method.as_str() {
            methods::INITIALIZE => params::<InitializeRequest>(raw).is_ok(),
            methods::SESSION_NEW => params::<NewSessionRequest>(raw).is_ok(),
            methods::SESSION_PROMPT => params::<PromptRequest>(raw).is_ok(),
            methods::SESSION_CANCEL => params::<CancelNotification>(raw).is_ok(),
            _ => params::<serde_json::Value>(raw).is_ok(),
        };
    }
    true
}
