//! Borrowed, lenient typed reads of an event's `data`, for the checks that must say which member
//! is wrong rather than fail as a whole.
//!
//! A check declares the members it cares about as a `#[derive(Deserialize)]` struct of these
//! types and reads it from the event's `&Value` in place: strings are borrowed, members it does
//! not name are skipped without a copy, and a member of the wrong JSON kind still reads (as
//! [`Member::Other`], [`Obj::Other`], [`List::Other`]) so the check can name it. Nothing here
//! fails on data; an error only means a deserializer that cannot lend its strings.
//!
//! Public because the session file reader asks every record the same kind of question (its
//! type tag and seq) on the load path, where a copy per record would show.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{
    Deserialize, DeserializeSeed, Deserializer, Error, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::{Number, Value};

/// A leaf member: a string or a number is kept, anything else only says what kind it was.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub enum Member<'a> {
    #[default]
    Absent,
    Str(&'a str),
    /// A non-negative integer (what `Value::as_u64` reads).
    Uint(u64),
    /// A negative integer.
    Int(i64),
    Float(f64),
    Array,
    Object,
    /// `null` or a boolean.
    Other,
}

impl<'a> Member<'a> {
    pub fn as_str(self) -> Option<&'a str> {
        match self {
            Self::Str(text) => Some(text),
            _ => None,
        }
    }

    pub fn as_u64(self) -> Option<u64> {
        match self {
            Self::Uint(number) => Some(number),
            _ => None,
        }
    }

    /// An integer that fits an `i64` (what `Value::as_i64` reads).
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Self::Uint(number) => i64::try_from(number).ok(),
            Self::Int(number) => Some(number),
            _ => None,
        }
    }

    pub fn is_number(self) -> bool {
        matches!(self, Self::Uint(_) | Self::Int(_) | Self::Float(_))
    }

    /// A string or a number as the JSON value it was read from (same representation: `1` and
    /// `1.0` stay apart); `None` for any other kind.
    pub fn to_value(self) -> Option<Value> {
        match self {
            Self::Str(text) => Some(Value::String(text.to_owned())),
            Self::Uint(number) => Some(Value::from(number)),
            Self::Int(number) => Some(Value::from(number)),
            Self::Float(number) => Number::from_f64(number).map(Value::Number),
            _ => None,
        }
    }

    pub fn is_non_empty_str(self) -> bool {
        self.as_str().is_some_and(|text| !text.is_empty())
    }

    pub fn is_array(self) -> bool {
        self == Self::Array
    }
}

/// A member that is read further when it is an object.
#[derive(Debug, Default)]
pub enum Obj<T> {
    #[default]
    Absent,
    Found(T),
    /// Present but not an object.
    Other,
}

impl<T> Obj<T> {
    pub fn found(&self) -> Option<&T> {
        match self {
            Self::Found(inner) => Some(inner),
            _ => None,
        }
    }
}

/// An object's fields and how many members it has, so a check can tell "exactly these keys"
/// (every member is a known field) without a second look at the object.
#[derive(Debug, Default)]
pub struct Counted<T> {
    pub value: T,
    pub members: usize,
}

/// A map that counts the keys it hands out.
struct Counting<A> {
    inner: A,
    keys: usize,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Counting<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let key = self.inner.next_key_seed(seed)?;
        self.keys += usize::from(key.is_some());
        Ok(key)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.inner.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Counted<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Members<T> {
            type Value = Counted<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let mut counting = Counting {
                    inner: map,
                    keys: 0,
                };
                let value = T::deserialize(MapAccessDeserializer::new(&mut counting))?;
                Ok(Counted {
                    value,
                    members: counting.keys,
                })
            }
        }
        deserializer.deserialize_map(Members(PhantomData))
    }
}

/// A member that is read further, element by element, when it is an array.
#[derive(Debug, Default)]
pub enum List<T> {
    #[default]
    Absent,
    Found(Vec<T>),
    /// Present but not an array.
    Other,
}

impl<T> List<T> {
    pub fn found(&self) -> Option<&[T]> {
        match self {
            Self::Found(items) => Some(items),
            _ => None,
        }
    }
}

/// Every JSON kind a visitor does not read further becomes `$other`; arrays and objects are
/// drained (a borrowed deserializer insists every element is visited), which costs nothing per
/// element for a `&Value`.
macro_rules! other_kinds {
    (@num $other:expr) => {
        fn visit_u64<E: Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_i64<E: Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_f64<E: Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($other)
        }
    };
    (@str $other:expr) => {
        fn visit_borrowed_str<E: Error>(self, _: &'de str) -> Result<Self::Value, E> {
            Ok($other)
        }
    };
    (@seq $other:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($other)
        }
    };
    (@map $other:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($other)
        }
    };
    ($other:expr, $($skip:ident),*) => {
        fn visit_bool<E: Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok($other)
        }
        $(other_kinds!(@$skip $other);)*
    };
}

impl<'de: 'a, 'a> Deserialize<'de> for Member<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Leaf<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Leaf<'a> {
            type Value = Member<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value with borrowed strings")
            }
            fn visit_borrowed_str<E: Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Member::Str(text))
            }
            fn visit_u64<E: Error>(self, number: u64) -> Result<Self::Value, E> {
                Ok(Member::Uint(number))
            }
            fn visit_i64<E: Error>(self, number: i64) -> Result<Self::Value, E> {
                // Only negative integers arrive here from a `Value`; another deserializer's
                // non-negative one reads as `Value::as_u64` would.
                Ok(u64::try_from(number).map_or(Member::Int(number), Member::Uint))
            }
            fn visit_f64<E: Error>(self, number: f64) -> Result<Self::Value, E> {
                Ok(Member::Float(number))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Member::Array)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Member::Object)
            }
            other_kinds!(Member::Other,);
        }
        deserializer.deserialize_any(Leaf(PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Fields<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Obj::Found)
            }
            other_kinds!(Obj::Other, num, str, seq);
        }
        deserializer.deserialize_any(Fields(PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Items<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Items<T> {
            type Value = List<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(List::Found(items))
            }
            other_kinds!(List::Other, num, str, map);
        }
        deserializer.deserialize_any(Items(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Default, Deserialize)]
    struct Probe<'a> {
        #[serde(default, borrow)]
        name: Member<'a>,
        #[serde(default, borrow)]
        inner: Obj<Inner<'a>>,
        #[serde(default, borrow)]
        items: List<Obj<Inner<'a>>>,
    }

    #[derive(Debug, Default, Deserialize)]
    struct Inner<'a> {
        #[serde(default, borrow)]
        kind: Member<'a>,
    }

    #[test]
    fn members_of_any_kind_read_and_say_what_they_are() {
        let value = json!({"name": "n", "inner": {"kind": 1, "x": [1]}, "items": [{"kind": "k"}, 3], "z": {}});
        let probe = Obj::<Probe<'_>>::deserialize(&value).unwrap();
        let probe = probe.found().unwrap();
        assert_eq!(probe.name, Member::Str("n"));
        assert_eq!(probe.inner.found().unwrap().kind, Member::Uint(1));
        let items = probe.items.found().unwrap();
        assert_eq!(items[0].found().unwrap().kind, Member::Str("k"));
        assert!(matches!(items[1], Obj::Other));

        let value = json!({"name": null, "inner": "s", "items": {"a": 1}});
        for (other, read) in [
            (json!(-1), Member::Int(-1)),
            (json!(1.5), Member::Float(1.5)),
            (json!(true), Member::Other),
            (json!([1]), Member::Array),
        ] {
            assert_eq!(Member::deserialize(&other).unwrap(), read, "{other}");
        }
        for number in [json!(1.0), json!(-3), json!(7), json!(0.1)] {
            let read = Member::deserialize(&number).unwrap();
            assert_eq!(read.to_value(), Some(number.clone()), "{number}");
            assert_eq!(
                read.to_value().map(|v| v.to_string()),
                Some(number.to_string())
            );
        }
        let object = json!({"kind": "k", "x": 1});
        let Ok(Obj::Found(counted)) = Obj::<Counted<Inner<'_>>>::deserialize(&object) else {
            panic!("an object reads");
        };
        assert_eq!((counted.value.kind, counted.members), (Member::Str("k"), 2));
        let probe = Obj::<Probe<'_>>::deserialize(&value).unwrap();
        let probe = probe.found().unwrap();
        assert_eq!(probe.name, Member::Other);
        assert!(matches!(probe.inner, Obj::Other));
        assert!(matches!(probe.items, List::Other));
        let empty = json!({});
        let probe = Obj::<Probe<'_>>::deserialize(&empty).unwrap();
        assert!(matches!(probe.found().unwrap().inner, Obj::Absent));
        assert!(matches!(
            Obj::<Probe<'_>>::deserialize(&json!([1])),
            Ok(Obj::Other)
        ));
    }
}
