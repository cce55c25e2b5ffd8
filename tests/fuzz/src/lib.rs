//! `dsh-fuzz`: fuzz targets for every reader of input from outside the process (the YAML
//! loader and patch composer, the JSONL session reader raw and zstd, the DeepSeek adapter's SSE
//! stream, the client protocol's request reader, the JSON-RPC line readers of the SDK, ACP and
//! MCP), the engine that runs them and the regression corpus of what they found.
//!
//! Why generated inputs and not coverage guidance: the stable toolchain here has neither
//! cargo-fuzz (which needs nightly sanitizer flags) nor cargo-afl, and the project builds on
//! stable. So each target starts from valid documents and applies structure-aware mutations
//! (see [`mutate`]) at full speed, millions of cases given the time. Each case is checked for
//! no panic (caught, the input saved under `corpus/<target>/`), no hang (a watchdog ends the run
//! past a bound, the input saved) and bounded memory (inputs capped at
//! [`mutate::MAX_INPUT`], peak RSS reported and bounded by the runner). The binary `dsh-fuzz`
//! runs one target or all of them; `cargo xtask fuzz TARGET SECONDS` calls it.

#![allow(
    clippy::disallowed_methods,
    reason = "not a plugin: the runner owns its process, its watchdog thread and its panic hook"
)]

pub mod corpus;
pub mod engine;
pub mod mutate;
pub mod targets;

pub use engine::{Report, Settings, run};
pub use targets::{TARGETS, Target, find};
