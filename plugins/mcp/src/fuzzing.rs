//! Entry points for the fuzz targets (the `dsh-fuzz` crate): a server's bytes read the way the
//! two transports read them (stdout split into lines; the HTTP transport's event stream) and
//! each message decoded as the connection decodes it. Hidden from the docs: not an API for
//! plugins.

use crate::rpc::messages;
use crate::sse::Events;
use crate::stdio::split_lines;

/// Feeds `chunks` to the stdio line splitter and decodes every line; answers the messages.
pub fn read_stdio<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> usize {
    let mut line = Vec::new();
    let mut count = 0;
    for chunk in chunks {
        for text in split_lines(&mut line, chunk) {
            count += decode(&text);
        }
    }
    count
}

/// Feeds `chunks` to the event-stream reader and decodes the data of every event.
pub fn read_event_stream<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> usize {
    let mut events = Events::default();
    let mut count = 0;
    for chunk in chunks {
        for data in events.push(chunk) {
            count += decode(&data);
        }
    }
    count
}

/// One message's members as the connection reads them (ids, methods, results, errors).
fn decode(text: &str) -> usize {
    messages(text)
        .iter()
        .map(|message| {
            usize::from(message.id.is_some())
                + usize::from(message.method.is_some())
                + usize::from(message.result.is_some() || message.error.is_some())
        })
        .sum()
}
