//! The Anthropic Messages wire format as types: the request Pincer sends (`Request`,
//! borrowing the conversation where it can) and what comes back (the stream's `Event`s;
//! `Reply`, the message object, which `message_start` carries empty). Field order is the
//! order Pincer has always sent.
//!
//! Only the fields Pincer uses are modelled; serde skips the rest, and a block, delta or
//! event of a type added after this was written reads as `Other`/`Unknown`. Every field
//! read is read through `lenient`: missing, `null` or of another shape, it reads as its
//! default. Which blocks carry cache marks and what a block becomes is decided in
//! `anthropic.rs`; the one rule of the format kept here is that thinking blocks take no
//! mark.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error_body::ErrorDetail;
use crate::lenient::lenient;
use crate::types::{Role, ToolSpec};

// What Pincer sends.

/// The body of one `POST /v1/messages`.
#[derive(Debug, Serialize)]
pub(crate) struct Request<'a> {
    pub model: &'a str,
    pub max_tokens: u32,
    pub stream: bool,
    pub messages: Vec<Message<'a>>,
    /// Text blocks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub system: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool<'a>>>,
}

#[derive(Debug, Serialize)]
pub(crate) struct Message<'a> {
    pub role: Role,
    pub content: Vec<Content<'a>>,
}

/// A content block Pincer sends.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Content<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        /// Always an object.
        input: Cow<'a, Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A thinking block as it came, signature and all.
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    /// Encrypted thinking, as it came.
    RedactedThinking { data: &'a str },
}

impl<'a> Content<'a> {
    /// A text block without a cache mark.
    pub(crate) fn text(text: impl Into<Cow<'a, str>>) -> Self {
        Self::Text {
            text: text.into(),
            cache_control: None,
        }
    }

    /// Mark the prompt up to and including this block cacheable. Thinking blocks cannot
    /// carry a mark: they are left as they are.
    pub(crate) fn mark(&mut self) {
        match self {
            Self::Text { cache_control, .. }
            | Self::Image { cache_control, .. }
            | Self::ToolUse { cache_control, .. }
            | Self::ToolResult { cache_control, .. } => {
                *cache_control = Some(CacheControl::Ephemeral);
            }
            Self::Thinking { .. } | Self::RedactedThinking { .. } => {}
        }
    }
}

/// `{"type": "ephemeral"}`: the one kind of cache mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum CacheControl {
    Ephemeral,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum ImageSource<'a> {
    Base64 { media_type: &'a str, data: &'a str },
}

/// `{"type": "enabled", "budget_tokens": N}`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum Thinking {
    Enabled { budget_tokens: u32 },
}

/// A tool as the Messages API takes it, borrowing the spec (the schemas are most of a
/// request's bytes and the same every turn: they are never copied).
#[derive(Debug, Serialize)]
pub(crate) struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

impl<'a> Tool<'a> {
    pub(crate) fn new(tool: &'a ToolSpec, cache_control: Option<CacheControl>) -> Self {
        Tool {
            name: &tool.name,
            description: &tool.description,
            input_schema: &tool.input_schema,
            cache_control,
        }
    }
}

// What comes back.

/// One event of the stream; its `type` names it (the SSE `event:` line says the same).
#[derive(Debug, Deserialize, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Event {
    MessageStart {
        #[serde(default, deserialize_with = "lenient")]
        message: Option<Reply>,
    },
    ContentBlockStart {
        #[serde(default, deserialize_with = "lenient")]
        index: u64,
        #[serde(default, deserialize_with = "lenient")]
        content_block: Block,
    },
    ContentBlockDelta {
        #[serde(default, deserialize_with = "lenient")]
        index: u64,
        #[serde(default, deserialize_with = "lenient")]
        delta: Delta,
    },
    ContentBlockStop {
        #[serde(default, deserialize_with = "lenient")]
        index: u64,
    },
    MessageDelta {
        #[serde(default, deserialize_with = "lenient")]
        delta: Option<MessageDelta>,
        /// Cumulative counts so far.
        #[serde(default, deserialize_with = "lenient")]
        usage: Option<Usage>,
    },
    MessageStop,
    Ping,
    /// An error after the 200 (overloaded mid-reply, say).
    Error {
        #[serde(default)]
        error: ErrorDetail,
    },
    /// An event type added after this was written.
    #[serde(other)]
    Unknown,
}

/// The message object: the whole reply when not streamed, and in `message_start`
/// (with no content yet).
#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct Reply {
    #[serde(default, deserialize_with = "lenient")]
    pub content: Vec<Block>,
    #[serde(default, deserialize_with = "lenient")]
    pub stop_reason: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub usage: Option<Usage>,
}

/// A content block that comes back: whole in a reply, its first state in
/// `content_block_start`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block {
    Text {
        #[serde(default, deserialize_with = "lenient")]
        text: String,
    },
    Thinking {
        #[serde(default, deserialize_with = "lenient")]
        thinking: String,
        /// Whole in a reply; in a stream it follows as `signature_delta`s.
        #[serde(default, deserialize_with = "lenient")]
        signature: Option<String>,
    },
    RedactedThinking {
        #[serde(default, deserialize_with = "lenient")]
        data: String,
    },
    ToolUse {
        #[serde(default, deserialize_with = "lenient")]
        id: String,
        #[serde(default, deserialize_with = "lenient")]
        name: String,
        /// The tool's input: whole in a reply, `{}` at a stream's block start.
        #[serde(default)]
        input: Value,
    },
    /// A block type Pincer does not turn into a part (server tool results …).
    #[default]
    #[serde(other)]
    Other,
}

/// What a `content_block_delta` adds to its block (`"type": "text_delta"` …).
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(tag = "type")]
pub(super) enum Delta {
    #[serde(rename = "text_delta")]
    Text {
        #[serde(default, deserialize_with = "lenient")]
        text: String,
    },
    #[serde(rename = "thinking_delta")]
    Thinking {
        #[serde(default, deserialize_with = "lenient")]
        thinking: String,
    },
    #[serde(rename = "signature_delta")]
    Signature {
        #[serde(default, deserialize_with = "lenient")]
        signature: String,
    },
    /// A fragment of a tool's input JSON.
    #[serde(rename = "input_json_delta")]
    InputJson {
        #[serde(default, deserialize_with = "lenient")]
        partial_json: String,
    },
    /// Citations, and delta types added after this was written.
    #[default]
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct MessageDelta {
    #[serde(default, deserialize_with = "lenient")]
    pub stop_reason: Option<String>,
}

/// Token counts; `input_tokens` excludes the cached reads and writes.
#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct Usage {
    #[serde(default, deserialize_with = "lenient")]
    pub input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub cache_creation_input_tokens: Option<u64>,
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
