//! Reading the client: one line at a time from stdin, on the host's blocking pool (a plugin
//! owns no thread), each handed to the server as it arrives. A line that is not UTF-8 is read
//! lossily (it then fails as JSON and is answered -32700); a line longer than [`MAX_LINE`] is
//! dropped whole and answered -32700 too. End of file ends the loop.

use std::io::{BufRead, Read};
use std::sync::Arc;

use crate::server::Server;
use crate::wire::RpcError;

/// The longest line read (a prompt with a large pasted file fits).
const MAX_LINE: u64 = 64 * 1024 * 1024;

/// What one read came to.
pub(crate) enum Read1 {
    Line(String),
    TooLong,
    End,
}

fn read_line() -> Read1 {
    read_from(&mut std::io::stdin().lock(), MAX_LINE)
}

/// One line of `input`, at most `max_line` bytes (the rest of a longer line is skipped). Takes
/// any reader so the fuzz targets drive the very code that reads stdin.
pub(crate) fn read_from(input: &mut impl BufRead, max_line: u64) -> Read1 {
    let mut bytes = Vec::new();
    match (&mut *input).take(max_line).read_until(b'\n', &mut bytes) {
        Ok(0) | Err(_) => return Read1::End,
        Ok(_) => {}
    }
    if bytes.last() != Some(&b'\n') && bytes.len() as u64 == max_line {
        // Skip the rest of the line.
        let mut rest = Vec::new();
        loop {
            rest.clear();
            match (&mut *input).take(max_line).read_until(b'\n', &mut rest) {
                Ok(0) | Err(_) => return Read1::TooLong,
                Ok(_) if rest.last() == Some(&b'\n') => return Read1::TooLong,
                Ok(_) => {}
            }
        }
    }
    Read1::Line(String::from_utf8_lossy(&bytes).into_owned())
}

/// Serves the client until stdin closes.
pub(crate) async fn serve(server: &Arc<Server>) {
    loop {
        match server.ctx.blocking(read_line).await {
            Ok(Read1::Line(line)) => server.line(&line),
            Ok(Read1::TooLong) => server.wire.fail(
                None,
                &RpcError::parse(&format!("a line longer than {MAX_LINE} bytes was dropped")),
            ),
            Ok(Read1::End) | Err(_) => return,
        }
    }
}
