//! The targets: each a name, its seeds (valid inputs the mutations start from), its tokens (what
//! the mutations splice in) and the function that reads one input. A target returns nothing: a
//! refusal is an answer, a panic or a hang is the finding.

mod client;
mod loader;
mod rpc;
mod session;
mod sse;

/// One fuzz target.
pub struct Target {
    pub name: &'static str,
    /// What it reads, for the usage text.
    pub about: &'static str,
    pub seeds: fn() -> Vec<Vec<u8>>,
    pub dict: &'static [&'static [u8]],
    pub run: fn(&[u8]),
}

/// Every target, in the order `all` runs them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "loader",
        about: "YAML loader and patch composer (patch layer, settings, row list)",
        seeds: loader::seeds,
        dict: loader::DICT,
        run: loader::run,
    },
    Target {
        name: "session-raw",
        about: "JSONL session reader, raw lines, loaded into a session log",
        seeds: session::raw_seeds,
        dict: session::DICT,
        run: session::run_raw,
    },
    Target {
        name: "session-zstd",
        about: "JSONL session reader, zstd frames, loaded into a session log",
        seeds: session::zstd_seeds,
        dict: session::DICT,
        run: session::run_zstd,
    },
    Target {
        name: "sse",
        about: "DeepSeek adapter's SSE framing and chunk translation",
        seeds: sse::seeds,
        dict: sse::DICT,
        run: sse::run,
    },
    Target {
        name: "client-protocol",
        about: "client protocol: envelope, ClientRequest::parse, client frames",
        seeds: client::seeds,
        dict: client::DICT,
        run: client::run,
    },
    Target {
        name: "sdk",
        about: "SDK runtime's JSON-RPC lines (the json-rpc kit's reader and classifier)",
        seeds: rpc::seeds,
        dict: rpc::DICT,
        run: rpc::run_sdk,
    },
    Target {
        name: "acp",
        about: "ACP agent's JSON-RPC stdin lines and params",
        seeds: rpc::seeds,
        dict: rpc::DICT,
        run: rpc::run_acp,
    },
    Target {
        name: "mcp",
        about: "MCP client's stdio lines and HTTP event stream",
        seeds: rpc::seeds,
        dict: rpc::DICT,
        run: rpc::run_mcp,
    },
];

/// The target named `name`.
pub fn find(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|target| target.name == name)
}
