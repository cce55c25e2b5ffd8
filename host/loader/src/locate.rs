//! Source positions of YAML nodes.
//!
//! `serde_norway` keeps no spans in its `Value`, but an error raised by a visitor while a node is
//! being deserialized carries that node's line and column. [`locate`] re-reads the text with a
//! seed that walks a path and raises such an error at the node it names. Positions are only needed
//! for errors and warnings, so the extra parse is cheap in practice.

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

const PROBE: &str = "\u{1}dsh-loader-probe";

/// One step from a node to one of its children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The element of a sequence.
    Index(usize),
    /// The value under a string key of a mapping.
    Value(String),
    /// The string key itself.
    Key(String),
    /// The content of a tagged node.
    Tagged,
}

/// A path of steps from the document root.
pub(crate) type Path = Vec<Step>;

/// Appends a step to a path.
pub(crate) fn join(path: &[Step], step: Step) -> Path {
    let mut out = path.to_vec();
    out.push(step);
    out
}

/// The 1-based line and column of the node at `path`, if the text has it.
pub(crate) fn locate(text: &str, path: &[Step]) -> Option<(usize, usize)> {
    let de = serde_norway::Deserializer::from_str(text);
    match Probe(path).deserialize(de) {
        Err(err) if err.to_string().contains(PROBE) => {
            err.location().map(|loc| (loc.line(), loc.column()))
        }
        _ => None,
    }
}

struct Probe<'p>(&'p [Step]);

impl<'de> DeserializeSeed<'de> for Probe<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Probe<'_> {
    fn leaf<E: de::Error>(&self) -> Result<(), E> {
        if self.0.is_empty() {
            Err(E::custom(PROBE))
        } else {
            Ok(())
        }
    }
}

impl<'de> Visitor<'de> for Probe<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.leaf()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.leaf()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.leaf()
    }
    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        self.leaf()
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        self.leaf()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.leaf()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.leaf()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.leaf()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.leaf()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        match self.0.split_first() {
            None => Err(de::Error::custom(PROBE)),
            Some((Step::Index(index), rest)) => {
                for _ in 0..*index {
                    if seq.next_element::<IgnoredAny>()?.is_none() {
                        return Ok(());
                    }
                }
                seq.next_element_seed(Probe(rest))?;
                Ok(())
            }
            Some(_) => Ok(()),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        match self.0.split_first() {
            None => Err(de::Error::custom(PROBE)),
            Some((Step::Value(key), rest)) => {
                while let Some(found) = map.next_key_seed(KeyProbe { key, fail: false })? {
                    if found {
                        map.next_value_seed(Probe(rest))?;
                        return Ok(());
                    }
                    map.next_value::<IgnoredAny>()?;
                }
                Ok(())
            }
            Some((Step::Key(key), _)) => {
                while map.next_key_seed(KeyProbe { key, fail: true })?.is_some() {
                    map.next_value::<IgnoredAny>()?;
                }
                Ok(())
            }
            Some(_) => Ok(()),
        }
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        match self.0.split_first() {
            None => Err(de::Error::custom(PROBE)),
            Some((Step::Tagged, rest)) => {
                let (_, variant): (IgnoredAny, _) = data.variant()?;
                variant.newtype_variant_seed(Probe(rest))
            }
            Some(_) => {
                let (_, variant): (IgnoredAny, _) = data.variant()?;
                variant.newtype_variant::<IgnoredAny>().map(|_| ())
            }
        }
    }
}

/// Reads a mapping key; says whether it is `key`, or fails at it when `fail` is set.
struct KeyProbe<'k> {
    key: &'k str,
    fail: bool,
}

impl<'de> DeserializeSeed<'de> for KeyProbe<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeyProbe<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping key")
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<bool, E> {
        match (value == self.key, self.fail) {
            (true, true) => Err(E::custom(PROBE)),
            (found, _) => Ok(found),
        }
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i128<E: de::Error>(self, _: i128) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<bool, A::Error> {
        let (_, variant): (IgnoredAny, _) = data.variant()?;
        variant.newtype_variant::<IgnoredAny>()?;
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
- id: a
  name: x
- id: b
  config:
    k: !env [A, b]
    list:
      - 1
      - two
";

    #[test]
    fn locates_sequence_items_keys_and_values() {
        assert_eq!(locate(TEXT, &[]), Some((1, 1)));
        assert_eq!(locate(TEXT, &[Step::Index(0)]), Some((1, 3)));
        assert_eq!(locate(TEXT, &[Step::Index(1)]), Some((3, 3)));
        assert_eq!(
            locate(TEXT, &[Step::Index(0), Step::Key("name".into())]),
            Some((2, 3))
        );
        assert_eq!(
            locate(TEXT, &[Step::Index(0), Step::Value("name".into())]),
            Some((2, 9))
        );
        let list = [
            Step::Index(1),
            Step::Value("config".into()),
            Step::Value("list".into()),
        ];
        assert_eq!(locate(TEXT, &join(&list, Step::Index(1))), Some((8, 9)));
    }

    #[test]
    fn locates_tagged_nodes_and_their_content() {
        let tagged = [
            Step::Index(1),
            Step::Value("config".into()),
            Step::Value("k".into()),
        ];
        assert_eq!(locate(TEXT, &tagged), Some((5, 8)));
        let inner = join(&join(&tagged, Step::Tagged), Step::Index(1));
        assert_eq!(locate(TEXT, &inner), Some((5, 17)));
    }

    #[test]
    fn missing_paths_have_no_position() {
        assert_eq!(locate(TEXT, &[Step::Index(7)]), None);
        assert_eq!(
            locate(TEXT, &[Step::Index(0), Step::Key("nope".into())]),
            None
        );
    }
}
