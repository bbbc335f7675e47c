//! # pincer-provider
//!
//! Model providers, and nothing else: one streaming call to a language model in either
//! wire format, and the chain that retries and falls back across models. It knows no
//! agent, store, channel or tool; what it reports goes to an observer handed in at
//! start-up (`CallObserver`), never to a global.
//!
//! ## Layout
//! - `lib.rs` — the `Provider` trait, `ProviderSettings`, `build`, the shared HTTP client.
//! - `types` — the provider-neutral conversation model (messages, parts, tools, usage).
//! - `error` — `ProviderError`/`ErrorKind` and the classification of HTTP failures.
//! - `error_body` — the error JSON both formats send, as types.
//! - `lenient` — how every wire type reads a field a server sends in an odd shape.
//! - `overflow` — context-overflow errors as each server words them, and the window
//!   they name.
//! - `sse` — an incremental Server-Sent Events decoder.
//! - `pace` — each model's measured reading and writing speeds.
//! - `budget` — one call's whole-call limit and `max_tokens`, sized from those speeds.
//! - `transport` — what both wire formats share: keys and their rotation, the
//!   whole-call timeout, the idle watchdog, reading the event stream.
//! - `openai` — OpenAI-compatible chat completions (OpenAI, OpenRouter, Ollama, vLLM …);
//!   `openai::wire`, its request, stream chunks and reply as serde types.
//! - `anthropic` — the Anthropic Messages API; `anthropic::wire`, its request, stream
//!   events and reply as serde types.
//! - `chain` — try models in order: retry transient failures, fall back on the rest.
//! - `observe` — `CallObserver`: who hears of each request and fallback (the metrics).
//! - `cooldown` — which models are resting after errors, shared by every chain.
//! - `window` — asking a server for a model's context window.
//! - `fake_server` (tests only) — a scripted HTTP server the provider tests call.
//! - `round_trip` (tests only) — holding the wire types to the recorded examples in
//!   `fixtures/`.
//!
//! A provider makes exactly one call per `stream` and never retries; retrying is the
//! chain's job. Nothing here reads configuration files: the caller builds
//! `ProviderSettings`.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod anthropic;
mod budget;
mod chain;
mod cooldown;
mod error;
mod error_body;
mod lenient;
mod observe;
mod openai;
mod overflow;
mod pace;
mod sse;
mod transport;
pub mod types;
mod window;

#[cfg(test)]
mod fake_server;
#[cfg(test)]
mod http_tests;
#[cfg(test)]
mod round_trip;
#[cfg(test)]
mod timing_tests;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

pub use anthropic::AnthropicProvider;
pub use chain::{Chain, ChainEntry};
pub use cooldown::Cooldowns;
pub use error::{ErrorKind, ProviderError};
pub use observe::{CallObserver, Unobserved};
pub use openai::OpenAiProvider;
pub use pace::{Pace, Speeds};
pub use sse::{SseDecoder, SseEvent};
pub use types::{
    ChatMessage, ChatRequest, ChatResponse, ImageData, Part, Role, StopReason, StreamEvent,
    ToolSpec, Usage, text_of,
};
pub use window::{ServerWindow, window_from_server};

/// One model endpoint.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// Stream one model call; `on_event` sees text/reasoning deltas as they arrive.
    /// Returns the assembled reply.
    ///
    /// (`for<'a>` is spelled out because `async_trait` would turn an elided `'_` into
    /// one fixed lifetime, and the callback could not be handed borrowed deltas.)
    async fn stream(
        &self,
        req: &ChatRequest,
        on_event: &mut (dyn for<'a> FnMut(StreamEvent<'a>) + Send),
    ) -> Result<ChatResponse, ProviderError>;
}

/// How to reach one configured provider (`[providers.NAME]` plus its keys).
#[derive(Debug, Clone)]
pub struct ProviderSettings {
    /// The user's name for the provider, e.g. "openai"; used in error messages.
    pub name: String,
    /// OpenAI-compatible: ends in `/v1`. Anthropic: the host, `/v1/messages` is appended.
    pub base_url: String,
    /// May be empty: then no auth header is sent (Ollama, local servers).
    pub api_keys: Vec<secrecy::SecretString>,
    /// Bound on a reply once the request is read (`timeout_secs`); each call adds the
    /// time the model is expected to need to read its request.
    pub timeout: Duration,
    /// Longest silence allowed between stream bytes (keep-alives count as bytes).
    pub idle_timeout: Duration,
    /// `[models."NAME/<model>"] call_timeout_secs`, by model name: the whole limit of
    /// a call to that model, reading included.
    pub call_timeouts: BTreeMap<String, Duration>,
    /// Where the models' measured speeds are kept. Each provider has its own unless
    /// the caller hands several the same table.
    pub pace: Arc<Pace>,
}

impl ProviderSettings {
    /// Settings with the documented defaults: 120 s per reply, 90 s idle, no key, no
    /// per-model limits.
    pub fn new(name: impl Into<String>, base_url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            base_url: base_url.into(),
            api_keys: Vec::new(),
            timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(90),
            call_timeouts: BTreeMap::new(),
            pace: Arc::new(Pace::new()),
        }
    }

    /// Take the `call_timeout_secs` of this provider's models from `[models.*]`.
    pub fn read_call_timeouts(&mut self, models: &BTreeMap<String, pincer_config::ModelCaps>) {
        let prefix = format!("{}/", self.name);
        self.call_timeouts = models
            .iter()
            .filter_map(|(label, caps)| {
                let model = label.strip_prefix(&prefix)?;
                Some((
                    model.to_string(),
                    Duration::from_secs(caps.call_timeout_secs?),
                ))
            })
            .collect();
    }
}

/// The wire format a provider speaks (`kind` in `[providers.NAME]`): the config's own
/// type, one definition for both crates.
pub use pincer_config::ProviderKind;

/// Build the provider for `kind`.
pub fn build(
    kind: ProviderKind,
    settings: ProviderSettings,
    http: reqwest::Client,
) -> Arc<dyn Provider> {
    match kind {
        ProviderKind::Openai => Arc::new(OpenAiProvider::new(settings, http)),
        ProviderKind::Anthropic => Arc::new(AnthropicProvider::new(settings, http)),
    }
}

/// The HTTP client all providers share: the process's factory (`pincer_net::http`:
/// rustls, a 10 s connect timeout, the user agent), a few pooled connections per host,
/// and no overall timeout (each call sets its own).
pub fn http_client() -> Result<reqwest::Client, ProviderError> {
    pincer_net::http::client()
        .pool_idle_timeout(Duration::from_secs(90))
        // Enough for the turns that run at once; a burst leaves no crowd of idle sockets.
        .pool_max_idle_per_host(8)
        .build()
        .map_err(|e| {
            ProviderError::new(
                ErrorKind::Network,
                format!("could not set up the HTTP client: {e}"),
            )
        })
}
