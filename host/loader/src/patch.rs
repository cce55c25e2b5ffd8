//! Layers and their composition: row lists, patch lists, and the patch rules.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_norway::Value;

use crate::error::ComposeError;
use crate::locate::{Step, join};
use crate::row::{ComposedRow, RowBuilder, find, find_mut, parse_fields};
use crate::source::{Defined, Source};
use crate::tags;

/// One config layer: a label for provenance and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    /// Shown by dumps and warnings, e.g. `bundle base`, `home patch`, `--patch extra.yml`.
    pub label: String,
    /// The text and the file it came from.
    pub source: LayerSource,
}

/// The text of a layer and its format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayerSource {
    /// A bundle or patch layer: `- insert: [rows]` and `- id: x ...` entries.
    PatchList(String, PathBuf),
    /// A plain list of rows (`--config FILE`), appended at the root.
    RowList(String, PathBuf),
}

impl Layer {
    /// A patch-list layer.
    pub fn patch_list(
        label: impl Into<String>,
        text: impl Into<String>,
        path: impl Into<PathBuf>,
    ) -> Self {
        Self {
            label: label.into(),
            source: LayerSource::PatchList(text.into(), path.into()),
        }
    }

    /// A row-list layer.
    pub fn row_list(
        label: impl Into<String>,
        text: impl Into<String>,
        path: impl Into<PathBuf>,
    ) -> Self {
        Self {
            label: label.into(),
            source: LayerSource::RowList(text.into(), path.into()),
        }
    }

    /// The file the layer came from.
    pub fn path(&self) -> &Path {
        match &self.source {
            LayerSource::PatchList(_, path) | LayerSource::RowList(_, path) => path,
        }
    }
}

/// The composed tree: rows with provenance, plus the warnings composition produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Composed {
    /// The top-level rows in file order.
    pub rows: Vec<ComposedRow>,
    /// Skipped patches, generated ids, ...; each names the file (with line) and the row id.
    pub warnings: Vec<String>,
}

impl Composed {
    /// A row anywhere in the tree.
    pub fn find(&self, id: &str) -> Option<&ComposedRow> {
        find(&self.rows, id)
    }

    /// Every row of the tree, depth first.
    pub fn all_rows(&self) -> Vec<&ComposedRow> {
        self.rows.iter().flat_map(ComposedRow::walk).collect()
    }

    fn ids(&self) -> HashSet<String> {
        self.all_rows().into_iter().map(|r| r.id.clone()).collect()
    }
}

/// Applies `layers` in order to an empty tree.
pub fn compose(layers: &[Layer]) -> Result<Composed, ComposeError> {
    let mut composed = Composed::default();
    for layer in layers {
        apply_layer(&mut composed, layer)?;
    }
    Ok(composed)
}

/// Reads a plain row list (`--config FILE`) as the only layer.
pub fn compose_row_list(label: &str, text: &str, path: &Path) -> Result<Composed, ComposeError> {
    compose(&[Layer::row_list(label, text, path)])
}

/// Applies one layer to the tree.
pub fn apply_layer(composed: &mut Composed, layer: &Layer) -> Result<(), ComposeError> {
    let mut defined = Defined::default();
    match &layer.source {
        LayerSource::RowList(text, path) => {
            let src = Source::new(text, path.display().to_string());
            let items = src.parse_list("rows (`- id: ...`)")?;
            let mut rows = Vec::new();
            let mut warnings = Vec::new();
            let mut builder = RowBuilder {
                src: &src,
                layer: &layer.label,
                defined: &mut defined,
                warnings: &mut warnings,
            };
            for (i, item) in items.iter().enumerate() {
                rows.push(builder.row(item, &[Step::Index(i)])?);
            }
            composed.warnings.append(&mut warnings);
            let existing = composed.ids();
            let kept = drop_existing(rows, &existing, composed, &layer.label);
            composed.rows.extend(kept);
        }
        LayerSource::PatchList(text, path) => {
            let src = Source::new(text, path.display().to_string());
            let items = src.parse_list("patch entries (`- insert: [...]` or `- id: ...`)")?;
            for (i, item) in items.iter().enumerate() {
                apply_entry(
                    composed,
                    &src,
                    &layer.label,
                    &mut defined,
                    item,
                    &[Step::Index(i)],
                )?;
            }
        }
    }
    Ok(())
}

/// Rows whose id already exists in the tree (from an earlier layer) are skipped with a warning.
fn drop_existing(
    rows: Vec<ComposedRow>,
    existing: &HashSet<String>,
    composed: &mut Composed,
    label: &str,
) -> Vec<ComposedRow> {
    let mut kept = Vec::new();
    for mut row in rows {
        if existing.contains(&row.id) {
            let from = composed
                .find(&row.id)
                .map(|r| r.layer.clone())
                .unwrap_or_default();
            composed.warnings.push(format!(
                "{}: row `{}` already exists (from layer `{from}`); the row inserted by layer `{label}` is skipped",
                row.file, row.id
            ));
            continue;
        }
        row.children = drop_existing(std::mem::take(&mut row.children), existing, composed, label);
        kept.push(row);
    }
    kept
}

fn apply_entry(
    composed: &mut Composed,
    src: &Source<'_>,
    label: &str,
    defined: &mut Defined,
    item: &Value,
    path: &[Step],
) -> Result<(), ComposeError> {
    let Value::Mapping(map) = item else {
        return Err(src.invalid(
            path,
            "a patch entry must be a mapping (`- insert: [...]` or `- id: ...`)",
        ));
    };
    if map.contains_key("insert") {
        return apply_insert(composed, src, label, defined, map, path);
    }
    let fields = parse_fields(src, item, path)?;
    let Some(id) = fields.id.clone() else {
        let pos = src.pos(path);
        composed
            .warnings
            .push(format!("{pos}: patch entry without `id`; skipped"));
        return Ok(());
    };
    let pos = src.pos(&join(path, Step::Value("id".into())));
    let warn = |composed: &mut Composed, msg: String| {
        composed
            .warnings
            .push(format!("{pos}: row `{id}`: {msg}; patch skipped"));
    };
    let Some(target) = composed.find(&id) else {
        warn(composed, "no row has this id".into());
        return Ok(());
    };
    if let Some(name) = &fields.name
        && name != target.effective_name()
    {
        let msg = format!(
            "`name: {name}` differs from the row's `{}`",
            target.effective_name()
        );
        warn(composed, msg);
        return Ok(());
    }
    let group = fields.group.unwrap_or(target.group);
    if group != target.group && fields.config.is_none() {
        warn(composed, "changing `group` needs a new `config` too".into());
        return Ok(());
    }
    let subtree: HashSet<String> = target.walk().into_iter().map(|r| r.id.clone()).collect();
    let config_path = join(path, Step::Value("config".into()));
    let mut children = None;
    if let Some(config) = &fields.config {
        if group {
            let mut warnings = Vec::new();
            let rows = RowBuilder {
                src,
                layer: label,
                defined,
                warnings: &mut warnings,
            }
            .children(config, &config_path)?;
            composed.warnings.append(&mut warnings);
            let outside: HashSet<String> = composed.ids().difference(&subtree).cloned().collect();
            children = Some(drop_existing(rows, &outside, composed, label));
        } else {
            tags::check_config(config).map_err(|p| crate::row::tag_error(src, &config_path, p))?;
        }
    }
    let Some(target) = find_mut(&mut composed.rows, &id) else {
        return Ok(());
    };
    if let Some(config) = fields.config {
        target.config = if group {
            None
        } else {
            Some(config).filter(|v| !v.is_null())
        };
        target.children = children.unwrap_or_default();
    }
    if let Some(disabled) = fields.disabled {
        target.disabled = Some(disabled).filter(|v| !v.is_null());
    }
    if let Some(inject) = fields.inject {
        target.inject = inject;
    }
    if let Some(isolate) = fields.isolate {
        target.isolate = isolate;
    }
    target.group = group;
    target.layer = label.to_owned();
    target.file = src.file.clone();
    Ok(())
}

fn apply_insert(
    composed: &mut Composed,
    src: &Source<'_>,
    label: &str,
    defined: &mut Defined,
    map: &serde_norway::Mapping,
    path: &[Step],
) -> Result<(), ComposeError> {
    let mut into = None;
    for (key, value) in map {
        match key.as_str() {
            Some("insert") => {}
            Some("id") => match value {
                Value::String(id) if !id.is_empty() => into = Some(id.clone()),
                _ => {
                    return Err(src.invalid(
                        &join(path, Step::Value("id".into())),
                        "`id` must be a non-empty string",
                    ));
                }
            },
            Some(other) => {
                return Err(src.invalid(
                    &join(path, Step::Key(other.to_owned())),
                    format!("unknown field `{other}` in an insert entry (expected insert, id)"),
                ));
            }
            None => return Err(src.invalid(path, "patch entry field names must be strings")),
        }
    }
    let rows_path = join(path, Step::Value("insert".into()));
    let rows = match map.get("insert") {
        Some(Value::Sequence(_) | Value::Null) | None => {
            let list = map.get("insert").cloned().unwrap_or(Value::Null);
            let mut warnings = Vec::new();
            // `children` reads a list of rows exactly as a group's config.
            let rows = RowBuilder {
                src,
                layer: label,
                defined,
                warnings: &mut warnings,
            }
            .children(&list, &rows_path)?;
            composed.warnings.append(&mut warnings);
            rows
        }
        Some(_) => return Err(src.invalid(&rows_path, "`insert` must be a list of rows")),
    };
    let existing = composed.ids();
    let Some(target_id) = into else {
        let rows = drop_existing(rows, &existing, composed, label);
        composed.rows.extend(rows);
        return Ok(());
    };
    let pos = src.pos(&join(path, Step::Value("id".into())));
    match composed.find(&target_id) {
        None => composed.warnings.push(format!(
            "{pos}: row `{target_id}`: no row has this id; insert skipped"
        )),
        Some(target) if !target.group => composed.warnings.push(format!(
            "{pos}: row `{target_id}`: not a group (`group: true`); insert skipped"
        )),
        Some(_) => {
            let rows = drop_existing(rows, &existing, composed, label);
            if let Some(target) = find_mut(&mut composed.rows, &target_id) {
                target.children.extend(rows);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "patch_tests.rs"]
mod tests;
