//! Why the registry refuses a registration. Every message names what to fix.

use crate::registry::RUN_CODE_NAME;
use crate::schema_check::SchemaError;
use crate::scope::Layer;

/// A registration refused by the registry. Each message names what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error(
        "tool \"{name}\" is already registered in {layer} by \"{existing_owner}\" (refused for \"{new_owner}\"){hint}",
        hint = if matches!(layer, Layer::Global) { "; for a per-agent variant, register it in that agent's scope instead" } else { "" }
    )]
    DuplicateTool {
        name: String,
        layer: Layer,
        existing_owner: String,
        new_owner: String,
    },
    #[error("tool name \"{name}\" is reserved for {purpose} and cannot be registered or shadowed")]
    ReservedName { name: String, purpose: &'static str },
    #[error("tool \"{name}\" declares parameters outside the enforced JSON Schema subset: {error}")]
    InvalidParameters { name: String, error: SchemaError },
    #[error("tool \"{name}\" timeoutMs must be a positive finite number")]
    InvalidTimeout { name: String },
    #[error(
        "restrict() requires an agent scope: a global restriction would mask every agent; restrict the intended agent's scope instead"
    )]
    RestrictGlobal,
    #[error(
        "restrict({{}}) is a no-op: pass `allow` and/or `deny` (an empty filter is almost always a materialized-empty-config bug)"
    )]
    EmptyRestriction,
    #[error(
        "restrict() cannot name reserved Code Mode presentation transport \"{RUN_CODE_NAME}\"; restrict end-capability tools instead"
    )]
    RestrictReserved,
    #[error(
        "restrict() names unknown global tool{plural} {quoted}; known global tools: {known_list}",
        plural = if names.len() > 1 { "s" } else { "" },
        quoted = names.iter().map(|name| format!("\"{name}\"")).collect::<Vec<_>>().join(", "),
        known_list = if known.is_empty() { "(none)".to_owned() } else { known.join(", ") }
    )]
    RestrictUnknown {
        names: Vec<String>,
        known: Vec<String>,
    },
}
