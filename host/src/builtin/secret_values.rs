//! `dsh-host/secret-values`: the `secret_values` service. The values are what the host's
//! configuration holds under `env` and `headers` in any row, taken each time the tree is
//! resolved (at start and at every reload), so the sandbox can remove them from a command's
//! environment by value.

use std::sync::RwLock;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RString, RVec};
use dsh_loader::ResolvedRow;
use dsh_plugin_api::io::secrets::{SECRET_VALUES_SERVICE, SecretValues, SecretValues_TO};
use dsh_plugin_api::{Context, NoConfig, Plugin, PluginError};
use serde_json::Value;

/// The values of the tree last resolved.
static VALUES: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// The keys whose string values are secrets a process may be given on purpose.
const SECRET_KEYS: [&str; 2] = ["env", "headers"];

/// Takes the values of `rows`' configs.
pub(crate) fn remember(rows: &[ResolvedRow]) {
    let mut found = Vec::new();
    for row in rows {
        collect(&row.config, false, &mut found);
    }
    found.sort();
    found.dedup();
    if let Ok(mut values) = VALUES.write() {
        *values = found;
    }
}

/// The strings below `value`, those under a secret key only (`inside` says whether `value` is
/// under one).
fn collect(value: &Value, inside: bool, found: &mut Vec<String>) {
    match value {
        Value::String(text) if inside && !text.is_empty() => found.push(text.clone()),
        Value::Object(fields) => {
            for (key, field) in fields {
                collect(field, inside || SECRET_KEYS.contains(&key.as_str()), found);
            }
        }
        Value::Array(items) => {
            for item in items {
                collect(item, inside, found);
            }
        }
        _ => {}
    }
}

struct Values;

impl SecretValues for Values {
    fn values(&self) -> RVec<RString> {
        VALUES
            .read()
            .map(|values| {
                values
                    .iter()
                    .map(|value| RString::from(value.as_str()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

pub(crate) struct SecretValuesPlugin;

impl Plugin for SecretValuesPlugin {
    const NAME: &'static str = "secret-values";
    const PROVIDES: &'static [&'static str] = &[SECRET_VALUES_SERVICE];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        ctx.provide(
            SECRET_VALUES_SERVICE,
            SecretValues_TO::from_value(Values, TD_Opaque),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_strings_under_env_and_headers_are_taken() {
        let config = serde_json::json!({
            "command": "npx",
            "env": {"TOKEN": "t-1", "NESTED": {"deep": "t-2"}},
            "servers": {"x": {"headers": {"Authorization": "Bearer t-3"}, "url": "http://x"}},
            "args": ["--env", "not-a-secret"]
        });
        let mut found = Vec::new();
        collect(&config, false, &mut found);
        found.sort();
        assert_eq!(found, ["Bearer t-3", "t-1", "t-2"]);
    }
}
