//! Which rows a config reload adds, removes or changes.

use std::collections::HashMap;

use crate::resolve::ResolvedRow;

/// Row ids by what happened to them between two resolved trees.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowDiff {
    /// Ids only in the new tree (in its depth-first order).
    pub added: Vec<String>,
    /// Ids only in the old tree (in its depth-first order).
    pub removed: Vec<String>,
    /// Ids in both whose own fields differ (in the new tree's order).
    pub changed: Vec<String>,
}

impl RowDiff {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Compares two trees by id, children included.
///
/// A row is changed when its name, config, disabled state, inject list, isolate map, group-ness
/// or parent differs. The layer label is provenance only and does not count, nor does order
/// (rows have no load order). A group whose children changed is not itself changed unless its
/// own fields did; the changed children are listed.
pub fn diff(old: &[ResolvedRow], new: &[ResolvedRow]) -> RowDiff {
    let old_rows = flatten(old);
    let new_rows = flatten(new);
    let old_by_id: HashMap<&str, &Entry<'_>> =
        old_rows.iter().map(|e| (e.row.id.as_str(), e)).collect();
    let new_by_id: HashMap<&str, &Entry<'_>> =
        new_rows.iter().map(|e| (e.row.id.as_str(), e)).collect();
    let mut out = RowDiff::default();
    for entry in &new_rows {
        match old_by_id.get(entry.row.id.as_str()) {
            None => out.added.push(entry.row.id.clone()),
            Some(before) if !same_fields(before, entry) => out.changed.push(entry.row.id.clone()),
            Some(_) => {}
        }
    }
    for entry in &old_rows {
        if !new_by_id.contains_key(entry.row.id.as_str()) {
            out.removed.push(entry.row.id.clone());
        }
    }
    out
}

struct Entry<'r> {
    row: &'r ResolvedRow,
    parent: Option<&'r str>,
}

fn flatten(rows: &[ResolvedRow]) -> Vec<Entry<'_>> {
    fn go<'r>(rows: &'r [ResolvedRow], parent: Option<&'r str>, out: &mut Vec<Entry<'r>>) {
        for row in rows {
            out.push(Entry { row, parent });
            if let Some(children) = &row.children {
                go(children, Some(&row.id), out);
            }
        }
    }
    let mut out = Vec::new();
    go(rows, None, &mut out);
    out
}

fn same_fields(a: &Entry<'_>, b: &Entry<'_>) -> bool {
    let (x, y) = (a.row, b.row);
    a.parent == b.parent
        && x.name == y.name
        && x.config == y.config
        && x.disabled == y.disabled
        && x.inject == y.inject
        && x.isolate == y.isolate
        && x.children.is_some() == y.children.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(id: &str, config: serde_json::Value) -> ResolvedRow {
        ResolvedRow {
            id: id.into(),
            name: format!("lib-{id}"),
            config,
            disabled: false,
            inject: vec![],
            isolate: Default::default(),
            children: None,
            layer: "bundle base".into(),
        }
    }

    fn group(id: &str, children: Vec<ResolvedRow>) -> ResolvedRow {
        ResolvedRow {
            name: "group".into(),
            children: Some(children),
            ..row(id, json!(null))
        }
    }

    #[test]
    fn identical_trees_have_empty_diff() {
        let tree = vec![
            row("a", json!({"k": 1})),
            group("g", vec![row("b", json!(null))]),
        ];
        let d = diff(&tree, &tree.clone());
        assert!(d.is_empty(), "{d:?}");
    }

    #[test]
    fn added_removed_and_changed_by_id() {
        let old = vec![
            row("a", json!({"k": 1})),
            row("b", json!(null)),
            row("c", json!(2)),
        ];
        let new = vec![
            row("c", json!(2)),
            row("a", json!({"k": 2})),
            row("d", json!(null)),
        ];
        let d = diff(&old, &new);
        assert_eq!(d.added, vec!["d"]);
        assert_eq!(d.removed, vec!["b"]);
        assert_eq!(d.changed, vec!["a"]);
    }

    #[test]
    fn every_own_field_counts_but_layer_does_not() {
        let base = row("a", json!(null));
        let variants = [
            ResolvedRow {
                name: "other".into(),
                ..base.clone()
            },
            ResolvedRow {
                disabled: true,
                ..base.clone()
            },
            ResolvedRow {
                inject: vec!["llm".into()],
                ..base.clone()
            },
            ResolvedRow {
                isolate: [("llm".to_owned(), crate::IsolateTarget::Private)].into(),
                ..base.clone()
            },
            ResolvedRow {
                children: Some(vec![]),
                ..base.clone()
            },
        ];
        for v in variants {
            assert_eq!(
                diff(std::slice::from_ref(&base), std::slice::from_ref(&v)).changed,
                vec!["a"],
                "{v:?}"
            );
        }
        let relabeled = ResolvedRow {
            layer: "home patch".into(),
            ..base.clone()
        };
        assert!(diff(std::slice::from_ref(&base), &[relabeled]).is_empty());
    }

    #[test]
    fn changed_child_lists_child_not_group() {
        let old = vec![group("g", vec![row("b", json!(1)), row("c", json!(1))])];
        let new = vec![group("g", vec![row("b", json!(2)), row("e", json!(1))])];
        let d = diff(&old, &new);
        assert_eq!(d.changed, vec!["b"]);
        assert_eq!(d.added, vec!["e"]);
        assert_eq!(d.removed, vec!["c"]);
    }

    #[test]
    fn group_own_field_change_lists_group() {
        let old = vec![group("g", vec![row("b", json!(1))])];
        let mut new = old.clone();
        new[0].disabled = true;
        assert_eq!(diff(&old, &new).changed, vec!["g"]);
    }

    #[test]
    fn moving_a_row_to_another_parent_is_a_change() {
        let old = vec![row("b", json!(1)), group("g", vec![])];
        let new = vec![group("g", vec![row("b", json!(1))])];
        let d = diff(&old, &new);
        assert_eq!(d.changed, vec!["b"]);
        assert!(d.added.is_empty() && d.removed.is_empty());
    }
}
