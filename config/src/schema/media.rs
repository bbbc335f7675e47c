//! `[models."<provider>/<model>"]` and `[transcription]`: what a model can do (overriding
//! the built-in capability table) and where voice notes are transcribed. The table itself
//! and its defaults for unknown models live in the core (`pincer::capabilities`).

use serde::{Deserialize, Serialize};

/// One model's capabilities; a key left out keeps the built-in value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelCaps {
    /// Whether the model accepts images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<bool>,
    /// The model's context window, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    /// Anthropic extended thinking: tokens the model may think in each call (0 = off,
    /// at least 1024 when on). Its thinking blocks are kept and sent back as required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
    /// The whole limit of one call to this model, in seconds, reading and reply together
    /// (instead of `providers.NAME.timeout_secs` plus the measured reading time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_timeout_secs: Option<u64>,
    /// Whether tool calls the model writes as text (`<tool_call>…`, a JSON object naming
    /// an offered tool, …) are run as calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_tool_calls: Option<TextToolCalls>,
}

/// `[models."P/M"] text_tool_calls`: when tool calls written in a reply's text are run.
/// Only calls to a tool the request offered, with arguments its schema accepts, ever
/// count; anything else stays text (its markup hidden from the person).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TextToolCalls {
    /// Read the text for calls when the reply has no structured tool call.
    #[default]
    Auto,
    /// Also when it has: calls written in the text run after the structured ones (a
    /// server that parses only the first call of a reply leaves the others as text).
    On,
    /// Never: a model whose text often shows calls as examples.
    Off,
}

/// `[transcription]`: voice notes and audio files to text, through an OpenAI-compatible
/// `/audio/transcriptions` endpoint. Off while `provider` is unset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TranscriptionConfig {
    /// The name of a `[providers.X]` whose base URL serves `/audio/transcriptions`
    /// (OpenAI, Groq, a local whisper.cpp or faster-whisper server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The transcription model the endpoint knows (`whisper-1`, `whisper-large-v3`).
    pub model: String,
    /// Longer recordings are not transcribed.
    pub max_minutes: u32,
}

impl Default for TranscriptionConfig {
    fn default() -> Self {
        Self {
            provider: None,
            model: "whisper-1".into(),
            max_minutes: 10,
        }
    }
}
