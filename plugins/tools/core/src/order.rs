//! The deterministic order of a request's tool list.
//!
//! The tool list sits in the cached prefix of every request, so the same tool set must yield
//! the same bytes on every machine: configured names first, in their configured places, and the
//! rest by UTF-16 code-unit order of their names (JavaScript's string order, which the reference
//! uses), never by locale.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashSet};

use dsh_protocol::ToolSchema;

/// The marker inside a configured order saying where unlisted tools go.
pub const TOOL_ORDER_REST: &str = "<unlisted-tools>";

/// A configured tool order, or the default pure code-unit order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolOrder {
    configured: Option<Vec<String>>,
}

/// A tool order that cannot be applied. Loud by design: a misspelt name in the configured
/// order would otherwise silently reorder the prompt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderError {
    #[error("toolOrder lists \"{0}\" more than once")]
    Duplicate(String),
    #[error(
        "toolOrder must contain the \"{TOOL_ORDER_REST}\" rest entry (where unlisted tools are inserted)"
    )]
    MissingRest,
    #[error(
        "toolOrder lists unregistered tool{plural} {quoted}; known tools: {known_list}",
        plural = if names.len() > 1 { "s" } else { "" },
        quoted = names.iter().map(|name| format!("\"{name}\"")).collect::<Vec<_>>().join(", "),
        known_list = if known.is_empty() { "(none)".to_owned() } else { known.join(", ") }
    )]
    Unregistered {
        names: Vec<String>,
        known: Vec<String>,
    },
    #[error(
        "tool provider returned reserved tool name \"{TOOL_ORDER_REST}\" (reserved for toolOrder's rest entry)"
    )]
    ReservedName,
}

impl ToolOrder {
    /// No configuration: every tool in code-unit order of its name.
    pub fn code_unit() -> Self {
        Self::default()
    }

    /// The reference's `toolOrder`: names in order with [`TOOL_ORDER_REST`] exactly once, where
    /// unlisted tools go. Duplicates and a missing rest entry fail here, at load; names are
    /// checked against registrations when the order is applied.
    pub fn configured(names: Vec<String>) -> Result<Self, OrderError> {
        let mut seen = HashSet::new();
        for name in &names {
            if !seen.insert(name.as_str()) {
                return Err(OrderError::Duplicate(name.clone()));
            }
        }
        if !seen.contains(TOOL_ORDER_REST) {
            return Err(OrderError::MissingRest);
        }
        Ok(Self {
            configured: Some(names),
        })
    }

    /// Listed names first, then every other tool: [`configured`](Self::configured) with the rest
    /// entry appended when the list does not place it.
    pub fn listed_then_rest(mut names: Vec<String>) -> Result<Self, OrderError> {
        if !names.iter().any(|name| name == TOOL_ORDER_REST) {
            names.push(TOOL_ORDER_REST.to_owned());
        }
        Self::configured(names)
    }

    pub fn names(&self) -> Option<&[String]> {
        self.configured.as_deref()
    }
}

/// Compare two names by UTF-16 code units, as JavaScript's `<` does. Differs from Rust's
/// `str` order (code points) only between supplementary characters and U+E000..U+FFFF, but
/// those must sort the same as in the reference too.
pub fn compare_code_units(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Order one scope's schemas. `known` are the names the scope knows before restrictions: a
/// configured name that is known but hidden in this scope is skipped, an unknown one fails.
pub fn order_schemas(
    mut tools: Vec<ToolSchema>,
    order: &ToolOrder,
    known: &BTreeSet<String>,
) -> Result<Vec<ToolSchema>, OrderError> {
    if tools.iter().any(|tool| tool.name == TOOL_ORDER_REST) {
        return Err(OrderError::ReservedName);
    }
    tools.sort_by(|a, b| compare_code_units(&a.name, &b.name));
    let Some(configured) = order.names() else {
        return Ok(tools);
    };
    let unknown: Vec<String> = configured
        .iter()
        .filter(|name| *name != TOOL_ORDER_REST && !known.contains(*name))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        let mut known: Vec<String> = known.iter().cloned().collect();
        known.sort_by(|a, b| compare_code_units(a, b));
        return Err(OrderError::Unregistered {
            names: unknown,
            known,
        });
    }
    let listed: HashSet<&str> = configured.iter().map(String::as_str).collect();
    let (listed_tools, rest): (Vec<ToolSchema>, Vec<ToolSchema>) = tools
        .into_iter()
        .partition(|tool| listed.contains(tool.name.as_str()));
    let mut listed_tools: Vec<Option<ToolSchema>> = listed_tools.into_iter().map(Some).collect();
    let mut rest = Some(rest);
    let mut ordered = Vec::new();
    for name in configured {
        if name == TOOL_ORDER_REST {
            ordered.extend(rest.take().into_iter().flatten());
        } else if let Some(slot) = listed_tools
            .iter_mut()
            .find(|slot| slot.as_ref().is_some_and(|tool| &tool.name == name))
        {
            ordered.extend(slot.take());
        }
    }
    Ok(ordered)
}
