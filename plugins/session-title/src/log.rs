//! What the plugin reads in and appends to a live session's log: whether it has a title (and
//! whose), whether it was started by another session (a subagent's, a seeded one), the route
//! of its last request; and the title appends, each checked against the log in the same step
//! as it is made, so two titles never race each other or a person's rename.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use abi_stable::std_types::RVec;
use dsh_plugin_api::{Context, RArc, lock};
use dsh_protocol::{
    RequestHeaderEvent, SessionTitleEvent, SessionTitleLlmRequestEvent, TitleRoute, TitleSource,
    kinds,
};
use dsh_sessions_seam::{
    EventRecord, SESSIONS_SERVICE, SessionBox, SessionError, SessionExt, SessionsService, open_live,
};

/// The session `id` if it is live in this process. Checked against the live list first: opening
/// a session that is not live would start loading it from the store (a fork that is still
/// being announced, a session closed meanwhile), which a title must never do.
fn live(ctx: &Context, id: &str) -> Option<SessionBox> {
    let Ok(Some(sessions)) = ctx.get::<SessionsService>(SESSIONS_SERVICE) else {
        return None;
    };
    if !sessions.live().iter().any(|live| live.as_str() == id) {
        return None;
    }
    open_live(ctx, id).ok()
}

/// Every event of `session`'s log.
fn all_events(session: &SessionBox) -> RVec<RArc<EventRecord>> {
    session.events(0, session.event_count())
}

/// The latest title of the log, if any.
fn latest_title(session: &SessionBox) -> Option<SessionTitleEvent> {
    all_events(session)
        .iter()
        .rev()
        .filter(|record| record.kind.as_str() == kinds::SESSION_TITLE)
        .find_map(|record| record.decode::<SessionTitleEvent>()?.ok())
}

/// Whether a model should title `session` after its first human message: it has no title
/// yet, and it started fresh. A subagent's session (its descriptor is logged before its task)
/// and a loaded or forked one (seeded from an earlier log) keep the fallback, as in the
/// reference, which titles only new top-level sessions by model.
pub(crate) fn wants_model_title(ctx: &Context, session: &str) -> bool {
    let Some(live) = live(ctx, session) else {
        return false;
    };
    !all_events(&live).iter().any(|record| {
        matches!(
            record.kind.as_str(),
            kinds::SESSION_TITLE | kinds::SUBAGENT_DESCRIPTOR | kinds::SESSION_END_SEED
        )
    })
}

/// The route of the last `request/header` logged before `seq`.
pub(crate) fn last_route(ctx: &Context, session: &str, seq: u64) -> Option<TitleRoute> {
    let live = live(ctx, session)?;
    live.events(0, seq)
        .iter()
        .rev()
        .filter(|record| record.kind.as_str() == kinds::REQUEST_HEADER)
        .find_map(|record| record.decode::<RequestHeaderEvent>()?.ok())
        .map(|event| TitleRoute {
            provider: event.header.config.provider,
            model: event.header.config.model,
        })
}

/// Why a title or a request was not appended.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AppendError {
    #[error("the session is no longer open")]
    Closed,
    #[error("a person renamed the session")]
    Renamed,
    #[error("the log refused the event: {0}")]
    Refused(#[from] SessionError),
}

/// The appends of titles, one at a time per session (the check and the append of each are one
/// step). Per session, because a fallback is appended from inside its session's publication:
/// a lock shared with other sessions could be held by a thread waiting to publish in this one.
#[derive(Default)]
pub(crate) struct Titles {
    appending: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

impl Titles {
    /// Appends the fallback `title` of message `seq` unless the log has a title already.
    /// `Ok(false)`: it had one.
    pub(crate) fn fallback(
        &self,
        ctx: &Context,
        session: &str,
        seq: u64,
        title: &str,
    ) -> Result<bool, AppendError> {
        let turn = self.turn_of(session);
        let _one_at_a_time = lock(&turn);
        let live = live(ctx, session).ok_or(AppendError::Closed)?;
        if latest_title(&live).is_some() {
            return Ok(false);
        }
        live.log(&SessionTitleEvent {
            title: title.to_owned(),
            message_seqs: vec![seq],
            source: TitleSource::Fallback,
        })?;
        Ok(true)
    }

    /// Logs the request about to be sent, unless a person titled the session meanwhile.
    pub(crate) fn request(
        &self,
        ctx: &Context,
        session: &str,
        request: &SessionTitleLlmRequestEvent,
    ) -> Result<(), AppendError> {
        let turn = self.turn_of(session);
        let _one_at_a_time = lock(&turn);
        let live = self.unpinned(ctx, session)?;
        live.log(request)?;
        Ok(())
    }

    /// Appends the model's `title` of message `seq`, unless a person titled the session
    /// meanwhile (a rename pins the title).
    pub(crate) fn provided(
        &self,
        ctx: &Context,
        session: &str,
        seq: u64,
        title: String,
        route: &TitleRoute,
        provider: &str,
    ) -> Result<(), AppendError> {
        let turn = self.turn_of(session);
        let _one_at_a_time = lock(&turn);
        let live = self.unpinned(ctx, session)?;
        live.log(&SessionTitleEvent {
            title,
            message_seqs: vec![seq],
            source: TitleSource::Provider {
                provider: provider.to_owned(),
                model: serde_json::to_value(route).ok(),
            },
        })?;
        Ok(())
    }

    /// The lock of `session`'s title appends.
    fn turn_of(&self, session: &str) -> Arc<Mutex<()>> {
        lock(&self.appending)
            .entry(session.to_owned())
            .or_default()
            .clone()
    }

    /// The session left this process.
    pub(crate) fn forget(&self, session: &str) {
        lock(&self.appending).remove(session);
    }

    /// The live session, unless its title is a person's.
    fn unpinned(&self, ctx: &Context, session: &str) -> Result<SessionBox, AppendError> {
        let live = live(ctx, session).ok_or(AppendError::Closed)?;
        match latest_title(&live) {
            Some(SessionTitleEvent {
                source: TitleSource::User,
                ..
            }) => Err(AppendError::Renamed),
            _ => Ok(live),
        }
    }
}
