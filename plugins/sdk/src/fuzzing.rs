//! Entry points for the fuzz targets (the `dsh-fuzz` crate): the client's bytes read the way
//! the runtime's stdin loop and `Server::line` read them (the kit's line reader and frame
//! classifier, the handshake probe, the runtime's own params), without a server behind them.
//! Hidden from the docs: not an API for plugins.

use dsh_json_rpc::wire::{Incoming, Line, classify, read_line};

use crate::door::Handshake;
use crate::methods::parse;

/// Reads every line of `input` (lines capped at `max_line` bytes) as the runtime would, and
/// answers how many were requests whose params read.
pub fn read_client_lines(input: &[u8], max_line: usize) -> usize {
    let mut reader = input;
    let mut parsed = 0;
    // An I/O error cannot come from a byte slice; it would end the loop like the end of input.
    while let Ok(Some(line)) = read_line(&mut reader, max_line) {
        let Line::Text(text) = line else { continue };
        if text.trim().is_empty() {
            continue;
        }
        if let Ok(Incoming::Request { method, params, .. }) = classify(&text) {
            let _ = Handshake::of(&params);
            parsed += usize::from(parse(&method, params).is_ok());
        }
    }
    parsed
}
