//! A fake DeepSeek chat-completions server on loopback, speaking the real wire protocol: HTTP/1.1
//! with SSE bodies (chunked, or delimited by closing the connection), scripted per request, and
//! recording every request for assertions.
//!
//! Each `POST .../chat/completions` takes the next [`Reply`] of the script (or the one a router
//! picks from the request, see [`FakeDeepSeek::route`]); `GET .../models`
//! lists the models a test chose (`models.rs`; by default the two official ones); other
//! requests get a 404, and requests past the end of the script a 500. Every loop is bounded:
//! the accept loop polls with a timeout and stops at a connection cap, after a quiet spell, or
//! on drop; pauses and stalls sleep in short slices that watch the stop flag; sockets have read
//! and write timeouts. Dropping the server stops and joins every thread.
//!
//! Every chat request is also checked against the invariants the live API enforces (tool calls
//! answered, reasoning passed back...; see `invariants.rs`): a request that breaks one gets the
//! live API's 400 and fails the test, naming the request and the rule. What the model read is
//! read back through [`RecordedRequest`] and [`FakeDeepSeek`]: the tool and user messages of a
//! request, as text (`sent.rs`).

mod invariants;
mod models;
mod request;
mod script;
mod sent;
mod server;
#[cfg(test)]
mod tests;

pub use invariants::{Rule, Violation};
pub use models::OFFICIAL_MODELS;
pub use script::{RecordedRequest, Reply, SseEvent, first_chunk, usage};
pub use server::FakeDeepSeek;
