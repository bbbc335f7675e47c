//! A tool's arguments as one Rust type. A tool declares a
//! `#[derive(Deserialize, JsonSchema)]` struct (its fields' doc comments are the
//! descriptions the model reads) and implements [`TypedTool`]: the parameters schema in
//! its spec is generated from that struct ([`schema_for`]), and each call's JSON is parsed
//! into it once, before hooks and permissions, with serde's message naming the field a
//! bad call got wrong ([`parse`]). A blanket impl makes every `TypedTool` a [`Tool`], so
//! the registry keeps `Arc<dyn Tool>`.
//!
//! Not here: what a call may do (permissions, hooks and taint read the raw JSON in
//! `tools`), and MCP tools, whose schemas are their servers'.

use std::any::Any;

use async_trait::async_trait;
use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Effects, MAX_RESULT_BYTES, Tool, ToolContext, ToolError};
use crate::provider::ToolSpec;

/// A tool whose arguments are a Rust type: the schema the model sees and the parsing of
/// its calls both come from `Args`.
#[async_trait]
pub trait TypedTool: Send + Sync {
    /// The arguments. Fields are `Option` when the model may leave them out; the struct
    /// denies unknown fields, as the pipeline always has.
    type Args: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    /// The name the model calls the tool by.
    const NAME: &'static str;
    /// What the tool does (see [`Tool::effects`]); undeclared, the strictest.
    const EFFECTS: Effects = Effects::STRICTEST;
    /// What the model reads about the tool (the parameters come from `Args`).
    fn description(&self) -> String;
    /// See [`Tool::call_effects`]: decided on the raw JSON, before the call is parsed.
    fn call_effects(&self, _args: &Value) -> Effects {
        Self::EFFECTS
    }
    /// See [`Tool::max_result_bytes`].
    fn max_result_bytes(&self) -> usize {
        MAX_RESULT_BYTES
    }
    /// Checks the schema cannot express (an edit that changes nothing, an empty
    /// command), run before hooks and permissions so the model can fix its call.
    fn validate(&self, _args: &Self::Args) -> Result<(), ToolError> {
        Ok(())
    }
    /// Run the call.
    async fn run(&self, args: Self::Args, ctx: &ToolContext) -> Result<String, ToolError>;
}

#[async_trait]
impl<T: TypedTool> Tool for T {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: T::NAME.into(),
            description: self.description(),
            input_schema: schema_for::<T::Args>().into(),
        }
    }

    fn effects(&self) -> Effects {
        T::EFFECTS
    }

    fn call_effects(&self, args: &Value) -> Effects {
        TypedTool::call_effects(self, args)
    }

    fn max_result_bytes(&self) -> usize {
        TypedTool::max_result_bytes(self)
    }

    fn parse(&self, args: &Value) -> Result<Parsed, ArgsError> {
        let parsed: T::Args = parse(args)?;
        self.validate(&parsed).map_err(ArgsError::Refused)?;
        Ok(Parsed::new(parsed))
    }

    async fn run(&self, args: Parsed, ctx: &ToolContext) -> Result<String, ToolError> {
        let Some(args) = args.take::<T::Args>() else {
            return Err(ToolError::new(format!(
                "{}: the arguments were parsed by another tool",
                T::NAME
            )));
        };
        TypedTool::run(self, args, ctx).await
    }
}

/// A call's arguments as its tool parsed them ([`Tool::parse`]), held by the pipeline
/// until it runs the call.
pub struct Parsed(Box<dyn Any + Send + Sync>);

impl Parsed {
    pub fn new<T: Any + Send + Sync>(args: T) -> Self {
        Self(Box::new(args))
    }

    /// The arguments, if they are a `T`.
    pub fn take<T: Any>(self) -> Option<T> {
        self.0.downcast().ok().map(|args| *args)
    }
}

/// Why a call's arguments were refused before it ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// They do not fit the tool's parameters: serde's message, naming the field.
    #[error("{0}")]
    Malformed(String),
    /// They fit, but a check the schema cannot express failed (`TypedTool::validate`).
    #[error("{0}")]
    Refused(ToolError),
}

/// Read a call's JSON into `T`. The error is serde's, after the path of the field it
/// is about when that is not the top level (`` `items[1].text`: invalid type: … ``).
pub fn parse<T: DeserializeOwned>(args: &Value) -> Result<T, ArgsError> {
    if !args.is_object() {
        return Err(ArgsError::Malformed(format!(
            "the arguments must be a JSON object, got {}",
            kind(args)
        )));
    }
    serde_path_to_error::deserialize(args).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        ArgsError::Malformed(if path == "." {
            inner.to_string()
        } else {
            format!("`{path}`: {inner}")
        })
    })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The parameters schema the model sees for `T`, as small as a hand-written one: inlined,
/// with no `$schema`, titles, formats or defaults; `type`, `properties`, `required`,
/// `enum`, `items`, bounds and the fields' descriptions stay.
pub fn schema_for<T: JsonSchema>() -> Value {
    SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.meta_schema = None;
            settings.inline_subschemas = true;
        })
        .with_transform(Compact)
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// Applied to the root schema: its title and description are the struct's name and doc
/// comment (the tool has its own description), then every schema is made compact.
#[derive(Clone)]
struct Compact;

impl Transform for Compact {
    fn transform(&mut self, schema: &mut Schema) {
        schema.remove("title");
        schema.remove("description");
        compact(schema);
    }
}

/// Drop what only grows the request:
/// - `title`, `format` (`uint`, `int64` …), `default`;
/// - `minimum: 0`, which schemars puts on every unsigned integer (serde refuses a
///   negative number anyway);
/// - `null` among an optional field's types and enum values (serde reads it as absent);
/// - `additionalProperties: false` from `deny_unknown_fields` (serde still refuses an
///   unknown field, naming the ones there are).
fn compact(schema: &mut Schema) {
    for key in ["title", "format", "default"] {
        schema.remove(key);
    }
    if schema.get("minimum").and_then(Value::as_u64) == Some(0) {
        schema.remove("minimum");
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        schema.remove("additionalProperties");
    }
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|t| t != "null");
        if let [single] = types.as_slice() {
            let single = single.clone();
            schema.insert("type".into(), single);
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    let mut each = compact;
    transform_subschemas(&mut each, schema);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;
    use std::num::NonZeroUsize;

    /// A struct doc that must not reach the model.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[expect(
        dead_code,
        reason = "only the schema and the parse errors are looked at"
    )]
    struct Sample {
        /// path relative to the workspace
        path: String,
        #[schemars(range(max = 10))]
        limit: Option<NonZeroUsize>,
        mode: Option<Mode>,
        items: Option<Vec<Item>>,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Fast,
        Slow,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[expect(
        dead_code,
        reason = "only the schema and the parse errors are looked at"
    )]
    struct Item {
        text: String,
        done: Option<bool>,
        count: Option<u64>,
    }

    #[test]
    fn the_generated_schema_is_as_small_as_a_hand_written_one() {
        assert_eq!(
            schema_for::<Sample>(),
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "path relative to the workspace"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 10},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "items": {"type": "array", "items": {"type": "object", "properties": {
                    "text": {"type": "string"}, "done": {"type": "boolean"}, "count": {"type": "integer"}
                }, "required": ["text"]}}
            }, "required": ["path"]})
        );
    }

    #[test]
    fn a_bad_call_gets_serdes_message_naming_the_field() {
        let err = |args: Value| parse::<Sample>(&args).unwrap_err().to_string();
        assert_eq!(err(json!({})), "missing field `path`");
        assert_eq!(
            err(json!({"path": 3})),
            "`path`: invalid type: integer `3`, expected a string"
        );
        assert!(
            err(json!({"path": "x", "nope": 1})).contains("unknown field `nope`"),
            "{}",
            err(json!({"path": "x", "nope": 1}))
        );
        assert!(
            err(json!({"path": "x", "mode": "medium"}))
                .starts_with("`mode`: unknown variant `medium`")
        );
        assert!(
            err(json!({"path": "x", "items": [{"text": "a"}, {"done": true}]}))
                .starts_with("`items[1]`: missing field `text`")
        );
        assert!(err(json!({"path": "x", "limit": 0})).starts_with("`limit`: "));
        assert_eq!(
            err(json!(["x"])),
            "the arguments must be a JSON object, got an array"
        );
        let ok = parse::<Sample>(&json!({"path": "x", "limit": null, "mode": "fast"})).unwrap();
        assert!(ok.limit.is_none() && matches!(ok.mode, Some(Mode::Fast)));
    }
}
