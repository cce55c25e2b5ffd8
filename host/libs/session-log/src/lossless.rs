//! Lossless JSON: values that read back identically in the reference (JavaScript numbers are
//! IEEE doubles) and in Rust, checked where they enter the log so a bad value fails at the append
//! site instead of at a later flush, when memory and disk would already disagree.

use std::fmt::Write as _;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use thiserror::Error;

/// The largest integer every reader represents exactly (`Number.MAX_SAFE_INTEGER`).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Why a JSON text or value is not lossless.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LosslessError {
    /// The text is not JSON (whatever `serde_json` rejects).
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// A key repeated in one object: readers disagree on which value wins.
    #[error("duplicate object key \"{key}\" at {path}")]
    DuplicateKey { path: String, key: String },
    /// An integer a JavaScript reader would round (or print differently, for huge values).
    #[error("integer {value} at {path} is outside ±(2^53-1)")]
    IntegerOutOfRange { path: String, value: String },
    /// NaN or an infinity: JSON cannot hold it.
    #[error("non-finite number at {path}")]
    NonFinite { path: String },
    /// `-0` is written as `0` by JavaScript, so it does not survive a round trip there.
    #[error("negative zero at {path}")]
    NegativeZero { path: String },
}

/// Parses JSON text, refusing what would not round-trip: duplicate keys at any depth, integers
/// outside ±(2^53−1), non-finite numbers, negative zero, and anything `serde_json` rejects.
pub fn parse_lossless(text: &str) -> Result<Value, LosslessError> {
    let raw: Raw = serde_json::from_str(text).map_err(|e| LosslessError::Syntax {
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    let mut path = String::from("$");
    raw.into_value(&mut path)
}

/// Checks a value built in memory (keys are unique by construction there).
pub fn check_lossless(value: &Value) -> Result<(), LosslessError> {
    check_lossless_at(value, "$")
}

/// [`check_lossless`] with errors naming paths under `root` (e.g. `$.data`).
pub(crate) fn check_lossless_at(value: &Value, root: &str) -> Result<(), LosslessError> {
    // Nearly every value passes (a load checks every event of a long log): a walk that keeps
    // no path runs first, and only a value that fails is walked again to name where.
    match first_bad_number(value) {
        None => Ok(()),
        Some(()) => check_with_paths(value, root),
    }
}

/// Whether some number in `value` fails [`check_number`], found without keeping any path.
fn first_bad_number(value: &Value) -> Option<()> {
    // Iterative: a value built in memory may nest deeper than the stack allows.
    let mut stack: Vec<&Value> = vec![value];
    while let Some(current) = stack.pop() {
        match current {
            Value::Number(n) => {
                if check_number(n).is_err() {
                    return Some(());
                }
            }
            Value::Array(items) => stack.extend(items.iter()),
            Value::Object(map) => stack.extend(map.values()),
            Value::Null | Value::Bool(_) | Value::String(_) => {}
        }
    }
    None
}

/// [`check_lossless_at`]'s second walk: the first failing number in document order, named by
/// its path.
fn check_with_paths(value: &Value, root: &str) -> Result<(), LosslessError> {
    // Iterative, as above. Paths are built only on failure, from parent links.
    let mut links: Vec<(Option<usize>, Segment<'_>)> = Vec::new();
    let mut stack: Vec<(&Value, Option<usize>)> = vec![(value, None)];
    while let Some((current, link)) = stack.pop() {
        match current {
            Value::Number(n) => {
                if let Err(fail) = check_number(n) {
                    return Err(fail.into_error(render_path(root, &links, link)));
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    links.push((link, Segment::Index(i)));
                    stack.push((item, Some(links.len() - 1)));
                }
            }
            Value::Object(map) => {
                for (k, item) in map.iter().rev() {
                    links.push((link, Segment::Key(k)));
                    stack.push((item, Some(links.len() - 1)));
                }
            }
            Value::Null | Value::Bool(_) | Value::String(_) => {}
        }
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

fn render_path(
    root: &str,
    links: &[(Option<usize>, Segment<'_>)],
    mut link: Option<usize>,
) -> String {
    let mut segments = Vec::new();
    while let Some(i) = link {
        let Some((parent, seg)) = links.get(i) else {
            break;
        };
        segments.push(*seg);
        link = *parent;
    }
    let mut path = root.to_owned();
    for seg in segments.iter().rev() {
        match seg {
            Segment::Key(k) => push_key(&mut path, k),
            Segment::Index(i) => push_index(&mut path, *i),
        }
    }
    path
}

/// Appends `.key`, or `["key"]` when the key is not a plain identifier.
pub(crate) fn push_key(path: &mut String, key: &str) {
    let mut chars = key.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if plain {
        path.push('.');
        path.push_str(key);
    } else {
        path.push('[');
        path.push_str(&Value::String(key.to_owned()).to_string());
        path.push(']');
    }
}

fn push_index(path: &mut String, index: usize) {
    let _ = write!(path, "[{index}]");
}

enum NumberFail {
    Range(String),
    NonFinite,
    NegativeZero,
}

impl NumberFail {
    fn into_error(self, path: String) -> LosslessError {
        match self {
            Self::Range(value) => LosslessError::IntegerOutOfRange { path, value },
            Self::NonFinite => LosslessError::NonFinite { path },
            Self::NegativeZero => LosslessError::NegativeZero { path },
        }
    }
}

fn check_number(n: &Number) -> Result<(), NumberFail> {
    if let Some(u) = n.as_u64() {
        return if u <= MAX_SAFE_INTEGER {
            Ok(())
        } else {
            Err(NumberFail::Range(u.to_string()))
        };
    }
    if let Some(i) = n.as_i64() {
        return if i.unsigned_abs() <= MAX_SAFE_INTEGER {
            Ok(())
        } else {
            Err(NumberFail::Range(i.to_string()))
        };
    }
    let Some(f) = n.as_f64() else {
        return Err(NumberFail::NonFinite);
    };
    if !f.is_finite() {
        return Err(NumberFail::NonFinite);
    }
    if f == 0.0 && f.is_sign_negative() {
        return Err(NumberFail::NegativeZero);
    }
    // An integral double beyond the safe range is an integer to a JavaScript reader, which prints
    // it digit by digit where serde_json prints an exponent (and a too-long integer literal has
    // already been rounded to reach here), so it cannot round-trip byte for byte.
    if f.fract() == 0.0 && f.abs() > MAX_SAFE_INTEGER as f64 {
        return Err(NumberFail::Range(n.to_string()));
    }
    Ok(())
}

/// A parsed value that keeps duplicate keys, so they can be reported instead of silently merged.
enum Raw {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Raw>),
    Object(Vec<(String, Raw)>),
}

impl Raw {
    /// Converts, checking as it goes. Recursion is bounded by serde_json's nesting limit (128).
    fn into_value(self, path: &mut String) -> Result<Value, LosslessError> {
        Ok(match self {
            Raw::Null => Value::Null,
            Raw::Bool(b) => Value::Bool(b),
            Raw::String(s) => Value::String(s),
            Raw::Number(n) => {
                check_number(&n).map_err(|fail| fail.into_error(path.clone()))?;
                Value::Number(n)
            }
            Raw::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let len = path.len();
                    push_index(path, i);
                    out.push(item.into_value(path)?);
                    path.truncate(len);
                }
                Value::Array(out)
            }
            Raw::Object(members) => {
                let mut out = Map::new();
                for (key, item) in members {
                    let len = path.len();
                    push_key(path, &key);
                    if out.contains_key(&key) {
                        return Err(LosslessError::DuplicateKey {
                            path: path.clone(),
                            key,
                        });
                    }
                    let value = item.into_value(path)?;
                    path.truncate(len);
                    out.insert(key, value);
                }
                Value::Object(out)
            }
        })
    }
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Bool(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Raw, E> {
        Ok(Raw::Number(v.into()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Raw, E> {
        // serde_json never hands a non-finite float from text; refuse one anyway.
        Number::from_f64(v)
            .map(Raw::Number)
            .ok_or_else(|| E::custom("non-finite number"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Raw, E> {
        Ok(Raw::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Raw::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut members = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Raw>()? {
            members.push((k, v));
        }
        Ok(Raw::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_ordinary_json_and_keeps_values() {
        let v =
            parse_lossless(r#"{"a":[1,-2,0.5,"x",null,true],"b":{"c":9007199254740991}}"#).unwrap();
        assert_eq!(
            v,
            json!({"a":[1,-2,0.5,"x",null,true],"b":{"c":9007199254740991_u64}})
        );
        assert_eq!(
            parse_lossless("-9007199254740991").unwrap(),
            json!(-9007199254740991_i64)
        );
    }

    #[test]
    fn duplicate_keys_are_named_with_their_path_at_any_depth() {
        let err = parse_lossless(r#"{"data":{"items":[{},{},{},{"id":1,"id":2}]}}"#).unwrap_err();
        assert_eq!(
            err,
            LosslessError::DuplicateKey {
                path: "$.data.items[3].id".into(),
                key: "id".into()
            }
        );
        let err = parse_lossless(r#"{"a b":1,"a b":1}"#).unwrap_err();
        assert_eq!(
            err,
            LosslessError::DuplicateKey {
                path: r#"$["a b"]"#.into(),
                key: "a b".into()
            }
        );
    }

    #[test]
    fn integers_outside_the_safe_range_are_refused() {
        for (text, path) in [
            (r#"{"n":9007199254740992}"#, "$.n"),
            ("[-9007199254740992]", "$[0]"),
            ("[18446744073709551616]", "$[0]"),
            ("[1e20]", "$[0]"),
        ] {
            assert!(
                matches!(parse_lossless(text), Err(LosslessError::IntegerOutOfRange { path: p, .. }) if p == path),
                "{text}"
            );
        }
        assert!(parse_lossless("[1.5e-7, 1e15]").is_ok());
    }

    #[test]
    fn negative_zero_and_syntax_errors_are_refused() {
        assert_eq!(
            parse_lossless("[-0]").unwrap_err(),
            LosslessError::NegativeZero {
                path: "$[0]".into()
            }
        );
        assert!(matches!(
            parse_lossless("[-0.0]"),
            Err(LosslessError::NegativeZero { .. })
        ));
        for bad in [
            "{",
            "[1,]",
            "NaN",
            "[Infinity]",
            "[1e400]",
            r#""\ud800""#,
            "1 2",
        ] {
            assert!(
                matches!(parse_lossless(bad), Err(LosslessError::Syntax { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn check_lossless_walks_in_memory_values() {
        assert!(check_lossless(&json!({"a":[1,{"b":"c"}]})).is_ok());
        let v = json!({"data":{"items":[0, 0, {"id": 9007199254740993_u64}]}});
        assert_eq!(
            check_lossless(&v).unwrap_err(),
            LosslessError::IntegerOutOfRange {
                path: "$.data.items[2].id".into(),
                value: "9007199254740993".into()
            }
        );
        assert_eq!(
            check_lossless_at(&json!({"x": -0.0}), "$.data").unwrap_err(),
            LosslessError::NegativeZero {
                path: "$.data.x".into()
            }
        );
        assert!(check_lossless(&json!([i64::MIN])).is_err());
    }

    #[test]
    fn deep_in_memory_values_do_not_overflow_the_stack() {
        let mut v = json!(1);
        for _ in 0..200_000 {
            v = Value::Array(vec![v]);
        }
        assert!(check_lossless(&v).is_ok());
        // serde_json drops recursively; unwind iteratively so the test itself does not overflow.
        while let Value::Array(mut items) = v {
            v = items.pop().unwrap_or(Value::Null);
        }
    }
}
