//! `session.models` and `session.selectModel`: the routes the registered adapters offer (from
//! their catalogs), a session's current route, and changing it for the session's next turns.

use abi_stable::std_types::RString;
use dsh_client_protocol::{ModelList, ModelRoute, ModelsRequest, RpcErrorCode, SelectModel};
use dsh_llm_seam::{LLM_SERVICE, LlmService};

use crate::api::{Api, Failure};

/// Splits `PROVIDER/MODEL` at the first `/` (model ids may hold slashes).
pub(crate) fn split_route(route: &str) -> Option<(&str, &str)> {
    route
        .split_once('/')
        .filter(|(provider, model)| !provider.is_empty() && !model.is_empty())
}

/// The route of `session`'s next turns, `PROVIDER/MODEL`, when its agent is known.
pub(crate) fn current_route(ctx: &dsh_plugin_api::Context, session: &str) -> Option<String> {
    let agents = ctx
        .get::<dsh_agents_seam::AgentsService>(dsh_agents_seam::AGENTS_SERVICE)
        .ok()
        .flatten()?;
    agents
        .list()
        .decode()
        .ok()?
        .into_iter()
        .find(|agent| agent.id == session)
        .filter(|agent| !agent.provider.is_empty())
        .map(|agent| format!("{}/{}", agent.provider, agent.model))
}

impl Api {
    fn routes(&self) -> Vec<ModelRoute> {
        let Ok(Some(llm)) = self.ctx.get::<LlmService>(LLM_SERVICE) else {
            return Vec::new();
        };
        let mut routes = Vec::new();
        for provider in llm.providers().iter() {
            let catalog = llm
                .models(provider.clone())
                .into_option()
                .and_then(|models| models.decode().ok())
                .unwrap_or_default();
            for model in catalog {
                let (efforts, default_effort) = match model.reasoning.clone() {
                    // A single effort is no choice.
                    Some(reasoning) if reasoning.efforts.len() > 1 => (
                        reasoning
                            .efforts
                            .into_iter()
                            .map(|effort| effort.id)
                            .collect(),
                        reasoning.default_effort,
                    ),
                    Some(reasoning) => (Vec::new(), reasoning.default_effort),
                    None => (Vec::new(), None),
                };
                routes.push(ModelRoute {
                    route: format!("{provider}/{}", model.id),
                    label: model.name.clone().unwrap_or_else(|| model.id.clone()),
                    context_window: model.context_window,
                    efforts,
                    default_effort,
                });
            }
        }
        routes
    }

    pub(crate) fn models(&self, request: ModelsRequest) -> ModelList {
        let (current, effort) = match request.session_id {
            Some(id) => {
                let current = current_route(&self.ctx, &id);
                let effort = current
                    .as_deref()
                    .and_then(|route| self.efforts.of(&self.ctx, &id, route));
                (current, effort)
            }
            None => (self.default_model(), None),
        };
        ModelList {
            models: self.routes(),
            current,
            effort,
        }
    }

    pub(crate) async fn select_model(
        &self,
        request: SelectModel,
    ) -> Result<serde_json::Value, Failure> {
        let unavailable = |message: String| Failure(RpcErrorCode::ModelUnavailable, message);
        let Some((provider, model)) = split_route(&request.model) else {
            return Err(Failure(
                RpcErrorCode::BadRequest,
                format!("model `{}` is not PROVIDER/MODEL", request.model),
            ));
        };
        if model.trim().is_empty() {
            return Err(Failure(
                RpcErrorCode::BadRequest,
                format!("model `{}` names no model", request.model),
            ));
        }
        // The provider must be served; the model may be any id, listed or not: a catalog is
        // advisory (Ollama or vLLM serve models no list names), and the endpoint says whether
        // it has the model when the next turn asks for it.
        let providers: Vec<String> = match self.ctx.get::<LlmService>(LLM_SERVICE) {
            Ok(Some(llm)) => llm
                .providers()
                .into_iter()
                .map(|name| name.into_string())
                .collect(),
            _ => Vec::new(),
        };
        if !providers.iter().any(|known| known == provider) {
            return Err(unavailable(format!(
                "no adapter serves provider `{provider}` (served: {})",
                if providers.is_empty() {
                    "none".to_owned()
                } else {
                    providers.join(", ")
                }
            )));
        }
        // An effort must be one the model offers.
        if let Some(effort) = &request.effort {
            let offered = self
                .routes()
                .into_iter()
                .find(|route| route.route == request.model)
                .map(|route| route.efforts)
                .unwrap_or_default();
            if !offered.contains(effort) {
                return Err(Failure(
                    RpcErrorCode::BadRequest,
                    match offered.is_empty() {
                        true => format!(
                            "effort `{effort}`: model `{}` offers no reasoning effort to choose",
                            request.model
                        ),
                        false => format!(
                            "effort `{effort}`: model `{}` offers {}",
                            request.model,
                            offered.join(", ")
                        ),
                    },
                ));
            }
        }
        let agent = self.agent_of(&request.session_id).await?;
        self.efforts
            .choose(
                &self.ctx,
                &request.session_id,
                &request.model,
                request.effort.clone(),
            )
            .map_err(|error| Failure::internal(format!("the model was not changed: {error}")))?;
        self.agents()?
            .set_route(
                RString::from(agent.id.as_str()),
                RString::from(provider),
                RString::from(model),
            )
            .into_result()
            .map_err(Failure::from)?;
        // Every page on this session is told by the agent's `agent/route` notice.
        Ok(serde_json::json!({}))
    }
}
