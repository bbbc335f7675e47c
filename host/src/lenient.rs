//! Reading the stdio protocols' lines as tolerantly as the hosts always have (serde
//! helpers for `stream_json::wire` and `runner::wire`): a field of another JSON type
//! reads as absent (`lenient`), a list keeps the entries that read (`lenient_items`),
//! so an odd line is answered as that line without the odd field, never refused or
//! panicked on. It knows no protocol.

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer};
use serde_json::Value;

/// A field that does not read as `T` counts as absent: `T::default()`. Use with
/// `#[serde(default, deserialize_with = "lenient")]`.
pub(crate) fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    Ok(read(Value::deserialize(deserializer)?))
}

/// A list keeps the entries that read as `T` and drops the others; anything but a list
/// is an empty one.
pub(crate) fn lenient_items<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(items(Value::deserialize(deserializer)?))
}

/// `lenient_items` for a list that may be left out: `None` when it is not a list.
pub(crate) fn lenient_list<'de, D, T>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    Ok(value.is_array().then(|| items(value)))
}

/// `value` as `T`, or `T::default()` when it does not read as one.
pub(crate) fn read<T: DeserializeOwned + Default>(value: Value) -> T {
    T::deserialize(value).unwrap_or_default()
}

/// The entries of a list that read as `T`; none when `value` is not a list.
pub(crate) fn items<T: DeserializeOwned>(value: Value) -> Vec<T> {
    match value {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|item| T::deserialize(item).ok())
            .collect(),
        _ => Vec::new(),
    }
}

/// A line of JSON, as the hosts read one: not JSON at all (`Err`, with why), or the
/// value. Only an object is a line a protocol knows; anything else (`[1]`, `5`) reads
/// as an object of no type, as the hosts have always taken it.
pub(crate) fn line(text: &str) -> Result<Value, serde_json::Error> {
    let value: Value = serde_json::from_str(text)?;
    Ok(if value.is_object() {
        value
    } else {
        Value::Object(serde_json::Map::new())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    struct Probe {
        #[serde(default, deserialize_with = "lenient")]
        name: Option<String>,
        #[serde(default, deserialize_with = "lenient_items")]
        ids: Vec<String>,
        #[serde(default, deserialize_with = "lenient_list")]
        rules: Option<Vec<u32>>,
    }

    #[test]
    fn a_field_of_another_type_reads_as_absent_and_lists_keep_what_reads() {
        let odd: Probe =
            serde_json::from_str(r#"{"name": 5, "ids": [1, "a", null, "b"], "rules": 3}"#)
                .expect("an odd line still reads");
        assert_eq!(
            odd,
            Probe {
                name: None,
                ids: vec!["a".into(), "b".into()],
                rules: None
            }
        );
        let empty: Probe = serde_json::from_str(r#"{"ids": {}, "rules": []}"#).expect("reads");
        assert_eq!((empty.ids.len(), empty.rules), (0, Some(vec![])));
        assert!(line("not json").is_err());
        assert_eq!(line("[1]").expect("JSON"), serde_json::json!({}));
    }
}
