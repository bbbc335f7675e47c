//! The provider-neutral conversation model: messages made of parts, tool specs,
//! requests, responses, usage and stream events. Both wire formats translate to and
//! from these types; nothing here knows about HTTP.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who said a message. Tool results travel in `User` messages (as Anthropic wants);
/// the OpenAI encoder turns them into `role: "tool"` messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One piece of a message, in the order the model produced or received it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    /// The model's own reasoning: never shown to the person. Anthropic's thinking
    /// blocks carry a `signature` and must go back unchanged while thinking is on; a
    /// `redacted` block keeps its encrypted `data` in `text`.
    Reasoning {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
    },
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    ToolResult {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
    /// A picture the user sent. The transcript keeps only where it is saved; `data` is
    /// filled for the turn whose message brought it (and only for a model that sees),
    /// so a later turn sends `placeholder` instead of the picture again.
    Image {
        /// The saved file, inside the workspace inbox.
        path: String,
        #[serde(skip)]
        data: Option<ImageData>,
    },
}

/// An image as a model receives it: the encoded bytes, base64, and their type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageData {
    /// `image/jpeg`, `image/png`, `image/gif` or `image/webp`.
    pub mime: String,
    pub base64: String,
}

impl Part {
    /// Reasoning without a signature (OpenAI-compatible fields, text the model wrote).
    pub fn reasoning(text: impl Into<String>) -> Part {
        Part::Reasoning {
            text: text.into(),
            signature: None,
            redacted: false,
        }
    }

    /// What a model reads instead of an image it is not shown: where the file is, so a
    /// tool can still reach it.
    pub fn placeholder(path: &str) -> String {
        let name = std::path::Path::new(path)
            .file_name()
            .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned());
        format!("[image {name}, sent earlier: {path}]")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub parts: Vec<Part>,
}

impl ChatMessage {
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            parts: vec![Part::Text { text: text.into() }],
        }
    }

    /// All text parts joined, the way a user would read the message.
    pub fn text(&self) -> String {
        text_of(&self.parts)
    }
}

/// The text parts of a message, joined.
pub fn text_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// A tool as the model sees it. The schema is shared: every turn offers the same
/// tools, and cloning the list must not copy each schema's tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: std::sync::Arc<Value>,
}

/// One model call. The system prompt comes in two halves so provider prompt caches
/// hit: `system_stable` is byte-identical between turns and is marked cacheable;
/// `system_volatile` (date, time, channel context) follows it, outside the cache.
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    pub model: String,
    pub system_stable: String,
    pub system_volatile: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
    /// Anthropic extended thinking: tokens the model may think in (0 = off). Set per
    /// model by the chain (`[models."P/M"] thinking_budget`).
    pub thinking_budget: u32,
    /// Where the memory recalled for this turn sits, as (message, part): at the end of
    /// the newest user message, and not stored, so the next turn repeats everything
    /// before it but not it. Anthropic gets a cache mark just before it.
    pub recalled_at: Option<(usize, usize)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its reply.
    EndTurn,
    /// The model wants tool results before it goes on.
    ToolUse,
    /// The reply was cut by the output-token limit.
    MaxTokens,
    Other(String),
}

/// Tokens of one call. `input_tokens` excludes cached reads and writes, as Anthropic
/// reports it; the OpenAI decoder subtracts `cached_tokens` from `prompt_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// A complete model reply, assembled from the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    pub parts: Vec<Part>,
    pub stop: StopReason,
    pub usage: Usage,
}

/// What a caller sees while a reply streams in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StreamEvent<'a> {
    Text(&'a str),
    Reasoning(&'a str),
    /// The model began a tool call (arguments still streaming); `id` is "" where the
    /// provider has not said it yet.
    ToolCallStarted {
        id: &'a str,
        name: &'a str,
    },
    /// The reply so far is abandoned; a new one (from another model) follows. A caller
    /// that shows deltas as they come clears what it showed of this reply.
    Restart,
}
