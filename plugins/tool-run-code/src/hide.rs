//! Code Mode's hiding: a restriction that lets a scope inherit nothing (`allow: []`), so the
//! sessions under it are offered `run_code` (which no restriction masks) and their own tools
//! only, and the chain a program's calls are resolved in, which leaves the hiding scopes out.
//!
//! A preset's scope is hidden once. The global case has no scope of its own to hide: every
//! session's chain starts with its working directory's scope (`workspace:<cwd>`), so that
//! scope is hidden as the first agent working there appears (`agent/created`), before its
//! first request.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use abi_stable::std_types::{RString, RVec};
use dsh_agents_seam::{AGENT_CREATED, AGENTS_SERVICE, AgentNotice, AgentsService, workspace_scope};
use dsh_plugin_api::LogLevel;
use dsh_plugin_api::prelude::*;
use dsh_protocol::Restriction;
use dsh_tools_seam::{RegistrationBox, ToolsService};

/// A scope whose tools could not be hidden (the registry refused the restriction).
#[derive(Debug, thiserror::Error)]
#[error("run_code: the tools of scope `{scope}` cannot be hidden: {error}")]
pub(crate) struct HideError {
    scope: String,
    error: dsh_plugin_api::SeamError,
}

/// The scopes hidden so far and the restrictions that hide them.
#[derive(Default)]
pub(crate) struct Hidden {
    scopes: Mutex<BTreeSet<String>>,
    held: Mutex<Vec<RegistrationBox>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Hidden {
    /// The chain a program's calls are resolved in: the caller's, less the hiding scopes.
    pub(crate) fn sub_scope(&self, chain: &RVec<RString>) -> Vec<String> {
        let hidden = lock(&self.scopes);
        chain
            .iter()
            .map(|key| key.to_string())
            .filter(|key| !hidden.contains(key))
            .collect()
    }

    /// Hides everything `scope` inherits (once).
    fn hide(&self, tools: &ToolsService, owner: &str, scope: &str) -> Result<(), HideError> {
        if !lock(&self.scopes).insert(scope.to_owned()) {
            return Ok(());
        }
        let restriction = Restriction {
            allow: Some(Vec::new()),
            deny: None,
        };
        let held = tools
            .restrict(
                RString::from(owner),
                RVec::from(vec![RString::from(scope)]),
                Json::encode(&restriction),
            )
            .into_result();
        match held {
            Ok(held) => {
                lock(&self.held).push(held);
                Ok(())
            }
            Err(error) => {
                lock(&self.scopes).remove(scope);
                Err(HideError {
                    scope: scope.to_owned(),
                    error,
                })
            }
        }
    }

    /// Lifts every restriction (the plugin unloads).
    pub(crate) fn release(&self) {
        let held = std::mem::take(&mut *lock(&self.held));
        drop(held);
        lock(&self.scopes).clear();
    }
}

/// Hides `scope`, or with the global scope `""` each working directory's scope as its first
/// agent appears (and those of the agents already there).
pub(crate) fn install(
    ctx: &Context,
    tools: &Arc<Service<ToolsService>>,
    hidden: &Arc<Hidden>,
    scope: &str,
) -> Result<(), PluginError> {
    let owner = ctx.row_id();
    if !scope.is_empty() {
        return hidden
            .hide(tools, &owner, scope)
            .map_err(|error| PluginError::plugin(error.to_string()));
    }
    let hide_cwd_of = {
        let (ctx, tools, hidden) = (ctx.clone(), tools.clone(), hidden.clone());
        move |agent: Option<&str>| {
            let agents = match ctx.get::<AgentsService>(AGENTS_SERVICE) {
                Ok(Some(agents)) => agents,
                // No agents registry: no sessions to hide anything from.
                Ok(None) => return,
                Err(error) => {
                    ctx.log(LogLevel::Warn, &format!("run_code: {error}"));
                    return;
                }
            };
            let listed = agents.list().decode().unwrap_or_default();
            for summary in listed
                .iter()
                .filter(|summary| agent.is_none_or(|id| id == summary.id))
            {
                if let Err(problem) = hidden.hide(&tools, &owner, &workspace_scope(&summary.cwd)) {
                    ctx.log(LogLevel::Error, &problem.to_string());
                }
            }
        }
    };
    hide_cwd_of(None);
    ctx.on_emit(&AGENT_CREATED, move |notice: &AgentNotice| {
        hide_cwd_of(Some(notice.agent.as_str()));
    })
}
