//! Holding the wire types to recorded lines (tests only). A fixture file holds JSON
//! lines, each after a `# name` comment naming it. A line must deserialize into its
//! type, and serializing that back must give the line again: exactly, for the lines
//! Pincer itself wrote (`assert_same_line`), or less the fields the types deliberately
//! leave out and plus those only Pincer writes, for other programs' lines
//! (`assert_round_trip`). A field the types misname or forget fails the test.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The named lines of a fixture file: `(name, line)`.
pub(crate) fn fixture(text: &str) -> Vec<(String, String)> {
    let mut name = String::new();
    let mut lines = Vec::new();
    for line in text.lines() {
        if let Some(comment) = line.strip_prefix("# ") {
            name = comment.to_string();
        } else if line.starts_with('{') {
            lines.push((std::mem::take(&mut name), line.to_string()));
        }
    }
    lines
}

/// `line` as `T`, serialized back to the very same text (field order included).
pub(crate) fn assert_same_line<T: DeserializeOwned + Serialize>(name: &str, line: &str) -> T {
    let typed: T = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("{name}: does not read as {}: {e}\n{line}", type_name::<T>()));
    let back = serde_json::to_string(&typed).expect("serializes");
    assert_eq!(
        back,
        line,
        "{name}: {} does not write it back",
        type_name::<T>()
    );
    typed
}

/// `line` as `T`, serialized back to `line` less `unmodelled` and with `added` left
/// out of what `T` writes (paths like `/request/hooks/*/0/timeout`, `*` standing for
/// every element or key).
pub(crate) fn assert_round_trip<T: DeserializeOwned + Serialize>(
    name: &str,
    line: &str,
    unmodelled: &[&str],
    added: &[&str],
) -> T {
    let typed: T = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("{name}: does not read as {}: {e}\n{line}", type_name::<T>()));
    let mut back = serde_json::to_value(&typed).expect("serializes");
    let mut expected: Value = serde_json::from_str(line).expect("JSON");
    for path in unmodelled {
        assert!(
            remove(&mut expected, path),
            "{name}: the line has no {path}"
        );
    }
    for path in added {
        assert!(
            remove(&mut back, path),
            "{name}: {} writes no {path}",
            type_name::<T>()
        );
    }
    assert_eq!(
        back,
        expected,
        "{name}: {} does not give back\n{line}",
        type_name::<T>()
    );
    typed
}

fn type_name<T>() -> &'static str {
    std::any::type_name::<T>()
}

/// Remove what `path` names; whether it named anything.
fn remove(value: &mut Value, path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    remove_at(value, &segments)
}

fn remove_at(value: &mut Value, path: &[&str]) -> bool {
    let [first, rest @ ..] = path else {
        return false;
    };
    if rest.is_empty() {
        return match value {
            Value::Object(map) if *first == "*" => {
                let had = !map.is_empty();
                map.clear();
                had
            }
            Value::Object(map) => map.remove(*first).is_some(),
            _ => false,
        };
    }
    match (value, *first) {
        (Value::Array(items), "*") => items
            .iter_mut()
            .fold(false, |found, v| remove_at(v, rest) | found),
        (Value::Object(map), "*") => map
            .values_mut()
            .fold(false, |found, v| remove_at(v, rest) | found),
        (Value::Object(map), key) => map.get_mut(key).is_some_and(|v| remove_at(v, rest)),
        (Value::Array(items), index) => index
            .parse()
            .ok()
            .and_then(|i: usize| items.get_mut(i))
            .is_some_and(|v| remove_at(v, rest)),
        _ => false,
    }
}
