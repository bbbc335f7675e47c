//! A chain of models tried in order (`[router] light` / `heavy`): retry a transient
//! failure on the same model with backoff (honouring `Retry-After`), fall back to the
//! next model on failures another model may not have, and never repeat a call that
//! already streamed output to the user. Cancellation is the caller's: drop the future.

use std::sync::Arc;
use std::time::Duration;

use super::Provider;
use super::error::{ErrorKind, ProviderError, format_duration};
use super::types::{ChatRequest, ChatResponse, StreamEvent};

/// First backoff delay; doubles per retry.
const BACKOFF_BASE: Duration = Duration::from_millis(500);
/// Longest backoff Pincer chooses itself.
const BACKOFF_CAP: Duration = Duration::from_secs(8);
/// Longest `Retry-After` honoured; a provider asking for more is waited on this long.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(30);
const DEFAULT_MAX_RETRIES: u32 = 2;

/// One model of a chain.
#[derive(Clone)]
pub struct ChainEntry {
    pub provider: Arc<dyn Provider>,
    /// How logs and the user see it, e.g. "openai/gpt-4.1-mini".
    pub label: String,
    /// The model name sent to the provider.
    pub model: String,
}

pub struct Chain {
    entries: Vec<ChainEntry>,
    /// Extra attempts per entry after a transient failure.
    max_retries: u32,
}

impl Chain {
    pub fn new(entries: Vec<ChainEntry>) -> Self {
        Self {
            entries,
            max_retries: DEFAULT_MAX_RETRIES,
        }
    }

    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    pub fn entries(&self) -> &[ChainEntry] {
        &self.entries
    }

    /// Stream one reply from the first entry that gives one. `req.model` is replaced by
    /// each entry's model. Returns the reply and the label of the entry that gave it; if
    /// every entry fails, the last error.
    pub async fn stream(
        &self,
        mut req: ChatRequest,
        on_event: &mut (dyn for<'a> FnMut(StreamEvent<'a>) + Send),
    ) -> Result<(ChatResponse, String), ProviderError> {
        let mut last_error = ProviderError::new(
            ErrorKind::BadRequest,
            "no models configured for this turn; list some in [router] light and heavy",
        );
        for (position, entry) in self.entries.iter().enumerate() {
            req.model.clone_from(&entry.model);
            let mut attempt = 0;
            let err = loop {
                let mut emitted = false;
                let result = {
                    let mut watch = |event: StreamEvent<'_>| {
                        emitted = true;
                        on_event(event);
                    };
                    entry.provider.stream(&req, &mut watch).await
                };
                let err = match result {
                    Ok(reply) => return Ok((reply, entry.label.clone())),
                    Err(err) => err,
                };
                if emitted {
                    // The user already saw part of this reply: another attempt would
                    // show it twice.
                    tracing::warn!(
                        label = %entry.label,
                        kind = err.kind.as_str(),
                        "model call failed mid-reply; not retrying"
                    );
                    return Err(err);
                }
                if !err.is_transient() || attempt >= self.max_retries {
                    break err;
                }
                let delay = backoff(attempt, err.retry_after);
                attempt += 1;
                tracing::warn!(
                    label = %entry.label,
                    kind = err.kind.as_str(),
                    status = err.status,
                    attempt,
                    delay = %format_duration(delay),
                    "model call failed; retrying"
                );
                tokio::time::sleep(delay).await;
            };
            if !falls_back(err.kind) {
                return Err(err);
            }
            if let Some(next) = self.entries.get(position + 1) {
                tracing::warn!(
                    label = %entry.label,
                    kind = err.kind.as_str(),
                    status = err.status,
                    next = %next.label,
                    "model failed; falling back to the next model"
                );
            }
            last_error = err;
        }
        Err(last_error)
    }
}

/// Whether another model may succeed where this one failed. A malformed request fails
/// everywhere; a long context may fit a bigger model.
fn falls_back(kind: ErrorKind) -> bool {
    kind != ErrorKind::BadRequest
}

/// The wait before retry number `attempt + 1`.
fn backoff(attempt: u32, retry_after: Option<Duration>) -> Duration {
    match retry_after {
        Some(wait) => wait.min(RETRY_AFTER_CAP),
        None => BACKOFF_BASE
            .saturating_mul(2u32.saturating_pow(attempt))
            .min(BACKOFF_CAP),
    }
}

#[cfg(test)]
#[path = "chain_tests.rs"]
mod tests;
