//! The tools the model can call, and the one place calls go through. This set
//! is the workspace file tools; the full pipeline (permissions, hooks, budgets) grows
//! here. Every call returns a result the model sees, errors included.

mod confine;
mod fs;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::provider::ToolSpec;

pub use confine::confine;

/// The most a tool result may put into the conversation.
pub const MAX_RESULT_BYTES: usize = 32 * 1024;

/// A tool failure, worded for the model (and the user) to act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// What a tool may touch.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub workspace: PathBuf,
    /// The chat the turn answers (where a job made now delivers by default).
    pub origin: Option<pincer_channels::Target>,
}

#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    /// Run the call. `args` is the model's JSON input, not yet checked.
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError>;
}

/// The tools offered to the model, sorted by name so the prompt prefix is stable.
#[derive(Clone)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    specs: Vec<ToolSpec>,
}

/// A finished call: what goes back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub content: String,
    pub is_error: bool,
}

impl Registry {
    pub fn builtin() -> Self {
        Self::new(fs::all())
    }

    /// The built-in tools plus `extra` (tools that need the store or the scheduler).
    pub fn with(extra: Vec<Arc<dyn Tool>>) -> Self {
        let mut tools = fs::all();
        tools.extend(extra);
        Self::new(tools)
    }

    pub fn new(mut tools: Vec<Arc<dyn Tool>>) -> Self {
        tools.sort_by_key(|tool| tool.spec().name);
        let specs = tools.iter().map(|tool| tool.spec()).collect();
        Self { tools, specs }
    }

    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// Look the tool up, run it, and cap what it returns.
    pub async fn call(&self, name: &str, args: Value, ctx: &ToolContext) -> Outcome {
        let Some(index) = self.specs.iter().position(|spec| spec.name == name) else {
            let known: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
            return Outcome {
                content: format!("unknown tool `{name}`; available: {}", known.join(", ")),
                is_error: true,
            };
        };
        let args = match args {
            // Arguments that were not valid JSON reach us as the raw string.
            Value::String(raw) => match serde_json::from_str(&raw) {
                Ok(value) => value,
                Err(err) => {
                    return Outcome {
                        content: format!(
                            "the arguments are not valid JSON ({err}); send a JSON object"
                        ),
                        is_error: true,
                    };
                }
            },
            other => other,
        };
        match self.tools[index].call(args, ctx).await {
            Ok(content) => Outcome {
                content: cap(content),
                is_error: false,
            },
            Err(err) => Outcome {
                content: err.0,
                is_error: true,
            },
        }
    }
}

fn cap(mut content: String) -> String {
    if content.len() <= MAX_RESULT_BYTES {
        return content;
    }
    let mut end = MAX_RESULT_BYTES;
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    let total = content.len();
    content.truncate(end);
    content.push_str(&format!(
        "\n[output cut at {end} of {total} bytes; ask for a smaller range]"
    ));
    content
}

/// Read a required string argument.
fn string_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::new(format!("missing string argument `{key}`")))
}

/// Read an optional non-negative integer argument.
fn count_arg(args: &Value, key: &str) -> Result<Option<usize>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .map(|n| Some(n as usize))
            .ok_or_else(|| ToolError::new(format!("`{key}` must be a non-negative integer"))),
    }
}
