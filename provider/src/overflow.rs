//! Context overflow as servers word it: whether an error says the request did not fit
//! the model's context window, and the figures it names — the window (`n_ctx`, "maximum
//! context length is N tokens", "> N maximum") and the prompt's size as the server
//! counted it. Recognised: llama.cpp (`exceed_context_size_error`), vLLM, Ollama, LM
//! Studio, OpenAI (`context_length_exceeded`) and Anthropic ("prompt is too long").
//! It decides nothing about what to do with an overflow (the agent compacts).

use super::error_body::ErrorObject;

/// Error types or codes (`type`/`code`, lower case) that mean an overflow.
const KINDS: &[&str] = &[
    "context_length_exceeded",       // OpenAI
    "exceed_context_size_error",     // llama.cpp
    "model_context_window_exceeded", // OpenAI-compatible routers
    "request_too_large",             // Anthropic: the request is over its byte cap
];

/// Phrases (lower case) only an overflow uses, whatever the status.
const PHRASES: &[&str] = &[
    "prompt is too long",                     // Anthropic
    "prompt too long",                        // Ollama
    "maximum context length",                 // OpenAI, vLLM, Mistral
    "exceeds the available context size",     // llama.cpp
    "exceeds the context length",             // Ollama
    "longer than the maximum model length",   // vLLM's engine
    "greater than the context length",        // LM Studio
    "longer than the model's context length", // Together
];

/// Phrases that mean an overflow only on a 4xx: a 5xx naming the context may be
/// anything.
const CLIENT_PHRASES: &[&str] = &["context window", "context length", "context size"];

/// Whether an error whose type/code is `kind` and whose message is `message` (both
/// lower case) says the request was too long for the model.
pub(crate) fn is_overflow(kind: &str, message: &str, client_side: bool) -> bool {
    KINDS.iter().any(|k| kind.contains(k))
        || PHRASES.iter().any(|p| message.contains(p))
        || (client_side && CLIENT_PHRASES.iter().any(|p| message.contains(p)))
}

/// What an overflow error says about sizes, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Figures {
    /// The model's context window as the server runs it.
    pub limit: Option<u64>,
    /// The request's size as the server counted it.
    pub prompt: Option<u64>,
}

/// Where a window's size follows in a message (lower case): the number right after.
const LIMIT_BEFORE: &[&str] = &[
    "maximum context length is ",  // OpenAI, vLLM
    "maximum context length of ",  // OpenAI-compatible servers
    "maximum model length of ",    // vLLM's engine
    "available context size (",    // llama.cpp
    "context length (",            // Together, "model's maximum context length (N)"
    "configured context size is ", // other llama.cpp-based servers
    "tokens > ",                   // Anthropic: "N tokens > M maximum"
];

/// Where a prompt's size follows in a message (lower case).
const PROMPT_BEFORE: &[&str] = &[
    "prompt is too long: ",      // Anthropic
    "messages resulted in ",     // OpenAI
    "request has ",              // vLLM: "your request has N input tokens"
    "prompt contains at least ", // vLLM
    "prompt contains ",          // vLLM, Mistral
    "request (",                 // llama.cpp: "request (N tokens) exceeds …"
    "the input (",               // Together
];

/// The figures of an overflow error: from the error object's own fields where the
/// server gives them (llama.cpp's `n_ctx`, `n_prompt_tokens`), else from its message.
pub(crate) fn figures(error: Option<&ErrorObject>, message: &str) -> Figures {
    let message = message.to_lowercase();
    let first = |phrases: &[&str]| phrases.iter().find_map(|p| number_after(&message, p));
    Figures {
        limit: error.and_then(|e| e.n_ctx).or_else(|| first(LIMIT_BEFORE)),
        prompt: error
            .and_then(|e| e.n_prompt_tokens)
            .or_else(|| first(PROMPT_BEFORE)),
    }
}

/// The whole number (digits, with `,` or `_` as thousands separators) that follows the
/// first `phrase` in `text`, after spaces.
fn number_after(text: &str, phrase: &str) -> Option<u64> {
    let rest = &text[text.find(phrase)? + phrase.len()..];
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '_')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok().filter(|n| *n > 0)
}

#[cfg(test)]
#[path = "overflow_tests.rs"]
mod tests;
