//! Turning figment's extraction errors (a key path and serde's wording) into messages a
//! user can act on: the key, its line or override variable, the expected type in words,
//! and for misspelt choices the nearest valid one.

use figment::error::{Actual, Kind};

use super::keys::suggest;
use super::locate::{Locator, display_path};
use crate::ConfigError;

/// Translates one extraction error.
pub(crate) fn translate(err: figment::Error, locator: &Locator<'_>) -> ConfigError {
    let path = err.path;
    let key = display_path(&path);
    let location = locator.locate(&path);
    match err.kind {
        Kind::InvalidType(actual, expected) => ConfigError::WrongType {
            location,
            key,
            expected: expected_in_words(&expected, false),
            found: found_in_words(&actual),
        },
        Kind::InvalidValue(actual, expected) => ConfigError::WrongType {
            location,
            key,
            expected: expected_in_words(&expected, true),
            found: found_in_words(&actual),
        },
        Kind::UnknownVariant(found, choices) => {
            let hint = suggest(&found, choices)
                .map(|s| format!("; did you mean \"{s}\"?"))
                .unwrap_or_default();
            ConfigError::Invalid {
                location,
                key,
                problem: format!(
                    "must be one of {} (found \"{found}\"){hint}",
                    quoted_list(choices)
                ),
            }
        }
        Kind::UnknownField(field, valid) => {
            let valid: Vec<String> = valid.iter().map(|s| (*s).to_owned()).collect();
            ConfigError::UnknownKey {
                location,
                key,
                suggestion: suggest(&field, &valid),
                valid,
            }
        }
        Kind::MissingField(field) => {
            let table = if key.is_empty() {
                "the top level".to_owned()
            } else {
                format!("[{key}]")
            };
            ConfigError::Invalid {
                location,
                key: join_key(&key, &field),
                problem: format!("is required; add `{field} = ...` to {table}"),
            }
        }
        Kind::DuplicateField(field) => ConfigError::Invalid {
            location,
            key: join_key(&key, field),
            problem: "is set twice; keep one".to_owned(),
        },
        Kind::Message(message) => ConfigError::Invalid {
            location,
            key,
            problem: message,
        },
        other => ConfigError::Invalid {
            location,
            key,
            problem: format!("is not valid: {other}"),
        },
    }
}

fn join_key(table: &str, field: &str) -> String {
    if table.is_empty() {
        field.to_owned()
    } else {
        format!("{table}.{field}")
    }
}

/// serde's `expecting` text ("u32", "a boolean", "struct AgentConfig") in plain words;
/// `out_of_range` when the type was right but the value did not fit (a negative count).
fn expected_in_words(expected: &str, out_of_range: bool) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" if out_of_range => {
            let max = match expected {
                "u8" => u8::MAX.to_string(),
                "u16" => u16::MAX.to_string(),
                "u32" => u32::MAX.to_string(),
                _ => return "an integer, 0 or more".to_owned(),
            };
            format!("an integer from 0 to {max}")
        }
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" | "i8" | "i16" | "i32" | "i64" | "i128"
        | "isize" => "an integer".to_owned(),
        "f32" | "f64" => "a number".to_owned(),
        "a boolean" => "true or false".to_owned(),
        "a string" | "a borrowed string" | "a character" => "a string".to_owned(),
        "path string" | "a borrowed path" => "a path (string)".to_owned(),
        "a sequence" => "a list".to_owned(),
        "a map" => "a table".to_owned(),
        e if e.starts_with("struct ") => "a table".to_owned(),
        e if e.starts_with("enum ") || e.contains("variant") => "a string".to_owned(),
        e => e.to_owned(),
    }
}

fn found_in_words(actual: &Actual) -> String {
    match actual {
        Actual::Bool(b) => format!("boolean {b}"),
        Actual::Unsigned(n) => format!("integer {n}"),
        Actual::Signed(n) => format!("integer {n}"),
        Actual::Float(n) => format!("number {n}"),
        Actual::Char(c) => format!("string \"{c}\""),
        Actual::Str(s) => format!("string {s:?}"),
        Actual::Seq => "a list".to_owned(),
        Actual::Map => "a table".to_owned(),
        Actual::Unit | Actual::Option => "nothing".to_owned(),
        other => other.to_string(),
    }
}

fn quoted_list(choices: &[&str]) -> String {
    let quoted: Vec<String> = choices.iter().map(|c| format!("\"{c}\"")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_read_as_a_sentence() {
        assert_eq!(quoted_list(&["a", "b", "c"]), "\"a\", \"b\" or \"c\"");
        assert_eq!(quoted_list(&["a"]), "\"a\"");
    }
}
