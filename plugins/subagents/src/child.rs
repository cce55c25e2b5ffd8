//! Starting a child and seeing it through: the child's agent (its own session, linked to its
//! parent, one level deeper, the parent's route and working directory, the parent's scope
//! plus the children's own layer), what the child's log says about it (`approval/policy` fixed
//! by delegation; its `subagent/descriptor` waits for its first step, see [`crate::opening`]),
//! its task as its first turn, and then either the
//! parent's tool call waiting for the result (one-shot) or a watcher that tells the parent
//! when the child's run settles (continuable).

use dsh_protocol::kinds;
use std::sync::Arc;

use abi_stable::std_types::RString;
use dsh_agents_seam::{AGENTS_SERVICE, AgentsExt, AgentsService};
use dsh_approval_seam::{APPROVAL_SERVICE, ApprovalService};
use dsh_plugin_api::cancel::{CancelBox, Either, first_of};
use dsh_plugin_api::{Context, Json, LogLevel, Service};
use dsh_protocol::{
    AbortCause, AgentOptions, AgentSeed, ApprovalPolicy, ApprovalPolicyEvent, ChildStatus,
    ContentBlock, Message, MessageSource, PermissionPresetEvent, SandboxModeEvent,
    SubagentDescriptorEvent, SubagentMode, SubagentNotice, ToolReply, TurnEndReason, TurnOutcome,
};
use dsh_sessions_seam::{LatestOf, NewEventRecord, open_live};
use dsh_subagents_seam::{SUBAGENT_END, SUBAGENT_START};

use crate::error::DelegationError;
use crate::opening::Openings;
use crate::text;
use crate::tree::{Node, Tree};

/// The tool layer only children see (`report` lives there).
pub(crate) const CHILD_SCOPE: &str = "subagent";

/// How a child starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Provider {
    /// A fresh conversation holding only the task.
    Spawn,
    /// Seeded with the parent's completed turns.
    Fork,
}

impl Provider {
    fn name(self) -> &'static str {
        match self {
            Provider::Spawn => "spawn",
            Provider::Fork => "fork",
        }
    }
}

/// A delegation a tool call asks for.
pub(crate) struct Start {
    pub(crate) parent: String,
    pub(crate) scope: Vec<String>,
    pub(crate) cwd: String,
    pub(crate) mode: SubagentMode,
    pub(crate) provider: Provider,
    pub(crate) label: String,
    pub(crate) prompt: String,
}

/// What starts and follows children.
pub(crate) struct Delegation {
    pub(crate) ctx: Context,
    pub(crate) tree: Arc<Tree>,
    pub(crate) max_depth: u64,
    /// `subagent`'s mode when a call does not say.
    pub(crate) background_by_default: bool,
    /// Each parent's latest preset and sandbox mode, read from its log incrementally.
    pub(crate) presets: LatestOf<PermissionPresetEvent>,
    pub(crate) modes: LatestOf<SandboxModeEvent>,
    /// The descriptors waiting for their child's first step.
    pub(crate) openings: Arc<Openings>,
}

pub(crate) fn agents(ctx: &Context) -> Result<Service<AgentsService>, DelegationError> {
    match ctx.get::<AgentsService>(AGENTS_SERVICE) {
        Ok(Some(agents)) => Ok(agents),
        _ => Err(DelegationError::NoAgents),
    }
}

impl Delegation {
    /// Starts the child; answers its id once its task is queued.
    pub(crate) fn start(&self, start: Start) -> Result<AgentStarting, DelegationError> {
        let depth = self.tree.depth(&start.parent) + 1;
        if depth > self.max_depth {
            return Err(DelegationError::TooDeep {
                depth,
                max: self.max_depth,
            });
        }
        let agents = agents(&self.ctx)?;
        let route = agents
            .list()
            .decode()
            .unwrap_or_default()
            .into_iter()
            .find(|agent| agent.id == start.parent)
            .ok_or_else(|| DelegationError::NotAnAgent(start.parent.clone()))?;
        let seed = match start.provider {
            Provider::Spawn => None,
            Provider::Fork => Some(AgentSeed {
                session: start.parent.clone(),
                prefix_len: completed_prefix(&self.ctx, &start.parent)?,
            }),
        };
        let mut scope = start.scope.clone();
        scope.push(CHILD_SCOPE.to_owned());
        let options = AgentOptions {
            cwd: start.cwd.clone(),
            provider: route.provider.clone(),
            model: route.model.clone(),
            scope,
            parent: Some(start.parent.clone()),
            delegation_depth: depth,
            seed,
            ..AgentOptions::default()
        };
        let continuable = start.mode == SubagentMode::Continuable;
        let descriptor = SubagentDescriptorEvent {
            version: 2,
            mode: start.mode,
            provider: start.provider.name().to_owned(),
            label: Some(start.label.clone()),
            agent_provider: continuable.then(|| route.provider.clone()),
            agent_model: continuable.then(|| route.model.clone()),
        };
        Ok(AgentStarting {
            agents,
            options,
            descriptor,
            start,
            depth,
        })
    }

    /// Creates the child's agent, logs what it is, queues its task and announces it.
    pub(crate) async fn launch(&self, starting: AgentStarting) -> Result<String, DelegationError> {
        let AgentStarting {
            agents,
            options,
            descriptor,
            start,
            depth,
        } = starting;
        let child = agents
            .create(Json::encode(&options))
            .await
            .into_result()
            .map(RString::into_string)
            .map_err(DelegationError::Create)?;
        match self.prepare(&child, &start, &descriptor) {
            Ok(()) => {}
            Err(error) => {
                // Nothing of it runs: the agent just made goes away with its session.
                let _ = agents.dispose(RString::from(child.as_str())).await;
                return Err(error);
            }
        }
        self.tree.insert(Node {
            id: child.clone(),
            parent: start.parent.clone(),
            depth,
            mode: start.mode,
            provider: descriptor.provider.clone(),
            label: start.label.clone(),
            status: ChildStatus::Running,
            generation: 0,
            interrupted: false,
        });
        self.announce(&SUBAGENT_START, &child, None);
        let task = Message::user(
            "",
            vec![ContentBlock::text(start.prompt)],
            MessageSource::user(),
        );
        if let Err(error) = agents.followup(&child, &task) {
            self.tree.remove_subtree(&child);
            let _ = agents.dispose(RString::from(child.as_str())).await;
            return Err(DelegationError::Task(error));
        }
        Ok(child)
    }

    /// Logs in the child's session what it may do: the parent's permission preset and sandbox
    /// mode (a child is never wider than the agent that started it) and, where approvals are
    /// asked at all (an `approval` service runs), its approvals refused (its scope was fixed when
    /// it started: nobody is there to ask). Its descriptor is held for its first step.
    fn prepare(
        &self,
        child: &str,
        start: &Start,
        descriptor: &SubagentDescriptorEvent,
    ) -> Result<(), DelegationError> {
        let session = open_live(&self.ctx, child).map_err(DelegationError::Session)?;
        let mut batch = self.inherited_policy(&start.parent);
        if matches!(
            self.ctx.get::<ApprovalService>(APPROVAL_SERVICE),
            Ok(Some(_))
        ) {
            batch.push(NewEventRecord::of(&ApprovalPolicyEvent {
                policy: ApprovalPolicy::Never,
                source: Some("delegation".to_owned()),
            }));
        }
        if !batch.is_empty() {
            session
                .append(batch.into())
                .into_result()
                .map_err(DelegationError::Policy)?;
        }
        self.openings.hold(child, descriptor.clone());
        Ok(())
    }

    /// The parent's latest permission preset and sandbox mode, as events for its child's log
    /// (none when the parent runs on the row's defaults, which the child shares).
    fn inherited_policy(&self, parent: &str) -> Vec<NewEventRecord> {
        let Ok(session) = open_live(&self.ctx, parent) else {
            return Vec::new();
        };
        let preset = self
            .presets
            .of(&session)
            .map(|preset| NewEventRecord::of(&preset));
        let mode = self
            .modes
            .of(&session)
            .map(|mode| NewEventRecord::of(&mode));
        preset.into_iter().chain(mode).collect()
    }

    /// Waits for a one-shot child's run (cancelling it when the parent's call is cancelled),
    /// then lets it go; answers the parent's tool result.
    pub(crate) async fn result_of(&self, child: &str, cancel: &CancelBox) -> ToolReply {
        let outcome = self.until_idle(child, Some(cancel)).await;
        self.announce(&SUBAGENT_END, child, outcome.as_ref());
        for gone in std::iter::once(child.to_owned()).chain(self.tree.remove_subtree(child)) {
            if let Ok(agents) = agents(&self.ctx) {
                let _ = agents.dispose(RString::from(gone)).await;
            }
        }
        text::one_shot_reply(outcome.as_ref())
    }

    /// Follows a continuable child until its run settles, then tells its parent. Work sent to
    /// the child while it went idle keeps the watcher on it.
    pub(crate) fn watch(self: &Arc<Self>, child: String) {
        let this = self.clone();
        let watched = child.clone();
        let spawned = self.ctx.spawn(async move {
            loop {
                let Some(generation) = this.tree.generation(&watched) else {
                    return;
                };
                let outcome = this.until_idle(&watched, None).await;
                if this.tree.settle_if(&watched, generation) {
                    this.settled(&watched, outcome.as_ref());
                    return;
                }
            }
        });
        if let Err(error) = spawned {
            // Unwatched, the child would count as running for ever: say so and let it go.
            self.ctx.log(
                LogLevel::Warn,
                &format!("the watcher of background subagent `{child}` did not start: {error}"),
            );
            if let Some(generation) = self.tree.generation(&child)
                && self.tree.settle_if(&child, generation)
            {
                self.settled(&child, None);
            }
        }
    }

    /// A settled child's notice to its parent and its `subagent/end`.
    fn settled(&self, child: &str, outcome: Option<&TurnOutcome>) {
        if let Some(node) = self.tree.get(child) {
            self.notify_parent(&node, outcome);
        }
        self.tree.notice_delivered();
        self.announce(&SUBAGENT_END, child, outcome);
    }

    /// The child's last outcome once its driver is idle and stays idle (a message sent while
    /// it finished keeps it going).
    async fn until_idle(&self, child: &str, cancel: Option<&CancelBox>) -> Option<TurnOutcome> {
        let mut cancelled = false;
        loop {
            let Ok(registry) = agents(&self.ctx) else {
                return None;
            };
            let idle = registry.when_idle(RString::from(child));
            // The registry is not held while waiting: if its row unloads, the wait ends.
            drop(registry);
            let idle = match cancel.filter(|_| !cancelled) {
                Some(cancel) => match first_of(idle, cancel.cancelled()).await {
                    Either::Left(idle) => idle,
                    Either::Right(()) => {
                        cancelled = true;
                        if let Ok(agents) = agents(&self.ctx) {
                            let _ = agents.cancel(
                                RString::from(child),
                                Json::encode(&AbortCause::Parent),
                                false,
                            );
                        }
                        continue;
                    }
                },
                None => idle.await,
            };
            let outcome = idle.into_result().ok()?.decode().ok().flatten();
            let running = agents(&self.ctx).is_ok_and(|agents| agents.is_running(child));
            if !running {
                return outcome;
            }
        }
    }

    /// The settled notice in the parent's inbox, as its next turn: after the turn it runs, or
    /// at once when it is idle.
    fn notify_parent(&self, node: &Node, outcome: Option<&TurnOutcome>) {
        let Ok(agents) = agents(&self.ctx) else {
            return;
        };
        let (summary, content) = text::settled_notice(&node.id, outcome);
        let notice = Message::user(
            "",
            content,
            MessageSource::subagent_settled(&summary, &node.id),
        );
        // A child stopped because its parent's own turn was cancelled (or its run stopped)
        // must not wake the parent again: its notice waits for the parent's next turn. One
        // the parent interrupted itself is news the parent asked for.
        let stopped_by_parent = !node.interrupted
            && matches!(
                outcome.map(|outcome| &outcome.reason),
                Some(TurnEndReason::Aborted {
                    reason: AbortCause::Parent
                })
            );
        // Never steered into a running turn: whether the notice joined the parent's turn or
        // opened the next one would then depend on which step the parent was in when the
        // child settled, and so would the parent's transcript. As its own turn it is read the
        // same way however the two ran (the way every recorded case reads it). What the child
        // reported before settling is already staged in next-step, and that turn claims both.
        let sent = match stopped_by_parent {
            true => agents.inject(&node.parent, &notice),
            false => agents.followup(&node.parent, &notice),
        };
        if let Err(error) = sent {
            self.ctx.log(
                LogLevel::Warn,
                &format!(
                    "the settled notice of subagent `{}` did not reach `{}`: {error}",
                    node.id, node.parent
                ),
            );
        }
    }

    fn announce(
        &self,
        event: &dsh_plugin_api::EmitEvent<Json<SubagentNotice>>,
        child: &str,
        outcome: Option<&TurnOutcome>,
    ) {
        let Some(node) = self.tree.get(child) else {
            return;
        };
        let notice = SubagentNotice {
            parent: node.parent,
            child: node.id,
            mode: node.mode,
            label: node.label,
            output: outcome.map(|outcome| outcome.output.clone()),
            end: outcome.map(|outcome| outcome.reason.kind().to_owned()),
        };
        let _ = self.ctx.emit(event, &Json::encode(&notice));
    }
}

/// A child whose options are settled, before its agent exists.
pub(crate) struct AgentStarting {
    agents: Service<AgentsService>,
    options: AgentOptions,
    descriptor: SubagentDescriptorEvent,
    start: Start,
    depth: u64,
}

/// How many events of `parent` a fork copies: everything up to its last closed turn (the turn
/// in flight, whose call is asking, is not the child's).
fn completed_prefix(ctx: &Context, parent: &str) -> Result<u64, DelegationError> {
    let session = open_live(ctx, parent).map_err(DelegationError::Session)?;
    let events = session.events(0, session.event_count());
    let end = events
        .iter()
        .rev()
        .find(|record| record.kind.as_str() == kinds::TURN_END)
        .map_or(0, |record| record.seq + 1);
    Ok(end)
}
