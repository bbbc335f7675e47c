//! Holding the wire types to recorded examples (tests only). A fixture must deserialize
//! into its type, and serializing that back must give the fixture again, less the fields
//! the types deliberately leave out (each test lists them) and less `null`s, which read
//! the same as an absent field. A field the types misname or forget fails the test.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::sse::SseDecoder;

/// Deserialize `json` as `T`, check it serializes back to `json` less `unmodeled`
/// (paths like `/choices/*/logprobs`, `*` standing for every element or key), and
/// return it.
pub(crate) fn assert_round_trip<T: DeserializeOwned + Serialize>(
    json: &str,
    unmodeled: &[&str],
) -> T {
    let typed: T = serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("does not read as {}: {e}\n{json}", type_name::<T>()));
    let back = serde_json::to_value(&typed).unwrap();
    let mut expected: Value = serde_json::from_str(json).unwrap();
    for path in unmodeled {
        let segments: Vec<&str> = path.split('/').skip(1).collect();
        remove(&mut expected, &segments);
    }
    assert_eq!(
        without_nulls(back),
        without_nulls(expected),
        "{} does not give back\n{json}",
        type_name::<T>()
    );
    typed
}

/// The `data:` payloads of a recorded event stream, `[DONE]` included.
pub(crate) fn sse_data(stream: &str) -> Vec<String> {
    let mut decoder = SseDecoder::new();
    let mut events = decoder.feed(stream.as_bytes());
    events.extend(decoder.finish());
    events.into_iter().map(|event| event.data).collect()
}

fn type_name<T>() -> &'static str {
    std::any::type_name::<T>()
}

fn remove(value: &mut Value, path: &[&str]) {
    let [first, rest @ ..] = path else {
        return;
    };
    if rest.is_empty() {
        if let Value::Object(map) = value {
            map.remove(*first);
        }
        return;
    }
    match (value, *first) {
        (Value::Array(items), "*") => items.iter_mut().for_each(|v| remove(v, rest)),
        (Value::Object(map), "*") => map.values_mut().for_each(|v| remove(v, rest)),
        (Value::Object(map), key) => {
            if let Some(v) = map.get_mut(key) {
                remove(v, rest);
            }
        }
        (Value::Array(items), index) => {
            if let Some(v) = index.parse().ok().and_then(|i: usize| items.get_mut(i)) {
                remove(v, rest);
            }
        }
        _ => {}
    }
}

fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}
