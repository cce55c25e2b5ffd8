//! Whether a session's model takes images: the route of its last `request/header` (else its
//! agent's route), looked up in that provider's catalog. Strict, as the reference is: a model
//! the catalog does not list, or lists without `image` among its `inputModalities`, does not.
//! The tools and doors that put an image into a session ask this first, because an image in
//! the log rides every later request of the session.

use dsh_agents_seam::{AGENTS_SERVICE, AgentsService};
use dsh_llm_seam::{LLM_SERVICE, LlmService};
use dsh_plugin_api::Context;
use dsh_protocol::{CatalogModel, Modality, RequestHeaderEvent, kinds};
use dsh_sessions_seam::{SESSIONS_SERVICE, SessionsService, open_live};

/// The services [`session_route`] and [`accepts_images`] read (for a plugin's `OPTIONAL`).
pub const ROUTE_SERVICES: [&str; 3] = [SESSIONS_SERVICE, LLM_SERVICE, AGENTS_SERVICE];

/// A provider route and model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub provider: String,
    pub model: String,
}

/// The route `session` talks to: its last logged request header's, else its agent's.
pub fn session_route(ctx: &Context, session: &str) -> Option<Route> {
    let live = matches!(
        ctx.get::<SessionsService>(SESSIONS_SERVICE),
        Ok(Some(sessions)) if sessions.live().iter().any(|id| id.as_str() == session)
    );
    let logged = live
        .then(|| open_live(ctx, session).ok())
        .flatten()
        .and_then(|log| {
            log.events(0, log.event_count())
                .iter()
                .rev()
                .filter(|record| record.kind.as_str() == kinds::REQUEST_HEADER)
                .find_map(|record| record.decode::<RequestHeaderEvent>()?.ok())
        })
        .map(|event| Route {
            provider: event.header.config.provider,
            model: event.header.config.model,
        });
    logged.or_else(|| {
        let Ok(Some(agents)) = ctx.get::<AgentsService>(AGENTS_SERVICE) else {
            return None;
        };
        let listed = agents.list().decode().ok()?;
        listed
            .into_iter()
            .find(|agent| agent.id == session)
            .map(|agent| Route {
                provider: agent.provider,
                model: agent.model,
            })
    })
}

/// Whether `route`'s model is catalogued as taking images.
pub fn accepts_images(ctx: &Context, route: &Route) -> bool {
    let Ok(Some(llm)) = ctx.get::<LlmService>(LLM_SERVICE) else {
        return false;
    };
    let models: Vec<CatalogModel> = llm
        .models(route.provider.as_str().into())
        .into_option()
        .and_then(|models| models.decode().ok())
        .unwrap_or_default();
    models
        .iter()
        .any(|model| model.id == route.model && model.accepts(Modality::Image))
}
