//! Validation of a JSON value against a schema already read by [`check_schema`].
//!
//! Diagnostics are the reference's: a quoted path (`"file_path"`, `"todos[0].status"`, or
//! `"arguments"` for the root of a tool's arguments) followed by the broken rule. Every
//! violation is reported, in schema-walk order, so the model can fix all of them in one retry.
//!
//! [`check_schema`]: crate::check_schema

use serde_json::{Map, Value};

use crate::schema::{Node, Scalar, Schema};
use crate::schema_check::{is_json_integer, is_json_number, scalar_eq};

/// Validate `value` against a checked `schema`. `root` labels the root in diagnostics (the
/// reference uses `value` for outputs); the empty string means "tool arguments": properties are
/// then named bare (`"file_path"`) and the root itself reads `"arguments"`.
///
/// Returns every violation; empty means valid.
pub fn validate_value(schema: &Schema, value: &Value, root: &str) -> Vec<String> {
    let mut violations = Vec::new();
    validate_node(&schema.0, value, root, &mut violations);
    violations
}

/// How a path appears inside quotes.
fn shown(path: &str) -> &str {
    if path.is_empty() { "arguments" } else { path }
}

/// A property's path, without a leading dot at the implicit argument root.
fn property_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn validate_node(node: &Node, value: &Value, path: &str, out: &mut Vec<String>) {
    let (schema_type, type_ok) = match node {
        // A parsed `serde_json::Value` is always lossless JSON, so the reference's lossless
        // check has nothing left to reject.
        Node::Any => return,
        Node::OneOf(branches) => {
            let matches = branches
                .iter()
                .filter(|branch| {
                    let mut found = Vec::new();
                    validate_node(branch, value, path, &mut found);
                    found.is_empty()
                })
                .count();
            if matches != 1 {
                out.push(format!(
                    "\"{}\" must match exactly one oneOf branch (matched {matches})",
                    shown(path)
                ));
            }
            return;
        }
        Node::Object { .. } => ("object", value.is_object()),
        Node::Array { .. } => ("array", value.is_array()),
        Node::Scalar { kind, .. } => (
            kind.name(),
            match kind {
                Scalar::String => value.is_string(),
                Scalar::Number => value.is_number(),
                Scalar::Integer => is_json_integer(value),
                Scalar::Boolean => value.is_boolean(),
                Scalar::Null => value.is_null(),
            },
        ),
    };
    if !type_ok {
        let article = match schema_type {
            "object" | "array" | "integer" => "an ",
            "null" => "",
            _ => "a ",
        };
        out.push(format!(
            "\"{}\" must be {article}{schema_type}",
            shown(path)
        ));
        return;
    }
    match (node, value) {
        (
            Node::Object {
                properties,
                required,
                closed,
            },
            Value::Object(object),
        ) => validate_object(properties, required, *closed, object, path, out),
        (Node::Array { items: Some(item) }, Value::Array(values)) => {
            for (index, member) in values.iter().enumerate() {
                validate_node(item, member, &format!("{path}[{index}]"), out);
            }
        }
        (
            Node::Scalar {
                kind: Scalar::Number,
                ..
            },
            _,
        ) if !is_json_number(value) => {
            out.push(format!("\"{}\" must be a finite JSON number", shown(path)));
        }
        (
            Node::Scalar {
                allowed, constant, ..
            },
            _,
        ) => validate_literals(allowed.as_deref(), constant.as_ref(), value, path, out),
        _ => {}
    }
}

fn validate_object(
    properties: &[(String, Node)],
    required: &[String],
    closed: bool,
    object: &Map<String, Value>,
    path: &str,
    out: &mut Vec<String>,
) {
    for name in required {
        if !object.contains_key(name) {
            out.push(format!(
                "missing required property \"{}\"",
                property_path(path, name)
            ));
        }
    }
    for (key, child) in properties {
        if let Some(member) = object.get(key) {
            validate_node(child, member, &property_path(path, key), out);
        }
    }
    if closed {
        let declared = |key: &str| properties.iter().any(|(name, _)| name == key);
        for key in object.keys().filter(|key| !declared(key)) {
            out.push(format!(
                "\"{}\" is not a declared property (additionalProperties: false)",
                property_path(path, key)
            ));
        }
    }
}

fn validate_literals(
    allowed: Option<&[Value]>,
    constant: Option<&Value>,
    value: &Value,
    path: &str,
    out: &mut Vec<String>,
) {
    if let Some(allowed) = allowed
        && !allowed.iter().any(|entry| scalar_eq(entry, value))
    {
        out.push(format!(
            "\"{}\" must be one of {}",
            shown(path),
            js_json(&Value::Array(allowed.to_vec()))
        ));
        return;
    }
    if let Some(constant) = constant
        && !scalar_eq(constant, value)
    {
        out.push(format!("\"{}\" must be {}", shown(path), js_json(constant)));
    }
}

/// `JSON.stringify` of a literal list: integral floats print without `.0`, as JavaScript
/// prints them, so `[1.0]` reads `[1]` in the diagnostic exactly as in the reference.
fn js_json(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(js_json).collect();
            format!("[{}]", inner.join(","))
        }
        Value::Number(number) if number.is_f64() => match number.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
            _ => value.to_string(),
        },
        _ => value.to_string(),
    }
}
