//! The three tools as one registered type: their declarations, and each call handed to its
//! module. Every failure is a result for the model, never an error of the host.

use std::sync::Arc;

use abi_stable::std_types::{RNone, ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::Json;
use dsh_plugin_api::cancel::CancelBox;
use dsh_protocol::{ContentBlock, OutcomeSummary, ToolDecl, ToolReply};
use dsh_tools_seam::{CallView, Tool};
use serde_json::{Value, json};

use crate::{State, build, install, new};

#[derive(Clone, Copy)]
pub(crate) enum Kind {
    New,
    Build,
    Install,
}

pub(crate) struct AuthorTool {
    pub kind: Kind,
    pub state: Arc<State>,
}

const NEW: &str = "Create a new dsh plugin crate (a Rust cdylib the harness loads) in the workspace, \
from the same template as `cargo xtask new-plugin`. Then edit its src/lib.rs (load the \
`plugin-author` skill for the plugin API and a complete tool plugin), build it with plugin_build \
and load it with plugin_install: its tools are offered from the next step on.";

const BUILD: &str = "Build a plugin crate with cargo (offline, confined by the sandbox). On success it \
names the library; on failure the result is the compiler's messages: fix them and build again.";

const INSTALL: &str = "Install a plugin crate built with plugin_build: the host checks the library \
(ABI and plugin header), copies it into the plugins folder and mounts it, so the tools it \
registers can be called from the next step on, and again after a restart. A library that fails \
the check is refused and the running version stays; a new version of a running plugin takes its \
place at once (and if it fails to start, the previous version is put back). `config` is the \
plugin's row config (a JSON object).";

fn parameters(kind: Kind) -> Value {
    let path = json!({"type": "string", "description": "The crate's directory, relative to the working directory."});
    match kind {
        Kind::New => json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The plugin's name: lowercase letters, digits, `-` or `_`, starting with a letter (the library becomes lib<name with _>.so)."},
                "dir": {"type": "string", "description": "Where to create the crate, relative to the working directory (default: the name)."}
            },
            "required": ["name"],
            "additionalProperties": false
        }),
        Kind::Build => json!({
            "type": "object",
            "properties": {"path": path},
            "required": ["path"],
            "additionalProperties": false
        }),
        Kind::Install => json!({
            "type": "object",
            "properties": {
                "path": path,
                "config": {"type": "object", "description": "The plugin's config (its row's `config`); default {}."}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    }
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::New => "plugin_new",
            Kind::Build => "plugin_build",
            Kind::Install => "plugin_install",
        }
    }
}

impl AuthorTool {
    fn decl(&self) -> ToolDecl {
        let name = self.kind.name();
        let description = match self.kind {
            Kind::New => NEW,
            Kind::Build => BUILD,
            Kind::Install => INSTALL,
        };
        let mut decl = ToolDecl::new(name, description, parameters(self.kind));
        decl.timeout_ms = Some(match self.kind {
            Kind::New => 30_000,
            // The pipeline's limit stays above the tool's own, which answers first and says
            // what was stopped.
            Kind::Build => self.state.build_timeout_ms + 10_000,
            Kind::Install => self.state.check_timeout_ms + self.state.settle_timeout_ms + 10_000,
        });
        decl
    }
}

impl Tool for AuthorTool {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&self.decl())
    }

    fn render(&self, _value: Json<Value>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let state = self.state.clone();
        let kind = self.kind;
        async move {
            let outcome = match kind {
                Kind::New => new::run(&state, &call),
                Kind::Build => build::run(&state, &call, cancel).await,
                Kind::Install => install::run(&state, &call, cancel).await,
            };
            let reply = match outcome {
                Ok(text) => ToolReply::text(text),
                Err(error) => ToolReply::error(format!("{}: {error}", kind.name())),
            };
            Json::encode(&reply)
        }
        .into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }
}

/// `text` cut to at most `max` bytes (on a character boundary), saying how much was left out.
pub(crate) fn capped(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n[... {} more bytes of messages left out]",
        &text[..cut],
        text.len() - cut
    )
}
