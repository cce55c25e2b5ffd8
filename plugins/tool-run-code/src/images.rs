//! Images a program's calls brought (a `read_image`): the program gets only the values, and
//! the model would never see them, so once the `run_code` result is logged each image-bearing
//! sub-call's content is handed to the session as a next-step message (from `tools-code-mode`,
//! as the reference names it), which the loop splices in before the next request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use dsh_agents_seam::{AGENTS_SERVICE, AgentsExt, AgentsService};
use dsh_plugin_api::LogLevel;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{ContentBlock, Message, MessageSource, PluginSource};
use dsh_tools_seam::{ResultView, TOOLS_RESULT};

use crate::NAME;

/// The source the messages carry.
const SOURCE: &str = "tools-code-mode";

/// Image-bearing contents by (session, `run_code` call), waiting for that call's result.
#[derive(Default)]
pub(crate) struct Pending {
    waiting: Mutex<HashMap<(String, String), Vec<ContentBlock>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Pending {
    /// Keeps the content of a sub-call of `call` in `session` when it holds an image.
    pub(crate) fn keep(&self, session: &str, call: &str, content: &[ContentBlock]) {
        if session.is_empty()
            || !content
                .iter()
                .any(|block| matches!(block, ContentBlock::Image { .. }))
        {
            return;
        }
        lock(&self.waiting)
            .entry((session.to_owned(), call.to_owned()))
            .or_default()
            .extend(content.iter().cloned());
    }

    fn take(&self, session: &str, call: &str) -> Option<Vec<ContentBlock>> {
        lock(&self.waiting).remove(&(session.to_owned(), call.to_owned()))
    }
}

/// Hands a `run_code` call's images to its session once its result is logged.
pub(crate) fn install(ctx: &Context, pending: &Arc<Pending>) -> Result<(), PluginError> {
    let (host, pending) = (ctx.clone(), pending.clone());
    ctx.on_emit(&TOOLS_RESULT, move |view: &ResultView| {
        let call = &view.call;
        if call.name.as_str() != NAME {
            return;
        }
        let Some(content) = pending.take(call.session.as_str(), call.call_id.as_str()) else {
            return;
        };
        let source = MessageSource::Plugin(PluginSource {
            plugin: Some(SOURCE.to_owned()),
            ..PluginSource::default()
        });
        let message = Message::user("", content, source);
        let sent = match host.get::<AgentsService>(AGENTS_SERVICE) {
            Ok(Some(agents)) => agents
                .inject(call.session.as_str(), &message)
                .map(|_| ())
                .map_err(|error| error.to_string()),
            Ok(None) => Err("no `agents` service".to_owned()),
            Err(error) => Err(error.to_string()),
        };
        if let Err(problem) = sent {
            host.log(
                LogLevel::Warn,
                &format!(
                    "run_code: the images of `{}` were not shown: {problem}",
                    call.call_id
                ),
            );
        }
    })
}
