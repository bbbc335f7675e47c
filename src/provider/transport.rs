//! What both wire formats share around one HTTP call: choosing the API key (and rotating
//! to the next after an auth or rate-limit failure), the whole-call timeout, reading a
//! rejected answer, and pumping the SSE stream under the idle watchdog. It knows nothing
//! of either format's JSON.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use secrecy::{ExposeSecret, SecretString};

use super::ProviderSettings;
use super::error::{self, ErrorKind, ProviderError, format_duration};
use super::sse::{SseDecoder, SseEvent};

/// Whether the stream handler wants more events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    More,
    Done,
}

/// A non-2xx answer, read in full.
#[derive(Debug)]
pub struct Rejection {
    pub status: u16,
    pub body: String,
    pub retry_after: Option<Duration>,
}

impl Rejection {
    pub fn classify(&self) -> ProviderError {
        error::classify_http(self.status, &self.body, self.retry_after)
    }
}

pub struct Transport {
    pub settings: ProviderSettings,
    pub http: reqwest::Client,
    /// Named in auth errors: where else the key may come from.
    key_env: &'static str,
    /// Index of the key the next call uses; moves on after a failure that another key
    /// may not have (auth, billing, rate limit), so calls spread over the keys.
    next_key: AtomicUsize,
}

impl Transport {
    pub fn new(settings: ProviderSettings, http: reqwest::Client, key_env: &'static str) -> Self {
        Self {
            settings,
            http,
            key_env,
            next_key: AtomicUsize::new(0),
        }
    }

    /// `base_url` + `path`, with exactly one `/` between them.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.settings.base_url.trim_end_matches('/'), path)
    }

    /// The key for the next call and its index, or `None` when no key is configured.
    pub fn key(&self) -> Option<(usize, &SecretString)> {
        let keys = &self.settings.api_keys;
        if keys.is_empty() {
            return None;
        }
        let index = self.next_key.load(Ordering::Relaxed) % keys.len();
        keys.get(index).map(|key| (index, key))
    }

    /// Run one call: bound it by the whole-call timeout, then label any error with the
    /// provider, scrub keys from it and rotate the key if the failure was the key's.
    pub async fn run<T>(
        &self,
        key_index: Option<usize>,
        call: impl Future<Output = Result<T, ProviderError>>,
    ) -> Result<T, ProviderError> {
        let result = match tokio::time::timeout(self.settings.timeout, call).await {
            Ok(result) => result,
            Err(_elapsed) => Err(ProviderError::new(
                ErrorKind::Timeout,
                format!(
                    "no complete reply within {}; raise providers.{}.timeout_secs if the model needs longer",
                    format_duration(self.settings.timeout),
                    self.settings.name
                ),
            )),
        };
        result.map_err(|err| {
            if let Some(index) = key_index {
                self.rotate_after(index, err.kind);
            }
            let mut err = err.for_provider(&self.settings.name, Some(self.key_env));
            err.message = self.scrub(&err.message);
            err
        })
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
    pub async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ProviderError> {
        request.send().await.map_err(|e| error::from_reqwest(&e))
    }

    /// Read a non-2xx answer's body (a failed read leaves it empty: the status alone
    /// still classifies).
    pub async fn rejection(&self, response: reqwest::Response) -> Rejection {
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
    pub async fn pump(
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
pub fn malformed(data: &str, err: &serde_json::Error) -> ProviderError {
    let sample: String = data.chars().take(80).collect();
    ProviderError::new(
        ErrorKind::InvalidResponse,
        format!("malformed JSON in the stream ({err}): {sample}"),
    )
}

/// The stream ended before the format's terminal event.
pub fn cut_short() -> ProviderError {
    ProviderError::new(ErrorKind::Network, "connection closed mid-reply")
}
