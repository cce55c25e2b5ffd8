//! A session's plan mode, as its log says: the latest `plan/mode` event (`{active}`; none
//! means off), so resume, fork and every reader agree without a copy held anywhere else. A
//! change is an append: from that event on, the prompt carries the policy and the gate refuses
//! what would change the workspace.

use abi_stable::std_types::RVec;
use dsh_plugin_api::Context;
use dsh_protocol::PlanModeEvent;
use dsh_sessions_seam::{LatestOf, NewEventRecord, SessionError, open_live};

/// Reads sessions' plan mode incrementally (each read costs what was logged since the last).
#[derive(Default)]
pub(crate) struct Modes {
    latest: LatestOf<PlanModeEvent>,
}

impl Modes {
    /// Whether `session` is planning; a session that is not live here is not.
    pub(crate) fn active(&self, ctx: &Context, session: &str) -> bool {
        if session.is_empty() {
            return false;
        }
        open_live(ctx, session)
            .ok()
            .and_then(|live| self.latest.of(&live))
            .is_some_and(|event| event.active)
    }
}

/// Logs `plan/mode {active}` in `session`.
pub(crate) fn set(ctx: &Context, session: &str, active: bool) -> Result<(), SessionError> {
    let live = open_live(ctx, session)?;
    let record = NewEventRecord::of(&PlanModeEvent { active });
    live.append(RVec::from(vec![record])).into_result()?;
    Ok(())
}

/// Whether the model was ever asked anything in `session` (a mode change is worth telling it
/// only then: a fresh session's first request already carries the mode).
pub(crate) fn model_was_asked(ctx: &Context, session: &str) -> bool {
    let Ok(live) = open_live(ctx, session) else {
        return false;
    };
    live.events(0, live.event_count())
        .iter()
        .any(|record| record.kind.as_str() == dsh_protocol::kinds::REQUEST_HEADER)
}
