//! `dsh-llm-kit`: the model seam's logic that is not data. The [`BlockAssembler`] folds a
//! chunk stream into the assistant message's content (the one fold the loop, the replay
//! adapter and the conformance tests share), the classifiers recognize a provider's wording for
//! an overflowing context window or an exhausted quota, and [`offload_request_images`] keeps a
//! request's images within a provider's budget.
//!
//! The vocabulary these work on (messages, chunks, usage, failures, requests) is
//! `dsh-protocol`'s; adapters, transports and the registry are plugins.

mod assembler;
mod classify;
mod images;

pub use assembler::{AssemblyError, BlockAssembler};
pub use classify::{is_context_window_exceeded, is_quota_exceeded};
pub use images::{OFFLOADED_IMAGE_TEXT, base64_len, offload_request_images};
