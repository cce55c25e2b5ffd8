//! [`Json<T>`]: a typed value that crosses the boundary as its JSON text.
//!
//! The seams carry the core vocabulary (`dsh-protocol`) this way rather than as `#[repr(C)]`
//! mirrors of it: the side that makes a value serializes it once, the side that reads it parses
//! it once, and a later version may add an optional field or a variant without changing any
//! layout, so a plugin built against the older seam still loads and reads what it knows. The
//! cost (microseconds per value) is small beside a step's model call and tools. Plugin code
//! never sees the text: it builds and reads typed values.

#![allow(
    unsafe_code,
    reason = "the StableAbi derive emits unsafe impls; nothing here is unsafe to use"
)]

use std::fmt;
use std::marker::PhantomData;

use abi_stable::StableAbi;
use abi_stable::std_types::RString;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A `T` as its JSON text. Its layout is that of an `RString` whatever `T` is; the type is
/// the reader's promise of what the text holds, checked when it is decoded.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(unsafe_unconstrained(T))]
pub struct Json<T> {
    text: RString,
    #[sabi(unsafe_opaque_field)]
    _type: PhantomData<extern "C" fn() -> T>,
}

/// A [`Json`] whose text is not a `T`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {message}")]
pub struct DecodeError {
    /// The type that was expected.
    pub what: &'static str,
    pub message: String,
}

impl<T> Json<T> {
    /// Takes `text` as the JSON of a `T`, unchecked until it is decoded.
    pub fn from_text(text: impl Into<RString>) -> Self {
        Self {
            text: text.into(),
            _type: PhantomData,
        }
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn into_text(self) -> RString {
        self.text
    }
}

impl<T: Serialize> Json<T> {
    /// Serializes `value`. The vocabulary's types always serialize (their maps have string
    /// keys); a value that does not is sent as `null`, which its reader refuses by name.
    pub fn encode(value: &T) -> Self {
        Self::from_text(serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned()))
    }
}

impl<T: DeserializeOwned> Json<T> {
    /// Parses the text as a `T`.
    pub fn decode(&self) -> Result<T, DecodeError> {
        serde_json::from_str(&self.text).map_err(|error| DecodeError {
            what: std::any::type_name::<T>(),
            message: error.to_string(),
        })
    }
}

impl<T> Clone for Json<T> {
    fn clone(&self) -> Self {
        Self::from_text(self.text.clone())
    }
}

impl<T> PartialEq for Json<T> {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl<T> Eq for Json<T> {}

impl<T> fmt::Debug for Json<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Old {
        a: u32,
    }

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct New {
        a: u32,
        #[serde(default)]
        b: Option<String>,
    }

    #[test]
    fn a_value_round_trips_and_an_older_reader_skips_what_it_does_not_know() {
        let new = Json::encode(&New {
            a: 1,
            b: Some("x".into()),
        });
        assert_eq!(
            new.decode(),
            Ok(New {
                a: 1,
                b: Some("x".into())
            })
        );
        let as_old: Json<Old> = Json::from_text(new.text().to_owned());
        assert_eq!(as_old.decode(), Ok(Old { a: 1 }));
        let from_old: Json<New> = Json::from_text(Json::encode(&Old { a: 2 }).into_text());
        assert_eq!(from_old.decode(), Ok(New { a: 2, b: None }));
    }

    #[test]
    fn text_of_another_type_is_refused_by_name() {
        let wrong: Json<Old> = Json::from_text("\"a string\"");
        let error = wrong.decode().unwrap_err();
        assert!(error.what.ends_with("Old"), "{error}");
    }
}
