//! The refusal: in plan mode, a call that could change the workspace is refused on
//! `tools/pre-execute` before anything else judges it (the listener goes first, so a rule that
//! would put the call to a person never asks about a write the session may not make). Tools
//! that only read go on; `bash` goes on when its command only reads (see `shell`); everything
//! else, including tools this plugin does not know, is refused with a result that tells the
//! model it is planning and how to go on.

use std::sync::Arc;

use dsh_plugin_api::prelude::*;
use dsh_protocol::PreDecision;
use dsh_tools_seam::TOOLS_PRE_EXECUTE;

use crate::shell;
use crate::state::Modes;

/// Tools that never change the workspace or start anything that could.
pub(crate) const READ_ONLY_TOOLS: &[&str] = &[
    crate::review::NAME,
    "ask_user_question",
    "glob",
    "grep",
    "job_list",
    "job_output",
    "list_agents",
    "read",
    "read_image",
    "skill",
    "web_fetch",
    "web_search",
];

/// The part of `bash`'s arguments the gate judges.
#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct BashArgs {
    command: String,
}

/// What the gate lets through besides the built-in list.
#[derive(Default)]
pub(crate) struct Allowed {
    pub(crate) tools: Vec<String>,
    pub(crate) commands: Vec<String>,
}

/// Why `tool` with `arguments` may not run in plan mode; `None` when it may.
pub(crate) fn refusal(allowed: &Allowed, tool: &str, arguments: &str) -> Option<String> {
    if READ_ONLY_TOOLS.contains(&tool) || allowed.tools.iter().any(|name| name == tool) {
        return None;
    }
    let tail = "This session is in plan mode: explore with read-only tools (read, glob, grep, \
                read-only shell commands), then present the complete plan with exit_plan_mode; \
                nothing is changed until the person approves it.";
    if tool == "bash" {
        let Ok(BashArgs { command }) = serde_json::from_str::<BashArgs>(arguments) else {
            return Some(format!("plan mode: the command does not read. {tail}"));
        };
        return match shell::check(&command, &allowed.commands) {
            Ok(()) => None,
            Err(why) => Some(format!(
                "plan mode: this command is not run because it may change something ({}). {tail}",
                why.0
            )),
        };
    }
    Some(format!(
        "plan mode: `{tool}` is not run because it can change the workspace or start work. {tail}"
    ))
}

/// Listens on `tools/pre-execute`, first in the chain.
pub(crate) fn listen(
    ctx: &Context,
    modes: Arc<Modes>,
    allowed: Arc<Allowed>,
) -> Result<(), PluginError> {
    let host = ctx.clone();
    ctx.prepend().on_waterfall(&TOOLS_PRE_EXECUTE, move |next| {
        let (host, modes, allowed) = (host.clone(), modes.clone(), allowed.clone());
        async move {
            let call = next.payload();
            if !modes.active(&host, call.session.as_str()) {
                return next.run().await;
            }
            match refusal(&allowed, call.name.as_str(), call.arguments.as_str()) {
                None => next.run().await,
                Some(reason) => Ok(Json::encode(&PreDecision::Deny { reason })),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pass_and_writes_are_refused_with_the_way_on() {
        let allowed = Allowed::default();
        assert_eq!(refusal(&allowed, "read", r#"{"file_path":"a"}"#), None);
        assert_eq!(refusal(&allowed, "exit_plan_mode", "{}"), None);
        assert_eq!(refusal(&allowed, "bash", r#"{"command":"ls -la"}"#), None);
        let write = refusal(&allowed, "write", r#"{"file_path":"a","content":"x"}"#).unwrap();
        assert!(
            write.starts_with("plan mode: `write` is not run"),
            "{write}"
        );
        assert!(write.contains("exit_plan_mode"), "{write}");
        let bash = refusal(&allowed, "bash", r#"{"command":"echo x > a"}"#).unwrap();
        assert!(bash.contains("an output redirect"), "{bash}");
        assert!(refusal(&allowed, "mcp__files__write", "{}").is_some());
    }

    #[test]
    fn the_row_may_add_tools_and_programs() {
        let allowed = Allowed {
            tools: vec!["mcp__docs__search".to_owned()],
            commands: vec!["make".to_owned()],
        };
        assert_eq!(refusal(&allowed, "mcp__docs__search", "{}"), None);
        assert_eq!(refusal(&allowed, "bash", r#"{"command":"make -n"}"#), None);
    }
}
