//! When a headless run is done: the agent idle and nothing it delegated still running (its
//! child agents, and the background jobs whose results it awaits), what settles waking it for
//! another turn; and how a signal stops what was delegated.

use std::sync::Arc;

use dsh_agents_seam::{AGENTS_SERVICE, AgentsError, AgentsErrorKind, AgentsService};
use dsh_jobs_seam::{JOBS_SERVICE, JobsService};
use dsh_plugin_api::cancel::{CancelFlag, Either, first_of};
use dsh_plugin_api::{Json, Service};
use dsh_protocol::{AbortCause, ChildStatus, TurnEndReason, TurnOutcome};
use dsh_subagents_seam::{SUBAGENTS_SERVICE, SubagentsService};

use crate::run::{CHILDREN_STOP, Runner};

impl Runner {
    /// The outcome of the agent's last turn once it is idle and nothing it delegated still
    /// runs (no child agent, no background job whose result it awaits: a product subagent
    /// run in the background; a command left running in the background does not hold the
    /// run): what settles wakes the agent for another turn, and the run ends only after that
    /// turn. A signal cancels the agent's turn (its children and those jobs follow).
    pub(crate) async fn until_settled(
        &self,
        id: &str,
        stopped: &Arc<CancelFlag>,
    ) -> Result<Option<TurnOutcome>, AgentsError> {
        loop {
            let Ok(Some(agents)) = self.ctx.get::<AgentsService>(AGENTS_SERVICE) else {
                return Err(AgentsError::new(
                    AgentsErrorKind::Gone,
                    "the `agents` registry went away",
                ));
            };
            // The registry is not held while waiting: if its row unloads, the wait ends.
            let idle = agents.when_idle(id.into());
            drop(agents);
            let mut idle = std::pin::pin!(idle);
            let idle = match first_of(idle.as_mut(), stopped.wait()).await {
                Either::Left(idle) => idle,
                Either::Right(()) => {
                    if let Ok(Some(agents)) = self.ctx.get::<AgentsService>(AGENTS_SERVICE) {
                        let cause = Json::encode(&self.cause());
                        let _ = agents.cancel(id.into(), cause, false);
                    }
                    idle.await
                }
            };
            let outcome = idle.into_result()?.decode().ok().flatten();
            let tree = self
                .ctx
                .get::<SubagentsService>(SUBAGENTS_SERVICE)
                .ok()
                .flatten();
            let jobs = self.ctx.get::<JobsService>(JOBS_SERVICE).ok().flatten();
            let descendants = tree
                .as_ref()
                .map(|tree| tree.children(id.into(), true).decode().unwrap_or_default())
                .unwrap_or_default();
            let children = descendants
                .iter()
                .any(|child| child.status == ChildStatus::Running);
            // The agent and every child below it: results may still come to any of them.
            let sessions: Vec<&str> = std::iter::once(id)
                .chain(descendants.iter().map(|child| child.id.as_str()))
                .collect();
            let waiting_on = jobs.as_ref().and_then(|jobs| {
                sessions
                    .iter()
                    .find(|session| jobs.pending_results((**session).into()) > 0)
                    .map(|session| (*session).to_owned())
            });
            if !children && waiting_on.is_none() {
                return Ok(outcome);
            }
            if stopped.is_fired() {
                return Ok(Some(self.stop_delegated(id, tree, jobs, outcome).await));
            }
            // Nothing runs but notices the agents' wakes could not deliver: the run stands in
            // for the person and opens the turns they enter.
            if !children && let Some(jobs) = &jobs {
                let released: u32 = sessions
                    .iter()
                    .map(|session| jobs.release_deferred((*session).into()))
                    .sum();
                if released > 0 {
                    continue;
                }
            }
            // Settled (its parent may have been woken) or stopped: look again either way. The
            // services are not held while waiting: if a row unloads, the wait ends.
            let children_settled = tree
                .as_ref()
                .filter(|_| children)
                .map(|tree| tree.settled(id.into()));
            let results_settled = jobs
                .as_ref()
                .zip(waiting_on)
                .map(|(jobs, session)| jobs.results_settled(session.as_str().into()));
            drop((tree, jobs));
            let children_settled = async {
                match children_settled {
                    Some(settled) => settled.await,
                    None => std::future::pending().await,
                }
            };
            let results_settled = async {
                match results_settled {
                    Some(settled) => settled.await,
                    None => std::future::pending().await,
                }
            };
            let settled = first_of(children_settled, results_settled);
            let _ = first_of(settled, stopped.wait()).await;
        }
    }

    /// A signal came while the agent was idle but what it delegated still ran: the children
    /// are cancelled (they close their turns `aborted`), given a moment to settle, and the run
    /// ends `aborted` with the signal's cause.
    async fn stop_delegated(
        &self,
        id: &str,
        tree: Option<Service<SubagentsService>>,
        jobs: Option<Service<JobsService>>,
        last: Option<TurnOutcome>,
    ) -> TurnOutcome {
        let cause = self.cause();
        if let (Some(tree), Ok(Some(agents))) =
            (&tree, self.ctx.get::<AgentsService>(AGENTS_SERVICE))
        {
            for child in tree.children(id.into(), true).decode().unwrap_or_default() {
                if child.status == ChildStatus::Running {
                    let _ = agents.cancel(
                        child.id.as_str().into(),
                        Json::encode(&AbortCause::Parent),
                        false,
                    );
                }
            }
        }
        if let Some(jobs) = &jobs {
            jobs.cancel_session(id.into(), "the run was stopped".into());
        }
        let children = async {
            if let Some(tree) = &tree {
                tree.settled(id.into()).await;
            }
        };
        let results = async {
            if let Some(jobs) = &jobs {
                jobs.results_settled(id.into()).await;
            }
        };
        let both = async {
            children.await;
            results.await;
        };
        let _ = first_of(both, self.ctx.sleep(CHILDREN_STOP)).await;
        let last = last.unwrap_or_else(|| TurnOutcome::unopened(id, TurnEndReason::Completed));
        TurnOutcome {
            reason: TurnEndReason::Aborted { reason: cause },
            ..last
        }
    }
}
