//! The reasoning effort a person chose for a session's model (the page's picker, where the
//! model's catalog lists efforts): kept with the route it was chosen for, and set on each of
//! the session's model requests through `agent/request` while the session stays on that route
//! (another model drops the choice, a choice is never carried to a model it was not offered
//! for). Each request's effort reaches the wire as the adapter maps it (DeepSeek:
//! `reasoning_effort`, `off` turning thinking off). Held in memory: a session reopened after a
//! restart is back on its model's default effort.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dsh_agents_seam::AGENT_REQUEST;
use dsh_plugin_api::lock;
use dsh_plugin_api::prelude::*;
use dsh_protocol::GenerateRequest;

/// Per session: the route (`PROVIDER/MODEL`) and the effort chosen for it.
#[derive(Default)]
pub(crate) struct Efforts {
    chosen: Mutex<HashMap<String, (String, String)>>,
}

impl Efforts {
    /// Chooses `effort` for `session` on `route`; `None` goes back to the model's default.
    pub(crate) fn choose(&self, session: &str, route: &str, effort: Option<String>) {
        let mut chosen = lock(&self.chosen);
        match effort {
            Some(effort) => {
                chosen.insert(session.to_owned(), (route.to_owned(), effort));
            }
            None => {
                chosen.remove(session);
            }
        }
    }

    /// The effort chosen for `session` while it is on `route`.
    pub(crate) fn of(&self, session: &str, route: &str) -> Option<String> {
        lock(&self.chosen)
            .get(session)
            .filter(|(on, _)| on == route)
            .map(|(_, effort)| effort.clone())
    }
}

/// Sets each request's effort from the session's choice.
pub(crate) fn shape_requests(ctx: &Context, efforts: Arc<Efforts>) -> Result<(), PluginError> {
    ctx.on_waterfall(&AGENT_REQUEST, move |next| {
        let efforts = efforts.clone();
        async move {
            let session = next.payload().session.to_string();
            let shaped = next.run().await?;
            if lock(&efforts.chosen).get(&session).is_none() {
                return Ok(shaped);
            }
            let mut request: GenerateRequest = shaped
                .decode()
                .map_err(|error| PluginError::plugin(format!("agent/request: {error}")))?;
            let route = format!("{}/{}", request.config.provider, request.config.model);
            let Some(effort) = efforts.of(&session, &route) else {
                return Ok(Json::encode(&request));
            };
            request.config.reasoning_effort = Some(effort);
            Ok(Json::encode(&request))
        }
    })
}
