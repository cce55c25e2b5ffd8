//! Call configuration, tool schemas, model catalog metadata and the assembled request.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::content::Message;

/// Provider, model, reasoning effort and sampling scalars of a conversation's requests (the
/// `config` of a `request/header`). Every field maps onto the same-named request field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LlmCallConfig {
    /// Registered provider route (`deepseek-official`).
    pub provider: String,
    pub model: String,
    /// An adapter-owned effort id (`off`, `low`, `high`, `max` for DeepSeek).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Stop sequences: generation halts at the first one produced (not included in the output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Vec<String>>,
}

impl LlmCallConfig {
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            model: model.into(),
            reasoning_effort: None,
            temperature: None,
            max_tokens: None,
            stop: None,
        }
    }
}

/// Which config fields the adapter filled in rather than the caller (`adapterDefaults` of a
/// `request/header`); the reference only ever writes `true`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallConfigAdapterDefaults {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<bool>,
}

/// A tool as described to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object, kept as its text: a request crosses several
    /// plugins on its way to a provider, and each would otherwise rebuild every tool's schema
    /// as a tree (a long tool list made that a large part of a step).
    pub parameters: RawJson,
}

impl ToolSchema {
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: &serde_json::Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters: RawJson::from_value(parameters),
        }
    }
}

/// A JSON value carried as its text: read and written without being rebuilt, compared by its
/// text (two spellings of one value differ).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct RawJson(#[schemars(with = "serde_json::Value")] Box<serde_json::value::RawValue>);

impl RawJson {
    /// The compact text of `value`.
    pub fn from_value(value: &serde_json::Value) -> Self {
        // A Value always serializes, and its text is always valid JSON.
        Self(
            serde_json::value::to_raw_value(value)
                .unwrap_or_else(|_| serde_json::value::RawValue::NULL.to_owned()),
        )
    }

    /// The text.
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

/// An input modality a model accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Modality {
    Text,
    Image,
}

/// One entry of an adapter's configured model catalog. The catalog is advisory: ids not listed
/// still pass through to the provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogModel {
    pub id: String,
    /// Selector label; defaults to the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Accepted input; absent means text only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_modalities: Option<Vec<Modality>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Per-model output cap; wins over the adapter-wide default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The reasoning efforts the model offers, as its adapter fills them in (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ModelReasoning>,
}

impl CatalogModel {
    pub fn accepts(&self, modality: Modality) -> bool {
        match &self.input_modalities {
            Some(modalities) => modalities.contains(&modality),
            None => modality == Modality::Text,
        }
    }
}

/// A model as listed to selectors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    pub provider: String,
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_modalities: Option<Vec<Modality>>,
}

/// Context capacity of one exact provider/model route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelContext {
    pub context_window: u64,
}

/// One selectable reasoning effort.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReasoningEffortInfo {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The efforts a route offers, in display order, and the one materialized when callers omit it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelReasoning {
    pub efforts: Vec<ReasoningEffortInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_effort: Option<String>,
}

/// Exact-route model metadata resolved by the owning adapter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedModelInfo {
    #[serde(flatten)]
    pub info: ModelInfo,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ModelContext>,
    /// The output cap materialized into the call config when the caller sets none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_max_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ModelReasoning>,
}

/// Why an auxiliary call is made; ordinary conversation requests have none. Adapters may map it
/// to transport metadata (DeepSeek's compaction header) or policy (titles think less).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Purpose {
    Compaction,
    SessionTitle,
}

/// One fully assembled model request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GenerateRequest {
    pub config: LlmCallConfig,
    /// System prompt (the provider's system slot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// History after the system slot, exactly as the provider is to see it. Empty when
    /// `history` refers to it instead.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// The history by reference: the first `count` derived messages of the request's session,
    /// whose rolling hash is `hash`. Whoever puts the request on a wire reads them from the
    /// log; checking and passing the request on stay independent of the history's length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryRef>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSchema>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<Purpose>,
}

/// A session's derived history at one point (see [`GenerateRequest::history`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryRef {
    pub count: u64,
    /// The rolling history hash, as 16 hex digits.
    pub hash: String,
}

impl GenerateRequest {
    pub fn new(config: LlmCallConfig, messages: Vec<Message>) -> Self {
        Self {
            config,
            system: None,
            messages,
            history: None,
            tools: Vec::new(),
            session_id: None,
            purpose: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolved_model_info_flattens_the_listing() {
        let info = ResolvedModelInfo {
            info: ModelInfo {
                provider: "p".into(),
                id: "m".into(),
                name: "M".into(),
                description: None,
                input_modalities: Some(vec![Modality::Text]),
            },
            context: Some(ModelContext { context_window: 10 }),
            default_max_tokens: Some(5),
            reasoning: None,
        };
        let value = json!({"provider": "p", "id": "m", "name": "M", "inputModalities": ["text"], "context": {"contextWindow": 10}, "defaultMaxTokens": 5});
        assert_eq!(serde_json::to_value(&info).unwrap(), value);
        assert_eq!(
            serde_json::from_value::<ResolvedModelInfo>(value).unwrap(),
            info
        );
    }

    #[test]
    fn catalog_entries_default_to_text_only() {
        let entry: CatalogModel = serde_json::from_value(json!({"id": "x"})).unwrap();
        assert!(entry.accepts(Modality::Text));
        assert!(!entry.accepts(Modality::Image));
    }
}
