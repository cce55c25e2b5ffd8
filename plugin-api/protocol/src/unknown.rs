//! The fallback of an open tagged enum: a value whose tag this vocabulary does not name, kept
//! verbatim. A newer plugin may add a variant (a block type, a chunk type); an older one then
//! holds it as [`Unknown`], passes it on and writes it back unchanged, instead of failing to
//! read the whole message. A value whose tag *is* named but whose fields are wrong is still an
//! error: the fallback refuses known tags, so a malformed block cannot hide in it.

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The tag vocabulary of an open enum.
pub trait OpenTags {
    /// The field holding the tag (`type`, `kind`).
    const TAG: &'static str;
    /// Every tag the enum names.
    const KNOWN: &'static [&'static str];
}

/// A variant of `E` this vocabulary does not name, as it was written.
pub struct Unknown<E> {
    value: Value,
    vocabulary: PhantomData<fn() -> E>,
}

impl<E> Unknown<E> {
    /// The value as written.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// Its tag, when it has one.
    pub fn tag(&self) -> Option<&str>
    where
        E: OpenTags,
    {
        self.value.get(E::TAG).and_then(Value::as_str)
    }
}

impl<E> std::fmt::Debug for Unknown<E> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_tuple("Unknown").field(&self.value).finish()
    }
}

impl<E> Clone for Unknown<E> {
    fn clone(&self) -> Self {
        Self {
            value: self.value.clone(),
            vocabulary: PhantomData,
        }
    }
}

impl<E> PartialEq for Unknown<E> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

/// JSON values compare reflexively here: they come from JSON text, which holds no NaN.
impl<E> Eq for Unknown<E> {}

impl<E> Serialize for Unknown<E> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl<'de, E: OpenTags> Deserialize<'de> for Unknown<E> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match value.get(E::TAG).and_then(Value::as_str) {
            Some(tag) if E::KNOWN.contains(&tag) => Err(serde::de::Error::custom(format_args!(
                "a `{tag}` value with missing or malformed fields"
            ))),
            Some(_) => Ok(Self {
                value,
                vocabulary: PhantomData,
            }),
            None => Err(serde::de::Error::custom(format_args!(
                "no `{}` tag",
                E::TAG
            ))),
        }
    }
}

impl<E> JsonSchema for Unknown<E> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Unknown".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A variant a newer version names, kept verbatim.",
            "type": "object"
        })
    }
}
