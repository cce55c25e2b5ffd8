//! The session log's tests, one binary: a module per concern (the append and load rules,
//! derivation, crash repair, random logs) and the recorded reference logs read in place;
//! `common` builds the events they share.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions"
)]

mod batches;
mod common;
mod derive;
mod fixtures;
mod properties;
mod recovery;
mod rules;
