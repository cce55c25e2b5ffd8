//! What the adapter advertises: listed models and exact-route model metadata.

use dsh_protocol::{
    CatalogModel, Modality, ModelContext, ModelInfo, ModelReasoning, ReasoningEffortInfo,
    ResolvedModelInfo,
};

use crate::config::{AdapterConfig, ReasoningEffort, Thinking};

/// The display name of the provider route.
pub const PROVIDER_DISPLAY_NAME: &str = "DeepSeek";

fn info(provider: &str, model: &CatalogModel) -> ModelInfo {
    ModelInfo {
        provider: provider.to_owned(),
        id: model.id.clone(),
        name: model.name.clone().unwrap_or_else(|| model.id.clone()),
        description: model.description.clone(),
        input_modalities: Some(
            model
                .input_modalities
                .clone()
                .unwrap_or_else(|| vec![Modality::Text]),
        ),
    }
}

/// The configured catalog as model listings.
pub fn list_models(config: &AdapterConfig) -> Vec<ModelInfo> {
    config
        .models
        .iter()
        .map(|model| info(&config.provider, model))
        .collect()
}

fn efforts(list: &[ReasoningEffort]) -> Vec<ReasoningEffortInfo> {
    list.iter()
        .map(|effort| ReasoningEffortInfo {
            id: effort.as_str().into(),
            name: effort.display_name().into(),
            description: None,
        })
        .collect()
}

/// Metadata for one exact model id; unlisted ids resolve too (the catalog is advisory), as
/// text-only, since claiming an unverified image capability would let the host store input the
/// endpoint may reject on every later turn.
pub fn resolve_model(config: &AdapterConfig, model: &str) -> ResolvedModelInfo {
    let entry = config.catalog_entry(model);
    let info = match entry {
        Some(entry) => info(&config.provider, entry),
        None => ModelInfo {
            provider: config.provider.clone(),
            id: model.to_owned(),
            name: model.to_owned(),
            description: None,
            input_modalities: Some(vec![Modality::Text]),
        },
    };
    let own_cap = entry.and_then(|entry| entry.max_tokens);
    let default_max_tokens = if config.compat.max_tokens_default {
        Some(own_cap.unwrap_or(config.max_tokens))
    } else {
        own_cap
    };
    let reasoning = if !(config.compat.thinking || config.compat.reasoning_effort) {
        // A generic endpoint has no effort vocabulary the adapter could map.
        None
    } else if config.thinking == Some(Thinking::Disabled) {
        Some(ModelReasoning {
            efforts: efforts(&[ReasoningEffort::Off]),
            default_effort: Some(ReasoningEffort::Off.as_str().into()),
        })
    } else {
        Some(ModelReasoning {
            efforts: efforts(&ReasoningEffort::ALL),
            default_effort: Some(
                config
                    .reasoning_effort
                    .unwrap_or(ReasoningEffort::High)
                    .as_str()
                    .into(),
            ),
        })
    };
    ResolvedModelInfo {
        info,
        context: Some(ModelContext {
            context_window: entry
                .and_then(|entry| entry.context_window)
                .unwrap_or(config.default_context_window),
        }),
        default_max_tokens,
        reasoning,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Compat;
    use serde_json::json;

    #[test]
    fn lists_the_default_catalog() {
        let config = AdapterConfig::deepseek(None);
        let listed = serde_json::to_value(list_models(&config)).unwrap();
        assert_eq!(
            listed,
            json!([
                {"provider": "deepseek-official", "id": "deepseek-v4-flash", "name": "DeepSeek-V4-Flash", "inputModalities": ["text"]},
                {"provider": "deepseek-official", "id": "deepseek-v4-pro", "name": "DeepSeek-V4-Pro", "inputModalities": ["text"]},
            ])
        );
    }

    #[test]
    fn resolves_listed_and_unlisted_models() {
        let config = AdapterConfig::deepseek(None);
        let flash = serde_json::to_value(resolve_model(&config, "deepseek-v4-flash")).unwrap();
        assert_eq!(
            flash,
            json!({
                "provider": "deepseek-official", "id": "deepseek-v4-flash", "name": "DeepSeek-V4-Flash",
                "inputModalities": ["text"], "context": {"contextWindow": 1_000_000},
                "defaultMaxTokens": 256_000,
                "reasoning": {"efforts": [
                    {"id": "off", "name": "Off"}, {"id": "low", "name": "Low"},
                    {"id": "high", "name": "High"}, {"id": "max", "name": "Max"}
                ], "defaultEffort": "high"}
            })
        );
        let other = resolve_model(&config, "mystery");
        assert_eq!(other.info.name, "mystery");
        assert_eq!(other.context.map(|c| c.context_window), Some(1_000_000));
    }

    #[test]
    fn per_model_cap_wins_and_disabled_thinking_offers_only_off() {
        let mut config = AdapterConfig::deepseek(None);
        config.models[0].max_tokens = Some(8_000);
        config.thinking = Some(Thinking::Disabled);
        let resolved = resolve_model(&config, "deepseek-v4-flash");
        assert_eq!(resolved.default_max_tokens, Some(8_000));
        let reasoning = resolved.reasoning.unwrap();
        assert_eq!(reasoning.efforts.len(), 1);
        assert_eq!(reasoning.default_effort.as_deref(), Some("off"));
    }

    #[test]
    fn generic_endpoints_get_no_deepseek_defaults() {
        let config = AdapterConfig {
            compat: Compat::OPENAI,
            ..AdapterConfig::deepseek(None)
        };
        let resolved = resolve_model(&config, "gpt-x");
        assert_eq!(resolved.default_max_tokens, None);
        assert_eq!(resolved.reasoning, None);
    }
}
