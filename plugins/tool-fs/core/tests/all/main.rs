//! The file tools' logic, one binary: a module per tool family (read, write and edit, glob and
//! grep, todo_write), the hunk diffs against jsdiff, a workspace served from memory, and the
//! recorded reference sessions replayed; `common` makes the scratch workspaces.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions"
)]

mod common;
mod diff;
mod fixtures;
mod mutate;
mod provider;
mod read;
mod search;
mod todo;
