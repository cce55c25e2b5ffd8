//! Tests of the tool registry's logic, one module per rule family, plus the recorded reference
//! logs read in place.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions"
)]

mod fixtures;
mod gates;
mod order;
mod outcome;
mod registry;
mod scheduler;
mod schema;
mod shell;
mod support;
mod view;
