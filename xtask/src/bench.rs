//! `cargo xtask bench`: measures our runtime and the peer in one run and writes BENCHMARKS.md.

use std::path::Path;

use anyhow::{Result, bail};

pub(crate) fn run(_root: &Path, _args: Vec<String>) -> Result<()> {
    bail!(
        "`cargo xtask bench` is not built yet: the runtime benchmarks are the next step of issue 2"
    )
}
