//! The session files' tests, one binary: a module per concern (publication and appends, packing,
//! damaged files, random event sequences) and the recorded reference logs read in place;
//! `common` holds the corpus reader and scratch directories.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions"
)]

mod common;
mod corrupt;
mod fixtures;
mod packing;
mod properties;
mod store;
