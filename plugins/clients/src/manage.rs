//! Renaming, forking, deleting sessions and choosing their permission preset (logged as
//! `permission/preset`, `sandbox/mode` and `approval/policy`, which the sandbox and the
//! approval service read). A rename is a `session/title` event (source
//! `user`), so every client following the session sees it; a fork is the session log's own
//! fork of a prefix; a delete moves the stored session to the store's trash, after its agent
//! (if idle) is disposed, and refuses a session that is running a turn.

use abi_stable::std_types::{RNone, RString};
use dsh_client_protocol::{
    ArchiveRequest, ChatItem, Created, ForkRequest, RenameRequest, RpcErrorCode, SearchRequest,
    SearchResult, ServerFrame, SessionRef, SetPermission,
};
use dsh_protocol::kinds;
use dsh_protocol::{AgentStatus, PermissionPreset, SessionTitleEvent, TitleSource};
use dsh_sessions_seam::{
    NewEventRecord, SESSION_PERSISTENCE_SERVICE, SESSIONS_SERVICE, SessionBox, SessionErrorKind,
    SessionStoreService, SessionsService,
};

use crate::api::{Api, Failure};
use crate::fold::Fold;

/// The longest title a person may give.
const MAX_TITLE: usize = 200;

impl Api {
    async fn open(&self, id: &str) -> Result<SessionBox, Failure> {
        let Ok(Some(sessions)) = self.ctx.get::<SessionsService>(SESSIONS_SERVICE) else {
            return Err(Failure::internal("no `sessions` service is running"));
        };
        sessions
            .open(RString::from(id))
            .await
            .into_result()
            .map_err(|error| match error.kind {
                SessionErrorKind::NotFound => {
                    Failure(RpcErrorCode::SessionNotFound, format!("no session `{id}`"))
                }
                _ => Failure::internal(error.to_string()),
            })
    }

    pub(crate) async fn rename(
        &self,
        request: RenameRequest,
    ) -> Result<serde_json::Value, Failure> {
        let title = request.title.trim().to_owned();
        if title.is_empty() || title.chars().count() > MAX_TITLE || title.contains('\n') {
            return Err(Failure(
                RpcErrorCode::TitleInvalid,
                format!("a title is one line of 1 to {MAX_TITLE} characters"),
            ));
        }
        let session = self.open(&request.session_id).await?;
        let event = SessionTitleEvent {
            title,
            message_seqs: Vec::new(),
            source: TitleSource::User,
        };
        session
            .append(vec![NewEventRecord::of(&event)].into())
            .into_result()
            .map_err(|error| Failure::internal(error.to_string()))?;
        Ok(serde_json::json!({}))
    }

    /// `session.setPermission`: logs the preset with the sandbox mode and approval policy it
    /// sets; the session's next calls run under them.
    pub(crate) async fn set_permission(
        &self,
        request: SetPermission,
    ) -> Result<serde_json::Value, Failure> {
        let preset = PermissionPreset::parse(&request.preset).ok_or_else(|| {
            Failure(
                RpcErrorCode::BadRequest,
                format!(
                    "preset `{}` is not read-only, workspace-write, danger-full-access or ask-every-command",
                    request.preset
                ),
            )
        })?;
        let session = self.open(&request.session_id).await?;
        let (preset, mode, policy) = preset.events();
        let batch = vec![
            NewEventRecord::of(&preset),
            NewEventRecord::of(&mode),
            NewEventRecord::of(&policy),
        ];
        session
            .append(batch.into())
            .into_result()
            .map_err(|error| Failure::internal(error.to_string()))?;
        Ok(serde_json::json!({}))
    }

    pub(crate) async fn fork(&self, request: ForkRequest) -> Result<Created, Failure> {
        let session = self.open(&request.session_id).await?;
        let records = session.events(0, session.event_count());
        let prefix = match &request.item_id {
            None => session.event_count(),
            Some(item_id) => {
                let mut fold = Fold::quiet();
                for record in records.iter() {
                    fold.apply(record);
                }
                let seq = fold
                    .items()
                    .iter()
                    .find(|item| item.id() == item_id)
                    .map(item_seq)
                    .ok_or_else(|| {
                        Failure(
                            RpcErrorCode::ForkUnavailable,
                            format!("no item `{item_id}` in session `{}`", request.session_id),
                        )
                    })?;
                // A fork keeps whole turns: it ends with the turn the item belongs to.
                records
                    .iter()
                    .find(|record| record.seq >= seq && record.kind.as_str() == kinds::TURN_END)
                    .map_or(seq + 1, |end| end.seq + 1)
            }
        };
        let Ok(Some(sessions)) = self.ctx.get::<SessionsService>(SESSIONS_SERVICE) else {
            return Err(Failure::internal("no `sessions` service is running"));
        };
        let child = sessions
            .fork(RString::from(request.session_id.as_str()), prefix, RNone)
            .await
            .into_result()
            .map_err(|error| Failure(RpcErrorCode::ForkUnavailable, error.to_string()))?;
        // Written at once, so the list (read from the store) shows it with its directory.
        child
            .flush()
            .await
            .into_result()
            .map_err(|error| Failure::internal(error.to_string()))?;
        Ok(Created {
            session_id: child.id().into_string(),
            notes: Vec::new(),
        })
    }

    pub(crate) async fn delete(&self, request: SessionRef) -> Result<serde_json::Value, Failure> {
        let id = request.session_id;
        let agents = self.agents()?;
        let agent = agents
            .list()
            .decode()
            .ok()
            .and_then(|list| list.into_iter().find(|agent| agent.id == id));
        if let Some(agent) = agent {
            if agent.status == AgentStatus::Running {
                return Err(Failure(
                    RpcErrorCode::AgentBusy,
                    "This session is still working on a turn: cancel it first, then delete it."
                        .to_owned(),
                ));
            }
            agents
                .dispose(RString::from(id.as_str()))
                .await
                .into_result()
                .map_err(Failure::from)?;
        }
        if let Ok(Some(sessions)) = self.ctx.get::<SessionsService>(SESSIONS_SERVICE)
            && sessions.live().iter().any(|live| live.as_str() == id)
        {
            sessions
                .close(RString::from(id.as_str()))
                .await
                .into_result()
                .map_err(|error| Failure::internal(error.to_string()))?;
        }
        let store = self.session_store()?;
        store
            .delete(RString::from(id.as_str()))
            .await
            .into_result()
            .map_err(|error| match error.kind {
                SessionErrorKind::NotFound => Failure(
                    RpcErrorCode::SessionNotFound,
                    format!("no stored session `{id}`"),
                ),
                _ => Failure::internal(error.to_string()),
            })?;
        self.hub
            .broadcast(&ServerFrame::SessionRemoved { session_id: id });
        Ok(serde_json::json!({}))
    }

    /// The session store, which deletes and restores.
    fn session_store(&self) -> Result<dsh_plugin_api::Service<SessionStoreService>, Failure> {
        match self
            .ctx
            .get::<SessionStoreService>(SESSION_PERSISTENCE_SERVICE)
        {
            Ok(Some(store)) => Ok(store),
            _ => Err(Failure::internal(
                "no `session_persistence` service is running",
            )),
        }
    }

    /// `session.restore`: the latest deleted copy of a session back from the trash (the undo
    /// of a delete).
    pub(crate) async fn restore(&self, request: SessionRef) -> Result<serde_json::Value, Failure> {
        let id = request.session_id;
        let store = self.session_store()?;
        store
            .restore(RString::from(id.as_str()))
            .await
            .into_result()
            .map_err(|error| match error.kind {
                SessionErrorKind::NotFound => Failure(
                    RpcErrorCode::SessionNotFound,
                    "That session is no longer in the trash.".to_owned(),
                ),
                _ => Failure::internal(error.to_string()),
            })?;
        self.hub.broadcast(&crate::session_added(id, false));
        Ok(serde_json::json!({}))
    }

    /// `session.archive`: a session put away (or back); every page lists it anew.
    pub(crate) async fn archive(
        &self,
        request: ArchiveRequest,
    ) -> Result<serde_json::Value, Failure> {
        let store = self.session_store()?;
        store
            .archive(RString::from(request.session_id.as_str()), request.archived)
            .await
            .into_result()
            .map_err(|error| match error.kind {
                SessionErrorKind::NotFound => crate::sessions::not_found(&request.session_id),
                _ => Failure::internal(error.to_string()),
            })?;
        let live = self
            .ctx
            .get::<dsh_sessions_seam::SessionsService>(dsh_sessions_seam::SESSIONS_SERVICE)
            .ok()
            .flatten()
            .is_some_and(|sessions| {
                sessions
                    .live()
                    .iter()
                    .any(|id| id.as_str() == request.session_id)
            });
        self.hub
            .broadcast(&crate::session_added(request.session_id, live));
        Ok(serde_json::json!({}))
    }

    /// `session.search`: the conversations whose messages hold the text, latest first.
    pub(crate) async fn search(&self, request: SearchRequest) -> Result<SearchResult, Failure> {
        let store = self.session_store()?;
        let limit = request.limit.unwrap_or(20).clamp(1, 200);
        let hits = store
            .search(RString::from(request.query), limit)
            .await
            .into_result()
            .map_err(|error| Failure::internal(format!("the session store: {error}")))?
            .decode()
            .map_err(|error| Failure::internal(format!("the session store's hits: {error}")))?;
        Ok(SearchResult { hits })
    }
}

fn item_seq(item: &ChatItem) -> u64 {
    match item {
        ChatItem::User { seq, .. }
        | ChatItem::Assistant { seq, .. }
        | ChatItem::Tool { seq, .. }
        | ChatItem::TurnEnd { seq, .. }
        | ChatItem::Approval { seq, .. }
        | ChatItem::Question { seq, .. }
        | ChatItem::Notice { seq, .. } => *seq,
    }
}
