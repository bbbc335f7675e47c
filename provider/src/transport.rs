//! What both wire formats share around one HTTP call: choosing the API key (and rotating
//! to the next after an auth or rate-limit failure), sizing the call (`begin`: its
//! whole-call limit and `max_tokens`, from the model's measured speeds), the whole-call
//! timeout, reading a rejected answer, pumping the SSE stream under the idle watchdog,
//! and measuring how fast the model read and wrote. It knows nothing of either format's
//! JSON.
//!
//! The idle watchdog counts every byte as life, keep-alive comments (`:` lines) too:
//! llama.cpp sends only those, every 30 s, while it reads a long prompt. A timeout
//! before any of the reply arrived — the server still reading — is marked
//! `still_reading` and teaches the model's table that it reads slower than that.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use secrecy::{ExposeSecret, SecretString};

use super::ProviderSettings;
use super::budget::{self, Budget, Limits, Meter};
use super::error::{self, ErrorKind, ProviderError, format_duration};
use super::sse::{SseDecoder, SseEvent};
use super::types::{ChatRequest, ChatResponse};

/// Whether the stream handler wants more events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    More,
    Done,
}

/// A non-2xx answer, read in full.
#[derive(Debug)]
pub(crate) struct Rejection {
    pub status: u16,
    pub body: String,
    pub retry_after: Option<Duration>,
}

impl Rejection {
    pub(crate) fn classify(&self) -> ProviderError {
        error::classify_http(self.status, &self.body, self.retry_after)
    }
}

/// One call in progress: how it is bounded and its clock.
#[derive(Debug)]
pub(crate) struct Call {
    /// "provider/model": the key of the model's speeds, and how messages name it.
    pub label: String,
    pub budget: Budget,
    pub meter: Meter,
}

pub(crate) struct Transport {
    pub settings: ProviderSettings,
    pub http: reqwest::Client,
    /// Named in auth errors: where else the key may come from.
    key_env: &'static str,
    /// Index of the key the next call uses; moves on after a failure that another key
    /// may not have (auth, billing, rate limit), so calls spread over the keys.
    next_key: AtomicUsize,
}

impl Transport {
    pub(crate) fn new(
        settings: ProviderSettings,
        http: reqwest::Client,
        key_env: &'static str,
    ) -> Self {
        Self {
            settings,
            http,
            key_env,
            next_key: AtomicUsize::new(0),
        }
    }

    /// `base_url` + `path`, with exactly one `/` between them.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{}", self.settings.base_url.trim_end_matches('/'), path)
    }

    /// The key for the next call and its index, or `None` when no key is configured.
    pub(crate) fn key(&self) -> Option<(usize, &SecretString)> {
        let keys = &self.settings.api_keys;
        if keys.is_empty() {
            return None;
        }
        let index = self.next_key.load(Ordering::Relaxed) % keys.len();
        keys.get(index).map(|key| (index, key))
    }

    /// Size a call of `req` to the model's measured speeds and the configured limits.
    pub(crate) fn begin(&self, req: &ChatRequest) -> Call {
        let label = format!("{}/{}", self.settings.name, req.model);
        let limits = Limits {
            reply: self.settings.timeout,
            call: self.settings.call_timeouts.get(&req.model).copied(),
        };
        let speeds = self.settings.pace.speeds(&label);
        let budget = budget::size(budget::estimate_tokens(req), req.max_tokens, limits, speeds);
        if budget.max_tokens != req.max_tokens {
            tracing::debug!(
                label,
                asked = req.max_tokens,
                max_tokens = budget.max_tokens,
                output_per_sec = speeds.output_per_sec,
                limit = %format_duration(budget.limit),
                "max_tokens sized to what the model can write within the call's limit"
            );
        }
        Call {
            label,
            budget,
            meter: Meter::start(),
        }
    }

    /// Run one call: bound it by its whole-call limit, learn the model's speeds from
    /// it, then label any error with the provider, scrub keys from it and rotate the
    /// key if the failure was the key's.
    pub(crate) async fn run(
        &self,
        key_index: Option<usize>,
        call: &Call,
        reply: impl Future<Output = Result<ChatResponse, ProviderError>>,
    ) -> Result<ChatResponse, ProviderError> {
        let result = match tokio::time::timeout(call.budget.limit, reply).await {
            Ok(result) => result,
            Err(_elapsed) => Err(self.out_of_time(call)),
        };
        let pace = &self.settings.pace;
        let mut err = match result {
            Ok(reply) => {
                pace.record(&call.label, call.meter.sample(&reply.usage));
                return Ok(reply);
            }
            Err(err) => err,
        };
        // A timeout Pincer measured (the answers 408 and 504 carry a status) before any
        // of the reply: the server was still reading, and reads slower than this.
        if err.kind == ErrorKind::Timeout && err.status.is_none() && !call.meter.replying() {
            err.still_reading = true;
            pace.record_slow_read(&call.label, call.budget.prompt_tokens, call.meter.elapsed());
        }
        if let Some(index) = key_index {
            self.rotate_after(index, err.kind);
        }
        let mut err = err.for_provider(&self.settings.name, Some(self.key_env));
        err.message = self.scrub(&err.message);
        Err(err)
    }

    /// The whole-call limit passed: say what the model was doing and which setting
    /// gives it longer.
    fn out_of_time(&self, call: &Call) -> ProviderError {
        let limit = format_duration(call.budget.limit);
        let label = &call.label;
        let setting = if call.budget.fixed {
            format!("raise [models.\"{label}\"] call_timeout_secs")
        } else {
            format!(
                "raise providers.{}.timeout_secs, or set [models.\"{label}\"] call_timeout_secs",
                self.settings.name
            )
        };
        let message = if call.meter.replying() {
            format!("no complete reply within {limit}; {setting} if the model needs longer")
        } else {
            format!(
                "the model was still reading the request (about {} tokens) when the call's limit of {limit} passed; the next call allows for the reading speed seen now, or {setting}",
                call.budget.prompt_tokens
            )
        };
        ProviderError::new(ErrorKind::Timeout, message)
    }

    fn rotate_after(&self, index: usize, kind: ErrorKind) {
        let count = self.settings.api_keys.len();
        if count < 2
            || !matches!(
                kind,
                ErrorKind::Auth | ErrorKind::Billing | ErrorKind::RateLimit
            )
        {
            return;
        }
        // Only the first of several concurrent failures with the same key moves on;
        // losing this race is fine, the others already moved.
        let moved = self.next_key.compare_exchange(
            index,
            (index + 1) % count,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        if moved.is_ok() {
            tracing::warn!(
                provider = %self.settings.name,
                key = index + 1,
                next_key = (index + 1) % count + 1,
                kind = kind.as_str(),
                "switching to the provider's next API key"
            );
        }
    }

    /// Remove anything key-like a provider echoed back in its message.
    fn scrub(&self, message: &str) -> String {
        let mut out = message.to_string();
        for key in &self.settings.api_keys {
            let key = key.expose_secret();
            if key.len() >= 8 {
                out = out.replace(key, "[redacted]");
            }
        }
        out.split(' ')
            .map(|word| {
                if word.starts_with("sk-") && word.len() > 8 {
                    "[redacted]"
                } else {
                    word
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Send a request; connection failures become `Network`/`Timeout` errors.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ProviderError> {
        request.send().await.map_err(|e| error::from_reqwest(&e))
    }

    /// Read a non-2xx answer's body (a failed read leaves it empty: the status alone
    /// still classifies).
    pub(crate) async fn rejection(&self, response: reqwest::Response) -> Rejection {
        let status = response.status().as_u16();
        let retry_after = error::retry_after(response.headers());
        let body = tokio::time::timeout(self.settings.idle_timeout, response.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        Rejection {
            status,
            body,
            retry_after,
        }
    }

    /// Feed the SSE events of a 2xx answer to `handle` until it says `Done` or the
    /// stream ends. Each read waits at most `idle_timeout`.
    pub(crate) async fn pump(
        &self,
        response: reqwest::Response,
        mut handle: impl FnMut(SseEvent) -> Result<Flow, ProviderError>,
    ) -> Result<(), ProviderError> {
        let mut bytes = response.bytes_stream();
        let mut decoder = SseDecoder::new();
        loop {
            let next = tokio::time::timeout(self.settings.idle_timeout, bytes.next()).await;
            let events = match next {
                Err(_elapsed) => return Err(self.idle_error()),
                Ok(Some(Ok(chunk))) => decoder.feed(&chunk),
                Ok(Some(Err(e))) => return Err(error::from_reqwest(&e)),
                Ok(None) => {
                    if let Some(event) = decoder.finish() {
                        handle(event)?;
                    }
                    return Ok(());
                }
            };
            for event in events {
                if handle(event)? == Flow::Done {
                    return Ok(());
                }
            }
        }
    }

    fn idle_error(&self) -> ProviderError {
        ProviderError::new(
            ErrorKind::Timeout,
            format!(
                "no data from the model for {}; raise providers.{}.idle_timeout_secs if it needs longer pauses",
                format_duration(self.settings.idle_timeout),
                self.settings.name
            ),
        )
    }
}

/// A JSON data line that does not parse.
pub(crate) fn malformed(data: &str, err: &serde_json::Error) -> ProviderError {
    let sample: String = data.chars().take(80).collect();
    ProviderError::new(
        ErrorKind::InvalidResponse,
        format!("malformed JSON in the stream ({err}): {sample}"),
    )
}

/// The stream ended before the format's terminal event.
pub(crate) fn cut_short() -> ProviderError {
    ProviderError::new(ErrorKind::Network, "connection closed mid-reply")
}
