//! The reasoning effort a person chose for a session's model (the page's picker, where the
//! model's catalog lists efforts): kept with the route it was chosen for, and set on each of
//! the session's model requests through `agent/request` while the session stays on that route
//! (another model drops the choice, a choice is never carried to a model it was not offered
//! for). Each request's effort reaches the wire as the adapter maps it (DeepSeek:
//! `reasoning_effort`, `off` turning thinking off). Each choice is logged as `model/effort`
//! (ignorable: a host without this plugin still reads the session), so a session reopened
//! after a restart, or forked, keeps it: a session's latest choice is read from its log the
//! first time it is needed here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use abi_stable::std_types::RString;
use dsh_agents_seam::AGENT_REQUEST;
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{Deserialize, Serialize, lock};
use dsh_protocol::{EventData, GenerateRequest};
use dsh_sessions_seam::{
    SESSIONS_SERVICE, SessionError, SessionErrorKind, SessionExt, SessionsService, open_live,
};

/// `model/effort`: the effort chosen for the session's model on `route` (`None`: back to
/// the model's default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct EffortChosen {
    pub(crate) route: String,
    #[serde(default)]
    pub(crate) effort: Option<String>,
}

impl EventData for EffortChosen {
    const KIND: &'static str = "model/effort";
}

/// Per session whose choice was read or made here: the route and the effort chosen for it
/// (`None`: no choice stands).
#[derive(Default)]
pub(crate) struct Efforts {
    chosen: Mutex<HashMap<String, Option<(String, String)>>>,
}

impl Efforts {
    /// Chooses `effort` for `session` on `route` (`None` goes back to the model's default),
    /// logged in the session first: a choice that was not logged is not made.
    pub(crate) fn choose(
        &self,
        ctx: &Context,
        session: &str,
        route: &str,
        effort: Option<String>,
    ) -> Result<(), SessionError> {
        let Ok(Some(sessions)) = ctx.get::<SessionsService>(SESSIONS_SERVICE) else {
            return Err(SessionError::new(
                SessionErrorKind::NotFound,
                "no `sessions` service",
            ));
        };
        sessions
            .register_type(RString::from(EffortChosen::KIND), false)
            .into_result()?;
        drop(sessions);
        let event = EffortChosen {
            route: route.to_owned(),
            effort: effort.clone(),
        };
        open_live(ctx, session)?.log(&event)?;
        lock(&self.chosen).insert(
            session.to_owned(),
            effort.map(|effort| (route.to_owned(), effort)),
        );
        Ok(())
    }

    /// The effort chosen for `session` while it is on `route`.
    pub(crate) fn of(&self, ctx: &Context, session: &str, route: &str) -> Option<String> {
        self.standing(ctx, session)
            .filter(|(on, _)| on == route)
            .map(|(_, effort)| effort)
    }

    /// The choice that stands for `session`, read from its log the first time.
    fn standing(&self, ctx: &Context, session: &str) -> Option<(String, String)> {
        if let Some(known) = lock(&self.chosen).get(session) {
            return known.clone();
        }
        // A session not live here is read once it is (its agent resumed): nothing is kept
        // for it until then.
        let live = open_live(ctx, session).ok()?;
        let logged =
            live.events(0, live.event_count())
                .iter()
                .rev()
                .find_map(|record| match record.kind.as_str() == EffortChosen::KIND {
                    true => record.decode::<EffortChosen>()?.ok(),
                    false => None,
                });
        let standing = logged.and_then(|event| Some((event.route, event.effort?)));
        lock(&self.chosen).insert(session.to_owned(), standing.clone());
        standing
    }
}

/// Sets each request's effort from the session's choice.
pub(crate) fn shape_requests(ctx: &Context, efforts: Arc<Efforts>) -> Result<(), PluginError> {
    let reader = ctx.clone();
    ctx.on_waterfall(&AGENT_REQUEST, move |next| {
        let (efforts, ctx) = (efforts.clone(), reader.clone());
        async move {
            let session = next.payload().session.to_string();
            let shaped = next.run().await?;
            let Some((chosen_for, effort)) = efforts.standing(&ctx, &session) else {
                return Ok(shaped);
            };
            let mut request: GenerateRequest = shaped
                .decode()
                .map_err(|error| PluginError::plugin(format!("agent/request: {error}")))?;
            let route = format!("{}/{}", request.config.provider, request.config.model);
            if route != chosen_for {
                return Ok(Json::encode(&request));
            }
            request.config.reasoning_effort = Some(effort);
            Ok(Json::encode(&request))
        }
    })
}
