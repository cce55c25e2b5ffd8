//! Rows of the composed tree and the validation of a row's fields.

use std::collections::BTreeMap;

use serde_norway::{Mapping, Value};

use crate::error::ComposeError;
use crate::locate::{Step, join};
use crate::source::{Defined, Source};
use crate::tags::{self, TagProblem};

/// The fields a row may have.
pub const ROW_FIELDS: [&str; 7] = [
    "id", "name", "config", "disabled", "inject", "group", "isolate",
];

/// Where a service of an `isolate` map lives for this row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IsolateTarget {
    /// `service: true`: a realm private to the row.
    Private,
    /// `service: label`: the realm shared by rows giving the same label.
    Named(String),
}

/// A row of the composed tree, still holding its YAML (tags unresolved).
#[derive(Clone, Debug, PartialEq)]
pub struct ComposedRow {
    /// Unique across the tree.
    pub id: String,
    /// The plugin library (`lib` or `lib/export`); `None` only for a group that gives none.
    pub name: Option<String>,
    /// The `config` of a non-group row (`None` when absent or null). Groups hold `children`.
    pub config: Option<Value>,
    /// The rows of a group (its `config` list); empty for other rows.
    pub children: Vec<ComposedRow>,
    /// `disabled` as written: a boolean or a tag (`None` when absent or null).
    pub disabled: Option<Value>,
    /// Extra required services (`None` when absent).
    pub inject: Option<Vec<String>>,
    /// Whether the row is a group.
    pub group: bool,
    /// Isolated services (`None` when absent).
    pub isolate: Option<BTreeMap<String, IsolateTarget>>,
    /// Label of the layer that last inserted or patched the row.
    pub layer: String,
    /// The file of that layer.
    pub file: String,
}

impl ComposedRow {
    /// The name the runtime uses: the row's `name`, or `group` for a group without one.
    pub fn effective_name(&self) -> &str {
        self.name.as_deref().unwrap_or("group")
    }

    /// This row and all its descendants, depth first.
    pub fn walk(&self) -> Vec<&ComposedRow> {
        let mut out = vec![self];
        for child in &self.children {
            out.extend(child.walk());
        }
        out
    }
}

/// The fields of a row or patch entry, checked for type but not yet for completeness.
/// A present-but-null field is `Some(Value::Null)` / `Some(None)`.
#[derive(Default)]
pub(crate) struct RowFields {
    pub(crate) id: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) config: Option<Value>,
    pub(crate) disabled: Option<Value>,
    pub(crate) inject: Option<Option<Vec<String>>>,
    pub(crate) group: Option<bool>,
    pub(crate) isolate: Option<Option<BTreeMap<String, IsolateTarget>>>,
}

/// Checks the keys and field types of a row mapping at `path`.
pub(crate) fn parse_fields(
    src: &Source<'_>,
    value: &Value,
    path: &[Step],
) -> Result<RowFields, ComposeError> {
    let Value::Mapping(map) = value else {
        return Err(src.invalid(path, "a row must be a mapping (`id: ...`, `name: ...`)"));
    };
    let mut fields = RowFields::default();
    for (key, item) in map {
        let Value::String(key) = key else {
            return Err(src.invalid(path, "row field names must be strings"));
        };
        let at = join(path, Step::Value(key.clone()));
        match key.as_str() {
            "id" => fields.id = Some(text_field(src, item, &at, "id")?),
            "name" => {
                let name = text_field(src, item, &at, "name")?;
                if name.split('/').count() > 2 || name.split('/').any(str::is_empty) {
                    return Err(src.invalid(
                        &at,
                        format!(
                            "`name: {name}`: expected a library name, optionally `library/export`"
                        ),
                    ));
                }
                fields.name = Some(name);
            }
            "config" => fields.config = Some(item.clone()),
            "disabled" => {
                tags::check_disabled(item).map_err(|p| tag_error(src, &at, p))?;
                fields.disabled = Some(item.clone());
            }
            "inject" => fields.inject = Some(parse_inject(src, item, &at)?),
            "group" => {
                fields.group = Some(match item {
                    Value::Bool(b) => *b,
                    Value::Null => false,
                    _ => return Err(src.invalid(&at, "`group` must be true or false")),
                });
            }
            "isolate" => fields.isolate = Some(parse_isolate(src, item, &at)?),
            other => {
                return Err(src.invalid(
                    &join(path, Step::Key(other.to_owned())),
                    format!(
                        "unknown row field `{other}` (expected one of {})",
                        ROW_FIELDS.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(fields)
}

fn text_field(
    src: &Source<'_>,
    item: &Value,
    at: &[Step],
    field: &str,
) -> Result<String, ComposeError> {
    match item {
        Value::String(s) if !s.is_empty() && !s.chars().any(char::is_whitespace) => Ok(s.clone()),
        _ => Err(src.invalid(
            at,
            format!("`{field}` must be a non-empty string without spaces"),
        )),
    }
}

fn parse_inject(
    src: &Source<'_>,
    item: &Value,
    at: &[Step],
) -> Result<Option<Vec<String>>, ComposeError> {
    match item {
        Value::Null => Ok(None),
        Value::Sequence(items) => items
            .iter()
            .enumerate()
            .map(|(i, s)| text_field(src, s, &join(at, Step::Index(i)), "inject[]"))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        _ => Err(src.invalid(at, "`inject` must be a list of service names")),
    }
}

fn parse_isolate(
    src: &Source<'_>,
    item: &Value,
    at: &[Step],
) -> Result<Option<BTreeMap<String, IsolateTarget>>, ComposeError> {
    let map: &Mapping = match item {
        Value::Null => return Ok(None),
        Value::Mapping(map) => map,
        _ => return Err(src.invalid(at, "`isolate` must map service names to `true` or a label")),
    };
    let mut out = BTreeMap::new();
    for (key, target) in map {
        let Value::String(service) = key else {
            return Err(src.invalid(at, "`isolate` keys must be service names"));
        };
        let here = join(at, Step::Value(service.clone()));
        let target = match target {
            Value::Bool(true) => IsolateTarget::Private,
            Value::String(label) if !label.is_empty() => IsolateTarget::Named(label.clone()),
            _ => {
                return Err(src.invalid(
                    &here,
                    format!("`isolate.{service}` must be `true` or a realm label"),
                ));
            }
        };
        out.insert(service.clone(), target);
    }
    Ok(Some(out))
}

/// A tag problem found while reading, as an error at the offending node.
pub(crate) fn tag_error(src: &Source<'_>, at: &[Step], problem: TagProblem) -> ComposeError {
    let mut path = at.to_vec();
    path.extend(problem.path);
    let message = if problem.unknown {
        format!(
            "unknown tag `{}` (known tags: !env, !home, !platform)",
            problem.message
        )
    } else {
        problem.message
    };
    src.invalid(&path, message)
}

/// Everything needed to build rows of one layer.
pub(crate) struct RowBuilder<'s, 'a> {
    pub(crate) src: &'s Source<'a>,
    pub(crate) layer: &'s str,
    pub(crate) defined: &'s mut Defined,
    pub(crate) warnings: &'s mut Vec<String>,
}

impl RowBuilder<'_, '_> {
    /// Reads a complete row (and, for a group, its children) at `path`.
    pub(crate) fn row(
        &mut self,
        value: &Value,
        path: &[Step],
    ) -> Result<ComposedRow, ComposeError> {
        let fields = parse_fields(self.src, value, path)?;
        let group = fields.group.unwrap_or(false);
        if fields.name.is_none() && !group {
            let which = fields
                .id
                .as_deref()
                .map(|id| format!("row `{id}`"))
                .unwrap_or("row".into());
            return Err(self.src.invalid(
                path,
                format!("{which} has no `name` (the plugin library to mount)"),
            ));
        }
        let id = match fields.id {
            Some(id) => {
                self.defined
                    .define(self.src, &id, &join(path, Step::Value("id".into())))?;
                id
            }
            None => {
                let id = self.generated_id(fields.name.as_deref().unwrap_or("group"), path);
                self.defined.define(self.src, &id, path)?;
                id
            }
        };
        let mut row = ComposedRow {
            id,
            name: fields.name,
            config: None,
            children: Vec::new(),
            disabled: fields.disabled.filter(|v| !v.is_null()),
            inject: fields.inject.flatten(),
            group,
            isolate: fields.isolate.flatten(),
            layer: self.layer.to_owned(),
            file: self.src.file.clone(),
        };
        let config = fields.config.unwrap_or(Value::Null);
        let config_path = join(path, Step::Value("config".into()));
        if group {
            row.children = self.children(&config, &config_path)?;
        } else {
            tags::check_config(&config).map_err(|p| tag_error(self.src, &config_path, p))?;
            row.config = Some(config).filter(|v| !v.is_null());
        }
        Ok(row)
    }

    /// Reads the `config` of a group: a list of rows.
    pub(crate) fn children(
        &mut self,
        config: &Value,
        path: &[Step],
    ) -> Result<Vec<ComposedRow>, ComposeError> {
        match config {
            Value::Null => Ok(Vec::new()),
            Value::Sequence(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| self.row(item, &join(path, Step::Index(i))))
                .collect(),
            _ => Err(self
                .src
                .invalid(path, "the `config` of a group row must be a list of rows")),
        }
    }

    /// `name@file:line`, stable for the same text; warns that the row has no id.
    fn generated_id(&mut self, name: &str, path: &[Step]) -> String {
        let pos = self.src.pos(path);
        let mut id = format!("{name}@{}:{}", self.src.stem(), pos.line.unwrap_or(0));
        if self.defined.contains(&id) {
            id = format!("{id}.{}", pos.column.unwrap_or(0));
        }
        self.warnings.push(format!(
            "{pos}: row without `id`; using the generated id `{id}`"
        ));
        id
    }
}

/// Finds a row anywhere in the tree.
pub(crate) fn find<'r>(rows: &'r [ComposedRow], id: &str) -> Option<&'r ComposedRow> {
    rows.iter().find_map(|row| {
        if row.id == id {
            Some(row)
        } else {
            find(&row.children, id)
        }
    })
}

/// Finds a row anywhere in the tree, mutably.
pub(crate) fn find_mut<'r>(rows: &'r mut [ComposedRow], id: &str) -> Option<&'r mut ComposedRow> {
    for row in rows {
        if row.id == id {
            return Some(row);
        }
        if let Some(found) = find_mut(&mut row.children, id) {
            return Some(found);
        }
    }
    None
}

#[cfg(test)]
#[path = "row_tests.rs"]
mod tests;
