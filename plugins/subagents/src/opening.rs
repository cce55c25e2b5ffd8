//! What a child's first step carries besides its task: its descriptor, logged when that step
//! enters (after the turn claimed the task, before `step/start`, where the reference logs it),
//! and the delegation notice in its runtime context, so the model knows that what it may do
//! cannot grow and that a refusal is to be reported, not retried.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dsh_agents_seam::{AGENT_DISPOSED, AGENT_PRE_STEP};
use dsh_plugin_api::{Context, Json, LogLevel, PluginError, lock};
use dsh_protocol::{PreStepDecision, PromptContext, SnapshotSection, SubagentDescriptorEvent};
use dsh_sessions_seam::{NewEventRecord, open_live};
use dsh_system_prompt_seam::{RUNTIME_CONTEXT, SYSTEM_PROMPT_CONTEXTS};

use crate::child::CHILD_SCOPE;

/// The runtime-context section a child reads (the reference's section name).
const DELEGATION_SECTION: &str = "subagent:delegation";

/// What the delegation section says.
const DELEGATION_NOTICE: &str = "You are a subagent, started by another agent for one task. \
     What you may do was settled when you were started and cannot grow from inside this \
     session: anything that needs a person's approval is refused without asking. When the task \
     needs more than that, do not try the refused operation again; say in your answer what you \
     could not do, so the agent that started you can deal with it.";

/// The descriptors of children whose first step has not entered yet.
#[derive(Default)]
pub(crate) struct Openings {
    pending: Mutex<HashMap<String, SubagentDescriptorEvent>>,
}

impl Openings {
    /// Keeps `descriptor` until `child`'s first step enters.
    pub(crate) fn hold(&self, child: &str, descriptor: SubagentDescriptorEvent) {
        lock(&self.pending).insert(child.to_owned(), descriptor);
    }

    fn waiting(&self, child: &str) -> bool {
        lock(&self.pending).contains_key(child)
    }

    fn take(&self, child: &str) -> Option<SubagentDescriptorEvent> {
        lock(&self.pending).remove(child)
    }
}

/// Listens for the children's first steps, their runtime contexts and their going away.
pub(crate) fn listen(ctx: &Context, openings: &Arc<Openings>) -> Result<(), PluginError> {
    let (writer, held) = (ctx.clone(), openings.clone());
    ctx.on_waterfall(&AGENT_PRE_STEP, move |next| {
        let (ctx, openings) = (writer.clone(), held.clone());
        let proposal = next.payload().decode();
        async move {
            let answer = next.run().await?;
            // Most steps are not a child's first: the answer is read only for one that is.
            let Ok(proposal) = proposal else {
                return Ok(answer);
            };
            if openings.waiting(&proposal.session)
                && matches!(answer.decode(), Ok(PreStepDecision::Enter))
                && let Some(descriptor) = openings.take(&proposal.session)
            {
                log_descriptor(&ctx, &proposal.session, &descriptor);
            }
            Ok(answer)
        }
    })?;
    ctx.on_waterfall(&SYSTEM_PROMPT_CONTEXTS, move |next| {
        let request = next.payload().decode();
        async move {
            let downstream = next.run().await?;
            let delegated = request
                .as_ref()
                .is_ok_and(|request| request.scope.iter().any(|layer| layer == CHILD_SCOPE));
            if !delegated {
                return Ok(downstream);
            }
            let mut contexts: Vec<PromptContext> = downstream
                .decode()
                .map_err(|error| PluginError::plugin(error.to_string()))?;
            contexts.push(PromptContext {
                key: RUNTIME_CONTEXT.to_owned(),
                text: String::new(),
                sections: Some(vec![SnapshotSection {
                    name: DELEGATION_SECTION.to_owned(),
                    text: DELEGATION_NOTICE.to_owned(),
                }]),
                source: None,
            });
            Ok(Json::encode(&contexts))
        }
    })?;
    let forget = openings.clone();
    ctx.on_emit(&AGENT_DISPOSED, move |notice| {
        forget.take(notice.agent.as_str());
    })
}

/// Appends the descriptor to the child's log; a log that refuses it is reported, and the step
/// goes on (the descriptor names the child, nothing in its run depends on it).
fn log_descriptor(ctx: &Context, child: &str, descriptor: &SubagentDescriptorEvent) {
    let appended = open_live(ctx, child)
        .map_err(|error| error.to_string())
        .and_then(|session| {
            session
                .append(vec![NewEventRecord::of(descriptor)].into())
                .into_result()
                .map(|_| ())
                .map_err(|error| error.to_string())
        });
    if let Err(error) = appended {
        ctx.log(
            LogLevel::Warn,
            &format!("subagent {child}: its descriptor was not logged: {error}"),
        );
    }
}
