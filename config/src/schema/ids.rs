//! Deserializing id lists (`allow_from`, `groups`) whose entries may be written as strings
//! or bare integers (`[123, "-100456"]`); every entry becomes its decimal string.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, SeqAccess, Visitor};

/// `deserialize_with` for a list of platform ids.
pub(crate) fn string_or_int_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    d.deserialize_seq(IdList)
}

struct IdList;

impl<'de> Visitor<'de> for IdList {
    type Value = Vec<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of ids (strings or integers)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut ids = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(Id(id)) = seq.next_element()? {
            ids.push(id);
        }
        Ok(ids)
    }
}

struct Id(String);

impl<'de> de::Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IdVisitor).map(Id)
    }
}

struct IdVisitor;

impl Visitor<'_> for IdVisitor {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an id (string or integer)")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<String, E> {
        Ok(v.to_string())
    }
}
