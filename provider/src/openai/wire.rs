//! The chat-completions wire format as types: the request Pincer sends (`Request`,
//! borrowing the conversation where it can) and what comes back (`Chunk`s of a stream;
//! `Completion`, the unstreamed reply). Field order is the order Pincer has always sent.
//!
//! Only the fields Pincer uses are modelled; serde skips the rest. Every field read is
//! read through `lenient`: missing, `null` or of another shape, it reads as absent and
//! the rest of the chunk still counts. What the fields mean (which delta is reasoning,
//! how usage is counted) is decided in `openai.rs`, not here.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error_body::ErrorDetail;
use crate::lenient::lenient;
use crate::types::ToolSpec;

// What Pincer sends.

/// The body of one `POST /chat/completions`.
#[derive(Debug, Serialize)]
pub(crate) struct Request<'a> {
    pub model: &'a str,
    pub messages: Vec<Message<'a>>,
    pub stream: bool,
    /// Asks for a last chunk with the call's usage; some servers reject it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool<'a>>>,
}

#[derive(Debug, Serialize)]
pub(crate) struct StreamOptions {
    pub include_usage: bool,
}

/// One message of the conversation, by `role`.
#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(crate) enum Message<'a> {
    System {
        content: String,
    },
    User {
        content: UserContent,
    },
    Assistant {
        /// `null` when the message is tool calls only.
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall<'a>>,
    },
    /// A tool's result, answering the call `tool_call_id`.
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
}

/// A user message's content: plain text, or parts when it carries images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum UserContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentPart {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
pub(crate) struct ImageUrl {
    /// A `data:` URL with the image inline.
    pub url: String,
}

/// A tool call the assistant made, sent back with the rest of the conversation.
#[derive(Debug, Serialize)]
pub(crate) struct ToolCall<'a> {
    pub id: &'a str,
    #[serde(rename = "type")]
    pub kind: ToolKind,
    pub function: FunctionCall<'a>,
}

#[derive(Debug, Serialize)]
pub(crate) struct FunctionCall<'a> {
    pub name: &'a str,
    /// The arguments as a JSON text (the format's choice), sent verbatim when the
    /// model's own text was not valid JSON.
    pub arguments: Cow<'a, str>,
}

/// The one kind of tool chat completions has: `"type": "function"`.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ToolKind {
    Function,
}

/// A tool as chat completions takes it, borrowing the spec (the schemas are most of a
/// request's bytes and the same every turn: they are never copied).
#[derive(Debug, Serialize)]
pub(crate) struct Tool<'a> {
    #[serde(rename = "type")]
    kind: ToolKind,
    function: ToolFunction<'a>,
}

#[derive(Debug, Serialize)]
struct ToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

impl<'a> Tool<'a> {
    pub(crate) fn new(tool: &'a ToolSpec) -> Self {
        Tool {
            kind: ToolKind::Function,
            function: ToolFunction {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.input_schema,
            },
        }
    }
}

// What comes back.

/// One `data:` payload of the stream.
#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct Chunk {
    #[serde(default, deserialize_with = "lenient")]
    pub choices: Vec<Choice>,
    /// Sent in a last chunk (with `choices: []`) when `stream_options` asked for it.
    #[serde(default, deserialize_with = "lenient")]
    pub usage: Option<Usage>,
    /// llama.cpp's own measurement of the call.
    #[serde(default, deserialize_with = "lenient")]
    pub timings: Option<Timings>,
    /// An error mid-stream (the HTTP status was already 200).
    #[serde(default)]
    pub error: Option<ErrorDetail>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct Choice {
    #[serde(default, deserialize_with = "lenient")]
    pub delta: Option<Delta>,
    #[serde(default, deserialize_with = "lenient")]
    pub finish_reason: Option<String>,
}

/// What one chunk adds to the reply. The unstreamed reply's `message` has this shape
/// too, its tool calls whole.
#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct Delta {
    #[serde(default, deserialize_with = "lenient")]
    pub content: Option<String>,
    /// DeepSeek's name for the model's reasoning.
    #[serde(default, deserialize_with = "lenient")]
    pub reasoning_content: Option<String>,
    /// OpenRouter's and Ollama's.
    #[serde(default, deserialize_with = "lenient")]
    pub reasoning: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

/// A piece of a tool call: the first names it, the rest add argument text.
#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct ToolCallDelta {
    /// Which call the piece belongs to; some servers leave it out.
    #[serde(default, deserialize_with = "lenient")]
    pub index: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct FunctionDelta {
    #[serde(default, deserialize_with = "lenient")]
    pub name: Option<String>,
    /// A fragment of the arguments' JSON text.
    #[serde(default, deserialize_with = "lenient")]
    pub arguments: Option<String>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct Usage {
    /// The whole prompt, cached tokens included.
    #[serde(default, deserialize_with = "lenient")]
    pub prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub completion_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// DeepSeek's count of cached prompt tokens.
    #[serde(default, deserialize_with = "lenient")]
    pub prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct PromptTokensDetails {
    #[serde(default, deserialize_with = "lenient")]
    pub cached_tokens: Option<u64>,
}

/// llama.cpp's `timings`: `prompt_n` tokens read (its cache excluded) in `prompt_ms`,
/// `predicted_n` written in `predicted_ms`.
#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct Timings {
    #[serde(default, deserialize_with = "lenient")]
    pub prompt_n: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub prompt_ms: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub predicted_n: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub predicted_ms: Option<f64>,
}

/// The unstreamed reply. Pincer always streams; this is here so the tests can hold
/// `Delta` and `Usage` to the documented reply, which shares their shapes.
#[cfg(test)]
#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct Completion {
    #[serde(default, deserialize_with = "lenient")]
    pub choices: Vec<CompletionChoice>,
    #[serde(default, deserialize_with = "lenient")]
    pub usage: Option<Usage>,
}

#[cfg(test)]
#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct CompletionChoice {
    #[serde(default, deserialize_with = "lenient")]
    pub message: Delta,
    #[serde(default, deserialize_with = "lenient")]
    pub finish_reason: Option<String>,
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
