//! Whether the `skill` tool is in a scope's view, asked before every request. The tools
//! service renders the same schema text for as long as its registry is unchanged, so the
//! answer is kept with the text it was read from: an unchanged text is compared, not decoded
//! again (the whole tool list, at every step).

use std::collections::HashMap;
use std::sync::Mutex;

use abi_stable::std_types::{RString, RVec};
use dsh_plugin_api::lock;
use dsh_tools_seam::ToolsService;

use crate::tool;

/// At most this many scope chains keep an answer: a host serves a handful of agents' scopes.
const MAX_SCOPES: usize = 64;

/// The answers by scope chain, each with the schema text it was read from.
#[derive(Default)]
pub(crate) struct ToolView {
    seen: Mutex<HashMap<Vec<String>, (RString, bool)>>,
}

impl ToolView {
    /// Whether `scope` sees the `skill` tool (not when its schemas cannot be read).
    pub(crate) fn sees_skill(&self, tools: &ToolsService, scope: &[String]) -> bool {
        let chain: RVec<RString> = scope.iter().map(|key| key.as_str().into()).collect();
        let Ok(schemas) = tools.schemas(chain).into_result() else {
            return false;
        };
        if let Some((text, visible)) = lock(&self.seen).get(scope)
            && text.as_str() == schemas.text()
        {
            return *visible;
        }
        let visible = lists_skill(schemas.text());
        let mut seen = lock(&self.seen);
        if seen.len() >= MAX_SCOPES && !seen.contains_key(scope) {
            seen.clear();
        }
        seen.insert(scope.to_vec(), (schemas.into_text(), visible));
        visible
    }
}

/// Whether a schema list names the `skill` tool.
fn lists_skill(schemas: &str) -> bool {
    #[derive(dsh_plugin_api::serde::Deserialize)]
    #[serde(crate = "dsh_plugin_api::serde")]
    struct Named {
        name: String,
    }
    serde_json::from_str::<Vec<Named>>(schemas)
        .is_ok_and(|schemas| schemas.iter().any(|schema| schema.name == tool::NAME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_sees_the_tool_by_its_name_only() {
        assert!(lists_skill(
            r#"[{"name":"bash","description":"skill"},{"name":"skill"}]"#
        ));
        assert!(!lists_skill(r#"[{"name":"bash","description":"skill"}]"#));
        assert!(!lists_skill("not json"));
    }
}
