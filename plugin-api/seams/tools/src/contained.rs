//! Tools and guards whose panics stay in their plugin. A `#[sabi_trait]` method that panics
//! ends the host process (the unwind cannot cross the FFI edge), and the registry cannot catch
//! what happens on the other side of the vtable; so a plugin boxes its tool with [`tool_box`]
//! and its guard with [`guard_box`], which run every method inside `catch_unwind` on the
//! plugin's side. A panic then becomes what is safe for that method: a failed call (the
//! panic's message in its result), a guard that denies (fail closed), an exclusive call, the
//! content kept, no rendering; a declaration that panics is one the registry cannot read, so
//! the registration is refused. Each panic is logged with its message.

use std::panic::{AssertUnwindSafe, catch_unwind};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::{Json, catching, panic_message};
use dsh_protocol::{ContentBlock, OutcomeSummary, ToolDecl, ToolReply};

use crate::{CallView, Guard, Guard_TO, GuardBox, Tool, Tool_TO, ToolBox};

/// `tool`, boxed for the registry with its panics contained.
pub fn tool_box<T: Tool + 'static>(tool: T) -> ToolBox {
    ToolBox(Tool_TO::from_value(Contained(tool), TD_Opaque))
}

/// `guard`, boxed for the registry with its panics contained (a panic denies the call).
pub fn guard_box<G: Guard + 'static>(guard: G) -> GuardBox {
    GuardBox(Guard_TO::from_value(Contained(guard), TD_Opaque))
}

struct Contained<T>(T);

/// Runs `body`; on a panic logs it as `what` and answers `fallback` with the message.
fn or_else<R>(what: &str, body: impl FnOnce() -> R, fallback: impl FnOnce(String) -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(answer) => answer,
        Err(payload) => {
            let message = panic_message(payload.as_ref());
            dsh_plugin_api::tracing::error!("{what} panicked: {message}");
            fallback(message)
        }
    }
}

impl<T: Tool + 'static> Tool for Contained<T> {
    fn spec(&self) -> Json<ToolDecl> {
        or_else(
            "a tool's declaration",
            || self.0.spec(),
            |message| Json::from_text(format!("the declaration panicked: {message}")),
        )
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let name = call.name.to_string();
        let started = or_else("a tool's execute", || Ok(self.0.execute(call, cancel)), Err);
        async move {
            let failed = |message: String| {
                Json::encode(&ToolReply::error(format!(
                    "the tool `{name}` panicked: {message}"
                )))
            };
            match started {
                Err(message) => failed(message),
                Ok(running) => match catching(running).await {
                    Ok(reply) => reply,
                    Err(error) => {
                        dsh_plugin_api::tracing::error!("the tool `{name}` {error}");
                        let message = error.message.to_string();
                        failed(message.trim_start_matches("panicked: ").to_owned())
                    }
                },
            }
        }
        .into_ffi()
    }

    fn parallel_safe(&self, arguments: RString) -> ROption<bool> {
        // A tool that cannot say runs alone.
        or_else(
            "a tool's parallel_safe",
            || self.0.parallel_safe(arguments),
            |_| ROption::RSome(false),
        )
    }

    fn finalize_content(&self, outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        or_else(
            "a tool's finalize_content",
            || self.0.finalize_content(outcome),
            |_| ROption::RNone,
        )
    }

    fn render(&self, value: Json<serde_json::Value>) -> ROption<Json<Vec<ContentBlock>>> {
        or_else(
            "a tool's render",
            || self.0.render(value),
            |_| ROption::RNone,
        )
    }
}

impl<G: Guard + 'static> Guard for Contained<G> {
    fn check(&self, call: &CallView) -> ROption<RString> {
        or_else(
            "a guard",
            || self.0.check(call),
            |message| {
                ROption::RSome(RString::from(format!(
                    "denied: the guard that checks `{}` panicked ({message})",
                    call.name
                )))
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abi_stable::std_types::RVec;

    struct Panicking;

    impl Guard for Panicking {
        fn check(&self, _call: &CallView) -> ROption<RString> {
            panic!("no rules file")
        }
    }

    #[test]
    fn a_panicking_guard_denies_naming_the_panic() {
        let guard = guard_box(Panicking);
        let call = CallView {
            session: RString::new(),
            scope: RVec::new(),
            turn: 1,
            step: 1,
            call_id: "c".into(),
            name: "bash".into(),
            arguments: "{}".into(),
            cwd: "/".into(),
        };
        let denied = guard.check(&call).into_option().unwrap_or_default();
        assert!(
            denied.contains("`bash` panicked (no rules file)"),
            "{denied}"
        );
    }
}
