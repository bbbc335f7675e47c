//! Deserializing secret values so that a malformed one never shows up in an error: serde's
//! usual "invalid type: integer `123456`" would print the secret, so these helpers accept
//! strings (and bare integers, as their digits) and otherwise fail with wording only.

use std::collections::BTreeMap;
use std::fmt;

use secrecy::SecretString;
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// A secret read from YAML.
struct Secret(SecretString);

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SecretVisitor).map(Secret)
    }
}

struct SecretVisitor;

const NOT_A_STRING: &str = "must be a quoted string (the value is not shown)";

impl<'de> Visitor<'de> for SecretVisitor {
    type Value = SecretString;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a secret string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<SecretString, E> {
        Ok(SecretString::from(v))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<SecretString, E> {
        Ok(SecretString::from(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<SecretString, E> {
        Ok(SecretString::from(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<SecretString, E> {
        Ok(SecretString::from(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<SecretString, E> {
        Err(E::custom(NOT_A_STRING))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<SecretString, E> {
        Err(E::custom(NOT_A_STRING))
    }

    fn visit_unit<E: de::Error>(self) -> Result<SecretString, E> {
        Err(E::custom("is empty; write the secret as a quoted string"))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<SecretString, A::Error> {
        Err(de::Error::custom(
            "must be a single quoted string, not a list",
        ))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, _: A) -> Result<SecretString, A::Error> {
        Err(de::Error::custom("must be a quoted string, not a mapping"))
    }
}

/// `deserialize_with` for a required secret.
pub(crate) fn one<'de, D: Deserializer<'de>>(d: D) -> Result<SecretString, D::Error> {
    Secret::deserialize(d).map(|s| s.0)
}

/// `deserialize_with` for an optional secret (`~`/`null` is `None`).
pub(crate) fn optional<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SecretString>, D::Error> {
    Option::<Secret>::deserialize(d).map(|s| s.map(|s| s.0))
}

/// `deserialize_with` for a list of secrets (`null` is empty).
pub(crate) fn list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<SecretString>, D::Error> {
    let list = Option::<Vec<Secret>>::deserialize(d)?;
    Ok(list.unwrap_or_default().into_iter().map(|s| s.0).collect())
}

/// `deserialize_with` for named secrets such as MCP env vars (`null` is empty).
pub(crate) fn map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, SecretString>, D::Error> {
    let map = Option::<BTreeMap<String, Secret>>::deserialize(d)?;
    Ok(map
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect())
}

/// `deserialize_with` for sections that may be written empty (`providers:` with nothing
/// under it is YAML `null`): `null` is the default.
pub(crate) fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}
