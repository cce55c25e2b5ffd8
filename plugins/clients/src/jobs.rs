//! The background jobs of a session in the page: pushed as `session/projection` key `jobs`
//! (the list, oldest first) to the pages that follow it whenever they change and when a page
//! subscribes, and stopped by a person through `session.killJob`, as `job_kill` would.

use std::sync::Arc;

use abi_stable::std_types::RString;
use dsh_client_protocol::{JobRef, RpcErrorCode, ServerFrame};
use dsh_jobs_seam::{JOBS_CHANGED, JOBS_SERVICE, JobsService};
use dsh_plugin_api::{Context, PluginError, SeamErrorKind};

use crate::api::{Api, Failure};
use crate::live::Hub;

/// The `jobs` projection of `session`, when the registry is there and the session has jobs.
pub(crate) fn frame(ctx: &Context, session: &str) -> Option<ServerFrame> {
    let jobs = ctx.get::<JobsService>(JOBS_SERVICE).ok().flatten()?;
    let listed = jobs.list(RString::from(session)).decode().ok()?;
    if listed.is_empty() {
        return None;
    }
    Some(projection(session, &listed))
}

fn projection(session: &str, listed: &[dsh_protocol::JobSummary]) -> ServerFrame {
    ServerFrame::Projection {
        session_id: session.to_owned(),
        key: "jobs".to_owned(),
        value: serde_json::to_value(listed).unwrap_or_default(),
    }
}

/// Pushes a followed session's jobs each time they change.
pub(crate) fn follow(ctx: &Context, hub: &Arc<Hub>) -> Result<(), PluginError> {
    let (hub, services) = (hub.clone(), ctx.clone());
    ctx.on_emit(&JOBS_CHANGED, move |session: &RString| {
        if !hub.is_followed(session.as_str()) {
            return;
        }
        let Ok(Some(jobs)) = services.get::<JobsService>(JOBS_SERVICE) else {
            return;
        };
        if let Ok(listed) = jobs.list(session.clone()).decode() {
            hub.to_followers(session.as_str(), &projection(session.as_str(), &listed));
        }
    })
}

impl Api {
    /// `session.killJob`: stops one background job of the session; answers what `job_kill`
    /// would have said.
    pub(crate) fn kill_job(&self, request: JobRef) -> Result<serde_json::Value, Failure> {
        let Ok(Some(jobs)) = self.ctx.get::<JobsService>(JOBS_SERVICE) else {
            return Err(Failure::internal("no `jobs` registry is running"));
        };
        let answer = jobs
            .kill(
                RString::from(request.session_id.as_str()),
                RString::from(request.job_id.as_str()),
                RString::from("stopped from the web page"),
            )
            .into_result()
            .map_err(|error| {
                // A job that is not (or no longer) the session's is the caller's mistake.
                let code = match error.kind {
                    SeamErrorKind::Invalid | SeamErrorKind::NotFound => RpcErrorCode::BadRequest,
                    _ => RpcErrorCode::Internal,
                };
                Failure(code, error.message.into_string())
            })?;
        Ok(serde_json::json!({"message": answer.as_str()}))
    }
}
