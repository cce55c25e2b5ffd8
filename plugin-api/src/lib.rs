//! `dsh-plugin-api`: the stable ABI between `dsh-host` and its plugin libraries, and the SDK that
//! plugin authors write against.
//!
//! It owns the root module every plugin library exports ([`PluginLib`]), the erased objects that
//! cross the boundary (host context, listeners, disposers, services), and the typed layer on top:
//! [`Plugin`] to declare a plugin with its config schema and its required and provided services,
//! [`Context`] to register effects, services and listeners, five event descriptor types that fix
//! each event's dispatch mode, and [`export_plugins!`] to build the root module. It does not own
//! any runtime: time, spawning and blocking work come from the host through the context, and the
//! lifecycle rules (fibers, epochs, reload) live in `dsh-host`.
//!
//! Plugin code never unwinds across the boundary: every exported function, listener, disposer
//! and task body runs inside `catch_unwind`, and a panic becomes a [`PluginError`].

/// The fiber id [`Context::tree_settled`] waits on: the whole tree rather than one fiber.
pub const WHOLE_TREE: u64 = u64::MAX;

/// The crates the `workspace-shared` feature carries, linked into the shared library so that
/// the workspace's host and plugins use one copy (see the manifest); named here because a
/// dependency no code names is not linked at all.
#[cfg(feature = "workspace-shared")]
mod workspace_shared {
    extern crate globset as _;
    extern crate ignore as _;
    extern crate regex_automata as _;
    extern crate serde_norway as _;
    extern crate sha2 as _;
    extern crate tokio as _;
}

pub mod abi;
pub mod cancel;
mod context;
mod events;
mod guard;
pub mod io;
mod json;
mod logging;
mod plugin;
mod seam_error;
mod sync;
mod waterfall;

pub use abi::{
    CMDLINE_SERVICE, CmdlineArgs, DispatchMode, ErrorKind, EventDecl, HostCtx, LayoutRef, LogLevel,
    PluginDecl, PluginError, PluginLib, PluginLibRef,
};
pub use context::{Channel, Context, Descriptor, Service, typed_channel};
pub use events::{BailEvent, EmitEvent, ParallelEvent, SerialEvent, WaterfallEvent};
pub use guard::{catching, contain, contained, panic_message, panic_report};
pub use json::{DecodeError, Json};
pub use plugin::{NoConfig, Plugin, ROOT_MODULE_SYMBOL, declare, parse_config};
pub use seam_error::{SeamError, SeamErrorKind};
pub use sync::lock;
pub use waterfall::Next;

#[doc(hidden)]
pub use plugin::__private;

/// Re-exports a plugin crate needs without depending on them directly.
pub use abi_stable::{
    self, StableAbi,
    std_types::{RArc, RBox, ROption, RResult, RStr, RString, RVec},
};
pub use async_ffi;
pub use schemars::{self, JsonSchema};
pub use serde::{self, Deserialize, Serialize};
pub use serde_json;
pub use tracing;

/// The version of this crate; libraries built against an incompatible version are refused.
pub const API_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Everything a plugin author usually needs.
pub mod prelude {
    pub use crate::{
        BailEvent, Context, EmitEvent, Json, JsonSchema, Next, NoConfig, ParallelEvent, Plugin,
        PluginError, RArc, RString, SerialEvent, Service, StableAbi, WaterfallEvent,
    };
    pub use serde::Deserialize;
}
