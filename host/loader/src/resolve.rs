//! The tree the runtime mounts: tags resolved, config as JSON.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::ResolveError;
use crate::patch::Composed;
use crate::row::{ComposedRow, IsolateTarget};
use crate::tags::{TagContext, resolve_config, resolve_disabled};

/// A row ready for the runtime.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedRow {
    /// Unique across the tree.
    pub id: String,
    /// The plugin library (`lib` or `lib/export`); `group` for a group without a name.
    pub name: String,
    /// The resolved config; `Null` when absent, and always `Null` for groups.
    pub config: serde_json::Value,
    /// The row's own `disabled`, or'ed with its ancestors' (a disabled group disables its rows).
    pub disabled: bool,
    /// Extra required services.
    pub inject: Vec<String>,
    /// Isolated services.
    pub isolate: BTreeMap<String, IsolateTarget>,
    /// The rows of a group; `None` for other rows.
    pub children: Option<Vec<ResolvedRow>>,
    /// Label of the layer that last inserted or patched the row.
    pub layer: String,
}

impl ResolvedRow {
    /// This row and its descendants, depth first.
    pub fn walk(&self) -> Vec<&ResolvedRow> {
        let mut out = vec![self];
        for child in self.children.iter().flatten() {
            out.extend(child.walk());
        }
        out
    }
}

/// Finds a resolved row anywhere in a tree.
pub fn find_resolved<'r>(rows: &'r [ResolvedRow], id: &str) -> Option<&'r ResolvedRow> {
    rows.iter().find_map(|row| {
        if row.id == id {
            Some(row)
        } else {
            find_resolved(row.children.as_deref()?, id)
        }
    })
}

impl Composed {
    /// Resolves tags against `env` and `home` (`$DSH_HOME`) on the current platform.
    ///
    /// A `config` that fails to resolve is an error for enabled rows; a disabled row is not
    /// mounted, so its unresolvable config becomes `Null` instead.
    pub fn resolve(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
        home: &Path,
    ) -> Result<Vec<ResolvedRow>, ResolveError> {
        self.resolve_with(&TagContext::new(env, home))
    }

    /// [`Composed::resolve`] with an explicit context (e.g. another platform).
    pub fn resolve_with(&self, ctx: &TagContext<'_>) -> Result<Vec<ResolvedRow>, ResolveError> {
        self.rows
            .iter()
            .map(|row| resolve_row(row, ctx, false))
            .collect()
    }
}

fn resolve_row(
    row: &ComposedRow,
    ctx: &TagContext<'_>,
    parent_disabled: bool,
) -> Result<ResolvedRow, ResolveError> {
    let wrap = |error| ResolveError {
        row: row.id.clone(),
        error,
    };
    let disabled = parent_disabled || resolve_disabled(row.disabled.as_ref(), ctx).map_err(wrap)?;
    let config = match &row.config {
        None => serde_json::Value::Null,
        Some(config) => match resolve_config(config, ctx, "config") {
            Ok(value) => value,
            Err(_) if disabled => serde_json::Value::Null,
            Err(error) => return Err(wrap(error)),
        },
    };
    let children = if row.group {
        Some(
            row.children
                .iter()
                .map(|child| resolve_row(child, ctx, disabled))
                .collect::<Result<Vec<_>, _>>()?,
        )
    } else {
        None
    };
    Ok(ResolvedRow {
        id: row.id.clone(),
        name: row.effective_name().to_owned(),
        config,
        disabled,
        inject: row.inject.clone().unwrap_or_default(),
        isolate: row.isolate.clone().unwrap_or_default(),
        children,
        layer: row.layer.clone(),
    })
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
