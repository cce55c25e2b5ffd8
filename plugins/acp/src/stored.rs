//! Stored sessions for an editor: `session/list` (the clients service's listing, the live
//! sessions' titles as they stand included, conversations only, newest first, in pages),
//! `session/load` (the session opened as an agent again and its conversation replayed as
//! updates before the answer) and `session/resume` (opened, nothing replayed).

use std::sync::Arc;

use dsh_client_protocol::{
    ClientRequest, Created, NoParams, OpenRequest, RpcErrorCode, SessionList,
};
use dsh_protocol::check_session_id;
use dsh_sessions_seam::open_live;
use serde_json::value::RawValue;

use crate::schema::{
    ListSessionsRequest, ListSessionsResponse, OpenSessionRequest, SessionInfo, SessionState,
};
use crate::server::{Note, Server};
use crate::wire::{Id, RpcError, params};

/// Sessions per page of `session/list`.
const PAGE: usize = 50;

/// `session/load` (`replay`) or `session/resume`.
pub(crate) fn open(server: &Arc<Server>, id: Id, raw: Option<&RawValue>, replay: bool) {
    let request: OpenSessionRequest = match params(raw) {
        Ok(request) => request,
        Err(error) => return server.wire.fail(Some(&id), &error),
    };
    server.later_noting(id, move |server| async move {
        if server.is_closed() {
            return Err(RpcError::internal("the ACP agent is shutting down"));
        }
        let servers = server.check_scope(
            &request.cwd,
            &request.additional_directories,
            &request.mcp_servers,
        )?;
        check_session_id(&request.session_id)
            .map_err(|error| RpcError::invalid_params(format!("sessionId: {error}")))?;
        if server.session(&request.session_id).is_some() {
            return Err(RpcError::invalid_params(format!(
                "sessionId: {} is already open on this connection",
                request.session_id
            )));
        }
        let open = OpenRequest {
            session_id: request.session_id.clone(),
            cwd: Some(request.cwd.clone()),
            model: server.route_asked(),
            additional_directories: request.additional_directories.clone(),
            mcp_servers: servers,
        };
        let created: Created = server
            .door
            .call(&server.ctx, ClientRequest::SessionOpen(open))
            .await
            .map_err(|refused| match refused.code {
                RpcErrorCode::SessionNotFound => {
                    RpcError::invalid_params(format!("sessionId: {}", refused.message))
                }
                _ => refused.to_acp("cannot open the session", ""),
            })?;
        let agent = created.session_id;
        let session = server.adopt(&agent, &request.cwd);
        if replay {
            let live = open_live(&server.ctx, &agent)
                .map_err(|error| RpcError::internal(format!("session/load: {error}")))?;
            for record in live.events(0, live.event_count()) {
                for update in crate::live::updates(&session, &record, true) {
                    server.update(&agent, update);
                }
            }
        }
        let state: SessionState = crate::editor::session_state(&server, &session).await;
        crate::editor::announce(&server, &session);
        Ok((state, Note::of(&agent, &created.notes)))
    });
}

/// `session/list`: stored conversations (not subagents', not archived), newest first; `cwd`
/// keeps those of one working directory; `cursor` is where the previous page ended.
pub(crate) fn list(server: &Arc<Server>, id: Id, raw: Option<&RawValue>) {
    let request: ListSessionsRequest = match params(raw) {
        Ok(request) => request,
        Err(error) => return server.wire.fail(Some(&id), &error),
    };
    let start = match request.cursor.as_deref().map(str::parse::<usize>) {
        None => 0,
        Some(Ok(start)) => start,
        Some(Err(_)) => {
            return server.wire.fail(
                Some(&id),
                &RpcError::invalid_params("cursor: not a cursor this agent gave"),
            );
        }
    };
    server.later(id, move |server| async move {
        let summaries: SessionList = server
            .door
            .call(&server.ctx, ClientRequest::SessionList(NoParams {}))
            .await
            .map_err(|refused| refused.to_acp("session/list", ""))?;
        let listed: Vec<SessionInfo> = summaries
            .sessions
            .into_iter()
            .filter(|summary| summary.subagent_of.is_none() && !summary.archived)
            .filter(|summary| {
                request
                    .cwd
                    .as_deref()
                    .is_none_or(|cwd| summary.cwd.as_deref() == Some(cwd))
            })
            .map(|summary| SessionInfo {
                cwd: summary.cwd.unwrap_or_default(),
                title: summary.title,
                updated_at: Some(rfc3339(summary.active_at.unwrap_or(summary.updated_at))),
                session_id: summary.id,
            })
            .collect();
        let end = listed.len().min(start.saturating_add(PAGE));
        let next_cursor = (end < listed.len()).then(|| end.to_string());
        Ok(ListSessionsResponse {
            sessions: listed.into_iter().skip(start).take(PAGE).collect(),
            next_cursor,
        })
    });
}

/// Milliseconds since the epoch as an RFC 3339 UTC time.
fn rfc3339(millis: i64) -> String {
    let (days, rest) = (millis.div_euclid(86_400_000), millis.rem_euclid(86_400_000));
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let seconds = rest / 1000;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        rest % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::rfc3339;

    #[test]
    fn times_read_as_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_783_860_675_270), "2026-07-12T12:51:15.270Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
