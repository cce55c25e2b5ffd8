//! A JSON Schema of the enforced subset, read once into types.
//!
//! [`check_schema`](crate::check_schema) is the only way to get a [`Schema`]: it reads a schema's
//! keywords into [`Keywords`] (serde, so every keyword is a field, not a key looked up), refuses
//! anything outside the subset, and keeps the accepted rules as [`Node`]s. Validation then walks
//! the nodes on every call instead of re-reading the schema's JSON.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// An accepted schema, ready to validate values against.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema(pub(crate) Node);

impl Schema {
    /// Whether the root is an object schema (tool arguments need one).
    pub fn is_object(&self) -> bool {
        matches!(self.0, Node::Object { .. })
    }
}

/// One accepted schema level.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// Annotation-only (`{}`): any JSON value.
    Any,
    /// Exactly one branch must match.
    OneOf(Vec<Node>),
    Object {
        /// In declaration order (diagnostics follow it).
        properties: Vec<(String, Node)>,
        required: Vec<String>,
        /// `additionalProperties: false`.
        closed: bool,
    },
    Array {
        items: Option<Box<Node>>,
    },
    Scalar {
        kind: Scalar,
        allowed: Option<Vec<Value>>,
        constant: Option<Value>,
    },
}

/// The scalar types of the subset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    String,
    Number,
    Integer,
    Boolean,
    Null,
}

impl Scalar {
    pub(crate) fn of(name: &str) -> Option<Self> {
        Some(match name {
            "string" => Self::String,
            "number" => Self::Number,
            "integer" => Self::Integer,
            "boolean" => Self::Boolean,
            "null" => Self::Null,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Number => "number",
            Self::Integer => "integer",
            Self::Boolean => "boolean",
            Self::Null => "null",
        }
    }
}

/// The keywords of one schema level as written. Each is kept as raw JSON because a wrong type is
/// a violation to report, not a parse failure, and `null` is kept apart from absent (`"type":
/// null` is refused, not ignored). Keywords outside the subset are not fields: the checker
/// reports them from the level's key list.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Keywords {
    #[serde(rename = "type", default, deserialize_with = "present")]
    pub(crate) kind: Option<Value>,
    #[serde(rename = "oneOf", default, deserialize_with = "present")]
    pub(crate) one_of: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    pub(crate) properties: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    pub(crate) required: Option<Value>,
    #[serde(rename = "additionalProperties", default, deserialize_with = "present")]
    pub(crate) additional_properties: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    pub(crate) items: Option<Value>,
    #[serde(rename = "enum", default, deserialize_with = "present")]
    pub(crate) allowed: Option<Value>,
    #[serde(rename = "const", default, deserialize_with = "present")]
    pub(crate) constant: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    pub(crate) description: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    pub(crate) title: Option<Value>,
}

impl Keywords {
    /// Which of the keywords that need a `type` (or sit beside `oneOf`) are declared, in the
    /// order diagnostics name them.
    pub(crate) fn typed(&self) -> [(&'static str, bool); 6] {
        [
            ("properties", self.properties.is_some()),
            ("required", self.required.is_some()),
            ("additionalProperties", self.additional_properties.is_some()),
            ("items", self.items.is_some()),
            ("enum", self.allowed.is_some()),
            ("const", self.constant.is_some()),
        ]
    }
}

/// A member that is there, whatever its value (`null` included).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}
