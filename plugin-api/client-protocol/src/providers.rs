//! The `provider.*` methods' payloads: the OpenAI-compatible providers a person added in the
//! settings (an id, a base URL, a key shown masked), the models each endpoint lists at
//! `GET {base}/models`, and adding, changing and removing one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One provider added in the settings, as `provider.list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderState {
    /// Its route: models are chosen as `ID/MODEL`.
    pub id: String,
    /// Where its OpenAI-compatible API is (`/chat/completions` and `/models` are joined to it).
    pub base_url: String,
    /// The stored key masked (its last four characters at most), never the key itself;
    /// `None` when none is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The model ids its endpoint listed when it was saved, as the adapter lists them now.
    pub models: Vec<String>,
    /// Whether an adapter serves it now (it may still be loading right after a save).
    pub served: bool,
}

/// `provider.list`'s value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderList {
    pub providers: Vec<ProviderState>,
    /// Whether they may be changed from this client (not over the network unless the launch
    /// allowed it).
    pub writable: bool,
}

/// `provider.save`'s payload: a new provider, or new values for the one with this id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SaveProvider {
    /// Lowercase letters, digits and dashes; not a route another adapter serves.
    pub id: String,
    /// An `http://` or `https://` address.
    pub base_url: String,
    /// The key its requests send; absent when changing a provider keeps the stored one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Changing the provider with this id (which must exist); without it the id must be new.
    #[serde(default)]
    pub edit: bool,
}

/// `provider.discover`'s payload: an endpoint to ask for its models, with a key or the stored
/// key of provider `id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverModels {
    pub base_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// A saved provider whose stored key is used when no key is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// The model ids an endpoint lists (`provider.discover`, and `provider.save`'s value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveredModels {
    pub models: Vec<String>,
}

/// A provider named by id (`provider.remove`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderRef {
    pub id: String,
}
