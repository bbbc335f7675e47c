//! The error JSON servers answer with, as types: OpenAI's `{"error": {...}}`, Anthropic's
//! `{"type": "error", "error": {...}}` (a rejected call's body and an `error` event in a
//! stream alike), Ollama's `{"error": "text"}`, and the error object alone at the top
//! level (older vLLM). Only the fields the classification reads are modelled, each read
//! leniently (`lenient`); what they mean is decided in `error` and `overflow`, not here.

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use super::lenient::lenient;

/// An error body. Any JSON reads as one (`ErrorDetail::Other` takes what has no known
/// shape), so whether a body parses says only whether it is JSON.
#[derive(Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub(crate) enum ErrorBody {
    /// `{"error": ...}`; Anthropic adds `"type": "error"` beside it.
    Wrapped { error: ErrorDetail },
    /// The error itself is the body.
    Bare(ErrorDetail),
}

impl ErrorBody {
    pub(crate) fn detail(&self) -> &ErrorDetail {
        match self {
            Self::Wrapped { error } | Self::Bare(error) => error,
        }
    }
}

/// What a server says went wrong.
#[derive(Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub(crate) enum ErrorDetail {
    /// Ollama, and some proxies: the message alone.
    Text(String),
    Object(ErrorObject),
    /// Anything else (a number, a list): an error that says nothing readable.
    #[serde(skip_serializing)]
    Other(IgnoredAny),
}

impl Default for ErrorDetail {
    fn default() -> Self {
        Self::Object(ErrorObject::default())
    }
}

impl ErrorDetail {
    /// The object's fields, when the error came as an object.
    pub(crate) fn object(&self) -> Option<&ErrorObject> {
        match self {
            Self::Object(object) => Some(object),
            Self::Text(_) | Self::Other(_) => None,
        }
    }
}

/// The error object both formats share the core of.
#[derive(Debug, Default, Deserialize, Serialize)]
pub(crate) struct ErrorObject {
    /// `invalid_request_error`, `overloaded_error`, `exceed_context_size_error` …
    #[serde(rename = "type", default, deserialize_with = "lenient")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub message: Option<String>,
    /// OpenAI's own name for the error (`invalid_api_key`); llama.cpp, vLLM and
    /// routers put the HTTP status here instead.
    #[serde(default, deserialize_with = "lenient")]
    pub code: Option<Code>,
    /// llama.cpp, on an overflow: the context window it runs with.
    #[serde(default, deserialize_with = "lenient")]
    pub n_ctx: Option<u64>,
    /// llama.cpp, on an overflow: the request's size in tokens.
    #[serde(default, deserialize_with = "lenient")]
    pub n_prompt_tokens: Option<u64>,
}

/// An error object's `code`: a name or a number.
#[derive(Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub(crate) enum Code {
    Number(u64),
    Name(String),
}

#[cfg(test)]
#[path = "error_body_tests.rs"]
mod tests;
