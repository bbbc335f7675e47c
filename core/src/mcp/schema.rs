//! Checking a call to an MCP tool against the schema its server gave, before it is
//! sent: the common subset (object, required, property types, enums, minimum). The
//! error goes back to the model, worded so it can fix the call and retry. (Pincer's own
//! tools parse their arguments with serde instead: `tools::args`.)

use serde_json::Value;

/// Why a call does not fit its tool's schema, worded for the model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum SchemaError {
    /// What was given instead ("an array").
    #[error("the arguments must be a JSON object, got {0}")]
    NotObject(&'static str),
    #[error("missing required argument(s): {}", .0.join(", "))]
    Missing(Vec<String>),
    #[error("unknown argument `{name}`; this tool takes: {}", known.join(", "))]
    Unknown { name: String, known: Vec<String> },
    #[error("`{name}` must be {} {expected}, got {got}", article(expected))]
    Type {
        name: String,
        expected: String,
        got: &'static str,
    },
    /// `options` as JSON.
    #[error("`{name}` must be one of {}, got {got}", options.join(", "))]
    NotAnOption {
        name: String,
        options: Vec<String>,
        got: Value,
    },
    #[error("`{name}` must be at least {minimum}, got {got}")]
    Below {
        name: String,
        minimum: f64,
        got: f64,
    },
}

pub(crate) fn validate(schema: &Value, args: &Value) -> Result<(), SchemaError> {
    let Some(object) = args.as_object() else {
        return Err(SchemaError::NotObject(kind(args)));
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        let missing: Vec<String> = required
            .iter()
            .filter_map(Value::as_str)
            .filter(|name| object.get(*name).is_none_or(Value::is_null))
            .map(str::to_string)
            .collect();
        if !missing.is_empty() {
            return Err(SchemaError::Missing(missing));
        }
    }
    let Some(properties) = properties else {
        return Ok(());
    };
    for (name, value) in object {
        let Some(spec) = properties.get(name) else {
            return Err(SchemaError::Unknown {
                name: name.clone(),
                known: properties.keys().cloned().collect(),
            });
        };
        if value.is_null() {
            continue;
        }
        check_value(name, spec, value)?;
    }
    Ok(())
}

fn check_value(name: &str, spec: &Value, value: &Value) -> Result<(), SchemaError> {
    if let Some(expected) = spec.get("type").and_then(Value::as_str) {
        let ok = match expected {
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            _ => true,
        };
        if !ok {
            return Err(SchemaError::Type {
                name: name.to_string(),
                expected: expected.to_string(),
                got: kind(value),
            });
        }
    }
    if let Some(options) = spec.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        return Err(SchemaError::NotAnOption {
            name: name.to_string(),
            options: options.iter().map(Value::to_string).collect(),
            got: value.clone(),
        });
    }
    if let (Some(minimum), Some(n)) = (spec.get("minimum").and_then(Value::as_f64), value.as_f64())
        && n < minimum
    {
        return Err(SchemaError::Below {
            name: name.to_string(),
            minimum,
            got: n,
        });
    }
    if let (Some(items), Some(array)) = (spec.get("items"), value.as_array()) {
        for (n, item) in array.iter().enumerate() {
            check_value(&format!("{name}[{n}]"), items, item)?;
        }
    }
    Ok(())
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_checked_with_errors_the_model_can_act_on() {
        let schema = json!({"type": "object", "properties": {
            "path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1},
            "mode": {"type": "string", "enum": ["a", "b"]}, "items": {"type": "array", "items": {"type": "string"}}
        }, "required": ["path"]});
        assert!(validate(&schema, &json!({"path": "x", "limit": 3})).is_ok());
        assert!(
            validate(&schema, &json!({}))
                .unwrap_err()
                .to_string()
                .contains("missing required argument(s): path")
        );
        assert!(
            validate(&schema, &json!({"path": 3}))
                .unwrap_err()
                .to_string()
                .contains("`path` must be a string, got an integer")
        );
        assert!(
            validate(&schema, &json!({"path": "x", "limit": 0}))
                .unwrap_err()
                .to_string()
                .contains("at least 1")
        );
        assert!(
            validate(&schema, &json!({"path": "x", "mode": "c"}))
                .unwrap_err()
                .to_string()
                .contains("one of")
        );
        assert!(
            validate(&schema, &json!({"path": "x", "nope": 1}))
                .unwrap_err()
                .to_string()
                .contains("unknown argument `nope`")
        );
        assert!(
            validate(&schema, &json!({"path": "x", "items": ["a", 2]}))
                .unwrap_err()
                .to_string()
                .contains("items[1]")
        );
        assert!(
            validate(&schema, &json!("x"))
                .unwrap_err()
                .to_string()
                .contains("JSON object")
        );
    }
}
