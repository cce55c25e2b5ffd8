//! What the web page shows, computed on the host: a model's Markdown rendered to HTML that can
//! carry no markup of the model's own (raw HTML is shown as text, links keep to web and mail
//! addresses, images are never loaded), code highlighted with Sublime grammars, an answer that
//! is still streaming split into blocks that can no longer change and the open tail (so a page
//! re-renders only the last block), and a file change as unified hunks with line numbers and
//! the changed words marked.
//!
//! The rendering is on the host rather than in a browser library because the page ships no
//! third-party code: pulldown-cmark, syntect and similar are maintained crates, the page stays a
//! few dozen kilobytes, and every client reads the same HTML from the same text.

mod blocks;
mod diff;
mod highlight;
mod markdown;

pub use blocks::{BlocksUpdate, StreamedMarkdown, TAIL_LIMIT};
pub use diff::{DiffSide, LineKind, hunks, inserted};
pub use highlight::code_block;
pub use markdown::render;
