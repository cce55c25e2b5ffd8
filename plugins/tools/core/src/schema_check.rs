//! The enforced JSON Schema subset, checked when a schema is declared.
//!
//! The subset is the reference's (`packages/core/tools/src/json-schema.ts`): one scalar `type`,
//! object `properties` / `required` / boolean `additionalProperties`, array `items`, type-correct
//! scalar `enum` / `const`, exact-one `oneOf`, and the annotations `description`, `title`,
//! `default`, `examples`. Anything else (`anyOf`, `minimum`, `maxLength`, `$ref`, ...) is refused
//! rather than accepted and silently not enforced: a schema the model reads must be a schema the
//! registry enforces. Violation texts are the reference's, so diagnostics read the same.

use serde::Deserialize;
use serde_json::Value;

use crate::schema::{Keywords, Node, Scalar, Schema};

/// The keywords the validator enforces.
const CONSTRAINT_KEYWORDS: [&str; 8] = [
    "type",
    "oneOf",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
];

/// Keywords that carry no validation meaning.
const ANNOTATION_KEYWORDS: [&str; 4] = ["description", "title", "default", "examples"];

/// The single-type vocabulary, in the reference's order (it appears in a diagnostic).
pub(crate) const SCHEMA_TYPES: [&str; 7] = [
    "object", "array", "string", "number", "integer", "boolean", "null",
];

/// Deepest accepted schema nesting. Not a reference rule: the reference walks iteratively, we
/// recurse, so a bound at declaration keeps both this check and argument validation (whose depth
/// follows the schema's) far from the stack limit.
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// A schema outside the enforced subset. Lists every violation, not just the first, so an
/// author fixes a schema in one round.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported JSON schema: {}", .violations.join("; "))]
pub struct SchemaError {
    /// Individual violations in walk order, each naming its path (`schema.properties.x.type`).
    pub violations: Vec<String>,
}

impl SchemaError {
    /// The reference's structured error name for this failure.
    pub const NAME: &'static str = "JsonSchemaError";
    /// The reference's code for this failure.
    pub const CODE: &'static str = "UNSUPPORTED_SCHEMA";
}

/// Check that `schema` uses only the enforced subset and read it into a [`Schema`]. Any JSON
/// root is allowed, including the annotation-only schema `{}` meaning "any JSON value".
pub fn check_schema(schema: &Value) -> Result<Schema, SchemaError> {
    let mut violations = Vec::new();
    let root = check_node(schema.clone(), "schema", 0, &mut violations);
    if violations.is_empty() {
        Ok(Schema(root))
    } else {
        Err(SchemaError { violations })
    }
}

/// [`check_schema`] plus the object root tool arguments need: the model always sends an
/// argument object, so a tool whose parameters are not an object schema could never be called.
pub fn check_object_schema(schema: &Value) -> Result<Schema, SchemaError> {
    let checked = check_schema(schema)?;
    if checked.is_object() {
        Ok(checked)
    } else {
        Err(SchemaError {
            violations: vec![
                "schema.type must be \"object\" (tool arguments are an object)".to_owned(),
            ],
        })
    }
}

/// Whether a JSON number is lossless in the reference's sense: finite (always true for a
/// `serde_json` number) and not negative zero, which JSON cannot round-trip through JavaScript.
pub(crate) fn is_json_number(value: &Value) -> bool {
    match value {
        Value::Number(number) => number
            .as_f64()
            .is_none_or(|f| !(f == 0.0 && f.is_sign_negative())),
        _ => false,
    }
}

/// Whether a number is integral the way JavaScript's `Number.isInteger` sees it (`1.0` is).
pub(crate) fn is_json_integer(value: &Value) -> bool {
    let Value::Number(number) = value else {
        return false;
    };
    if number.is_i64() || number.is_u64() {
        return true;
    }
    is_json_number(value) && number.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// Whether a literal fits one scalar schema type.
pub(crate) fn scalar_matches(schema_type: &str, value: &Value) -> bool {
    match schema_type {
        "string" => value.is_string(),
        "number" => is_json_number(value),
        "integer" => is_json_integer(value),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => false,
    }
}

/// Equality of two scalar literals as JavaScript's `includes` / `===` see them: numbers compare
/// by value, so `1` and `1.0` are the same literal.
pub(crate) fn scalar_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        _ => a == b,
    }
}

fn check_node(node: Value, path: &str, depth: usize, violations: &mut Vec<String>) -> Node {
    let Value::Object(node) = node else {
        violations.push(format!("{path} must be a schema object"));
        return Node::Any;
    };
    if depth >= MAX_SCHEMA_DEPTH {
        violations.push(format!(
            "{path} nests deeper than {MAX_SCHEMA_DEPTH} schema levels"
        ));
        return Node::Any;
    }
    for key in node.keys() {
        let key = key.as_str();
        if CONSTRAINT_KEYWORDS.contains(&key) || ANNOTATION_KEYWORDS.contains(&key) {
            continue;
        }
        violations.push(format!(
            "{path}.{key} is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)"
        ));
    }
    // Every field takes any JSON value, so reading cannot fail; the arm only avoids a panic.
    let mut keywords = match Keywords::deserialize(Value::Object(node)) {
        Ok(keywords) => keywords,
        Err(error) => {
            violations.push(format!("{path} cannot be read: {error}"));
            return Node::Any;
        }
    };
    for (annotation, value) in [
        ("description", &keywords.description),
        ("title", &keywords.title),
    ] {
        if value.as_ref().is_some_and(|value| !value.is_string()) {
            violations.push(format!("{path}.{annotation} must be a string"));
        }
    }

    let has_type = keywords.kind.is_some();
    if has_type && keywords.one_of.is_some() {
        violations.push(format!("{path} cannot declare both type and oneOf"));
        return Node::Any;
    }
    if let Some(one_of) = keywords.one_of.take() {
        return check_one_of(&keywords, one_of, path, depth, violations);
    }
    if !has_type {
        for (key, declared) in keywords.typed() {
            if declared {
                violations.push(format!("{path}.{key} requires type or oneOf"));
            }
        }
        return Node::Any;
    }
    check_typed(keywords, path, depth, violations)
}

fn check_one_of(
    keywords: &Keywords,
    one_of: Value,
    path: &str,
    depth: usize,
    violations: &mut Vec<String>,
) -> Node {
    let branches = match one_of {
        Value::Array(branches) if branches.len() >= 2 => branches
            .into_iter()
            .enumerate()
            .map(|(index, branch)| {
                check_node(
                    branch,
                    &format!("{path}.oneOf[{index}]"),
                    depth + 1,
                    violations,
                )
            })
            .collect(),
        _ => {
            violations.push(format!(
                "{path}.oneOf must be an array of at least two schemas"
            ));
            Vec::new()
        }
    };
    for (key, declared) in keywords.typed() {
        if declared {
            violations.push(format!("{path}.{key} is not supported beside oneOf"));
        }
    }
    Node::OneOf(branches)
}

fn check_typed(
    mut keywords: Keywords,
    path: &str,
    depth: usize,
    violations: &mut Vec<String>,
) -> Node {
    let schema_type = match &keywords.kind {
        Some(Value::String(name)) if SCHEMA_TYPES.contains(&name.as_str()) => name.clone(),
        Some(Value::Array(_)) => {
            violations.push(format!(
                "{path}.type must be a single type string (type arrays are not supported)"
            ));
            return Node::Any;
        }
        _ => {
            violations.push(format!(
                "{path}.type must be one of {}",
                SCHEMA_TYPES.join("/")
            ));
            return Node::Any;
        }
    };
    let scalar = Scalar::of(&schema_type);
    for (key, declared) in keywords.typed() {
        let allowed = match key {
            "properties" | "required" | "additionalProperties" => schema_type == "object",
            "items" => schema_type == "array",
            _ => scalar.is_some(),
        };
        if declared && !allowed {
            violations.push(format!(
                "{path}.{key} is not supported on type \"{schema_type}\""
            ));
        }
    }
    match scalar {
        Some(kind) => check_literals(&keywords, kind, path, violations),
        None if schema_type == "object" => check_object(keywords, path, depth, violations),
        None => Node::Array {
            items: keywords.items.take().map(|items| {
                Box::new(check_node(
                    items,
                    &format!("{path}.items"),
                    depth + 1,
                    violations,
                ))
            }),
        },
    }
}

fn check_object(
    keywords: Keywords,
    path: &str,
    depth: usize,
    violations: &mut Vec<String>,
) -> Node {
    let declared: Option<Vec<(String, Node)>> = match keywords.properties {
        None => Some(Vec::new()),
        Some(Value::Object(properties)) => Some(
            properties
                .into_iter()
                .map(|(key, child)| {
                    let node = check_node(
                        child,
                        &format!("{path}.properties.{key}"),
                        depth + 1,
                        violations,
                    );
                    (key, node)
                })
                .collect(),
        ),
        Some(_) => {
            violations.push(format!("{path}.properties must be an object of schemas"));
            None
        }
    };
    // A required name must be declared; with no `properties` at all, none is.
    let named = |name: &str| {
        declared
            .as_ref()
            .is_some_and(|declared| declared.iter().any(|(key, _)| key == name))
    };
    let mut required = Vec::new();
    if let Some(names) = keywords.required {
        match names {
            Value::Array(names) if names.iter().all(Value::is_string) => {
                for name in names.into_iter().filter_map(|name| match name {
                    Value::String(name) => Some(name),
                    _ => None,
                }) {
                    if !named(&name) {
                        violations.push(format!(
                            "{path}.required names \"{name}\" which is not in properties"
                        ));
                    }
                    required.push(name);
                }
            }
            _ => violations.push(format!("{path}.required must be an array of strings")),
        }
    }
    let closed = match keywords.additional_properties {
        None => false,
        Some(Value::Bool(open)) => !open,
        Some(_) => {
            violations.push(format!("{path}.additionalProperties must be a boolean"));
            false
        }
    };
    Node::Object {
        properties: declared.unwrap_or_default(),
        required,
        closed,
    }
}

fn check_literals(
    keywords: &Keywords,
    kind: Scalar,
    path: &str,
    violations: &mut Vec<String>,
) -> Node {
    let schema_type = kind.name();
    let allowed = match &keywords.allowed {
        Some(Value::Array(allowed))
            if !allowed.is_empty()
                && allowed
                    .iter()
                    .all(|entry| scalar_matches(schema_type, entry)) =>
        {
            Some(allowed.clone())
        }
        Some(_) => {
            violations.push(format!(
                "{path}.enum must be a non-empty array of {schema_type} values"
            ));
            None
        }
        None => None,
    };
    if let Some(constant) = &keywords.constant {
        if !scalar_matches(schema_type, constant) {
            violations.push(format!("{path}.const must be a {schema_type} value"));
        } else if allowed
            .as_ref()
            .is_some_and(|allowed| !allowed.iter().any(|entry| scalar_eq(entry, constant)))
        {
            violations.push(format!(
                "{path}.const must be one of {path}.enum when both are declared"
            ));
        }
    }
    Node::Scalar {
        kind,
        allowed,
        constant: keywords.constant.clone(),
    }
}
