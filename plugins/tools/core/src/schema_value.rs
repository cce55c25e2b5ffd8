//! Validation of a JSON value against a schema already accepted by [`check_schema`].
//!
//! Diagnostics are the reference's: a quoted path (`"file_path"`, `"todos[0].status"`, or
//! `"arguments"` for the root of a tool's arguments) followed by the broken rule. Every
//! violation is reported, in schema-walk order, so the model can fix all of them in one retry.
//!
//! [`check_schema`]: crate::check_schema

use serde_json::{Map, Value};

use crate::schema_check::{SCHEMA_TYPES, is_json_integer, is_json_number, scalar_eq};

/// Validate `value` against a checked `schema`. `root` labels the root in diagnostics (the
/// reference uses `value` for outputs); the empty string means "tool arguments": properties are
/// then named bare (`"file_path"`) and the root itself reads `"arguments"`.
///
/// Returns every violation; empty means valid. The schema must have passed
/// [`check_schema`](crate::check_schema): unknown keywords here are ignored, not refused.
pub fn validate_value(schema: &Value, value: &Value, root: &str) -> Vec<String> {
    let mut violations = Vec::new();
    validate_node(schema, value, root, &mut violations);
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

fn validate_node(schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    let Value::Object(schema) = schema else {
        return;
    };
    if let Some(Value::Array(branches)) = schema.get("oneOf") {
        let matches = branches
            .iter()
            .filter(|branch| validate_value(branch, value, path).is_empty())
            .count();
        if matches != 1 {
            out.push(format!(
                "\"{}\" must match exactly one oneOf branch (matched {matches})",
                shown(path)
            ));
        }
        return;
    }
    let Some(schema_type) = schema.get("type").and_then(Value::as_str) else {
        // Annotation-only: any JSON value. A parsed `serde_json::Value` is always lossless
        // JSON, so the reference's lossless check has nothing left to reject.
        return;
    };
    if !SCHEMA_TYPES.contains(&schema_type) {
        return;
    }
    let type_ok = match schema_type {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => is_json_integer(value),
        "boolean" => value.is_boolean(),
        _ => value.is_null(),
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
    match (schema_type, value) {
        ("object", Value::Object(object)) => validate_object(schema, object, path, out),
        ("array", Value::Array(items)) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    validate_node(item_schema, item, &format!("{path}[{index}]"), out);
                }
            }
        }
        ("number", _) if !is_json_number(value) => {
            out.push(format!("\"{}\" must be a finite JSON number", shown(path)));
        }
        _ => validate_literals(schema, value, path, out),
    }
}

fn validate_object(
    schema: &Map<String, Value>,
    object: &Map<String, Value>,
    path: &str,
    out: &mut Vec<String>,
) {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
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
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        for key in object.keys().filter(|key| !properties.contains_key(*key)) {
            out.push(format!(
                "\"{}\" is not a declared property (additionalProperties: false)",
                property_path(path, key)
            ));
        }
    }
}

fn validate_literals(
    schema: &Map<String, Value>,
    value: &Value,
    path: &str,
    out: &mut Vec<String>,
) {
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.iter().any(|entry| scalar_eq(entry, value))
    {
        out.push(format!(
            "\"{}\" must be one of {}",
            shown(path),
            js_json(&Value::Array(allowed.clone()))
        ));
        return;
    }
    if let Some(constant) = schema.get("const")
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
