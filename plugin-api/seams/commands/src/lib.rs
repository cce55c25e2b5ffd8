//! `dsh-commands-seam`: human commands across the plugin ABI. A message that is a single text
//! starting with `/` runs a command instead of reaching the model. The `commands` service runs
//! one (logging `command/run` and `command/done` in the session) and lists them; each command
//! belongs to the plugin that answers it on `commands/run` (a waterfall: a listener answers its
//! own names and passes the rest on; the innermost default says the command is unknown) and
//! declares itself on `commands/list` (each listener adds its specs to what `next` answers).
//! A command's listeners go with its plugin, so the catalog follows reloads.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::sabi_trait;
use abi_stable::std_types::{RBox, RString};
use async_ffi::FfiFuture;
use dsh_plugin_api::{Json, WaterfallEvent};
use dsh_protocol::{CommandInvocation, CommandOutcome, CommandSpec};

/// Service key of the command runner.
pub const COMMANDS_SERVICE: &str = "commands";

/// `commands/run`: a listener that owns `invocation.name` answers its outcome; others call
/// `next`.
pub const COMMANDS_RUN: WaterfallEvent<Json<CommandInvocation>, Json<CommandOutcome>> =
    WaterfallEvent::new("commands/run");

/// `commands/list`: each listener answers `next`'s specs with its own added.
pub const COMMANDS_LIST: WaterfallEvent<Json<()>, Json<Vec<CommandSpec>>> =
    WaterfallEvent::new("commands/list");

/// The `commands` service.
#[sabi_trait]
pub trait Commands: Send + Sync {
    /// Runs the command line `text` (`/name args`) for live session `session`, logging
    /// `command/run` and `command/done` there; answers the outcome (an unknown command, or a
    /// text that is no command line, is an error outcome).
    fn run(&self, session: RString, text: RString) -> FfiFuture<Json<CommandOutcome>>;
    /// Every command the running plugins declare, by name.
    fn list(&self) -> FfiFuture<Json<Vec<CommandSpec>>>;
}
pub type CommandsService = Commands_TO<'static, RBox<()>>;
