//! A chain of models tried in order (`[router] light` / `heavy`): retry a transient
//! failure on the same model with jittered exponential backoff (or the provider's
//! `Retry-After`), rest a model that was given up on (`Cooldowns`, shared by every
//! session) and skip it while it rests, and fall back to the next model on failures
//! another model may not have. A reply that stalls or turns to garbage after it began
//! is abandoned for the next model, announced by `StreamEvent::Restart`; it is never
//! repeated on the same model. Neither is a call that ran out of time while the server
//! was still reading it (`still_reading`): sent again at once, it would queue behind
//! the reading the server may still be doing, so the chain moves on to the next model
//! (the provider has meanwhile learnt the model reads slower, and gives its next call
//! more time). A server missing a start-up flag (`ServerConfig`) is not retried either.
//! The chain never runs tools: the caller runs them after
//! a complete reply, so an abandoned reply runs none. Cancellation is the caller's:
//! drop the future.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Provider;
use super::cooldown::{Cooldowns, format_rest, reason};
use super::error::{ErrorKind, ProviderError, format_duration};
use pincer_net::Backoff;
use pincer_net::backoff::random_unit;

use super::observe::{CallObserver, Unobserved};
use super::types::{ChatRequest, ChatResponse, StreamEvent};

/// The wait before retrying the same model (the process's one `Backoff`): 500 ms,
/// doubling per retry, at most 8 s before jitter.
const BACKOFF: Backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(8));
/// Jitter adds up to this share of the delay, so sessions that failed together do not
/// retry together.
const MAX_JITTER: f64 = 0.5;
/// Longest `Retry-After` waited out on the same model. A provider asking for more is
/// given up on at once (and rests that long), rather than waited on in vain.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(30);
const DEFAULT_MAX_RETRIES: u32 = 2;

/// One model of a chain.
#[derive(Clone)]
pub struct ChainEntry {
    pub provider: Arc<dyn Provider>,
    /// How logs and the user see it, e.g. "openai/gpt-4.1-mini". Also the key of its
    /// rest in `Cooldowns`.
    pub label: String,
    /// The model name sent to the provider.
    pub model: String,
    /// `[models."P/M"] thinking_budget`: extended thinking tokens (0 = off).
    pub thinking_budget: u32,
}

pub struct Chain {
    entries: Vec<ChainEntry>,
    /// Extra attempts per entry after a transient failure.
    max_retries: u32,
    /// Which models rest after failures. Shared with every other chain of the process
    /// so one session's rate limit spares the others the same wall.
    cooldowns: Arc<Cooldowns>,
    /// Told of each request and fallback (the process's metrics); counts nothing until
    /// `with_observer`.
    observer: Arc<dyn CallObserver>,
}

/// What became of one entry during a call, for the message when all of them fail.
enum Outcome<'a> {
    Failed(&'a str, ErrorKind),
    Skipped(&'a str, Duration, ErrorKind),
}

/// Why one entry was given up on.
struct GaveUp {
    err: ProviderError,
    /// Whether the caller saw part of the reply before it failed.
    emitted: bool,
}

impl Chain {
    /// A chain with its own, private `Cooldowns`; share one with `with_cooldowns`.
    pub fn new(entries: Vec<ChainEntry>) -> Self {
        Self {
            entries,
            max_retries: DEFAULT_MAX_RETRIES,
            cooldowns: Arc::new(Cooldowns::new()),
            observer: Arc::new(Unobserved),
        }
    }

    /// The labels of the chain's models, in order.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.label.as_str())
    }

    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// Use the process's shared table of resting models.
    pub fn with_cooldowns(mut self, cooldowns: Arc<Cooldowns>) -> Self {
        self.cooldowns = cooldowns;
        self
    }

    /// Tell `observer` of each request and fallback from now on.
    pub fn with_observer(mut self, observer: Arc<dyn CallObserver>) -> Self {
        self.observer = observer;
        self
    }

    pub fn entries(&self) -> &[ChainEntry] {
        &self.entries
    }

    pub fn cooldowns(&self) -> &Arc<Cooldowns> {
        &self.cooldowns
    }

    /// Stream one reply from the first entry that gives one. `req.model` is replaced by
    /// each entry's model. Returns the reply and the label of the entry that gave it.
    ///
    /// Entries that are cooling down are skipped — unless every entry is, in which
    /// case the one whose rest ends soonest is tried anyway: a stale rest never locks
    /// the user out, and a model that is still failing says so in its own words.
    ///
    /// If every entry fails, the last error, its message naming each model tried and
    /// what became of it.
    pub async fn stream(
        &self,
        mut req: ChatRequest,
        on_event: &mut (dyn for<'a> FnMut(StreamEvent<'a>) + Send),
    ) -> Result<(ChatResponse, String), ProviderError> {
        let forced = self.soonest_if_all_cooling(Instant::now());
        let mut outcomes = Vec::new();
        let mut last_error = None;
        // Set when a reply was abandoned part-way: the next event (or reply) of another
        // model is preceded by `Restart`.
        let mut restart = false;
        for (position, entry) in self.entries.iter().enumerate() {
            let label = entry.label.as_str();
            if forced == Some(position) {
                tracing::info!(
                    label,
                    "every model is cooling down; trying {label} anyway, its rest ends soonest"
                );
            } else if let Some((left, kind)) = self.cooldowns.cooling(label, Instant::now()) {
                tracing::info!(
                    "skipping {label}: cooling down for {} after {}",
                    format_rest(left),
                    reason(kind)
                );
                outcomes.push(Outcome::Skipped(label, left, kind));
                continue;
            }
            req.model.clone_from(&entry.model);
            req.thinking_budget = entry.thinking_budget;
            let GaveUp { err, emitted } =
                match self.attempt(entry, &req, on_event, &mut restart).await {
                    Ok(reply) => {
                        self.cooldowns.record_success(label);
                        return Ok((reply, entry.label.clone()));
                    }
                    Err(gave_up) => gave_up,
                };
            self.cooldowns
                .record_failure(label, err.kind, err.retry_after, Instant::now());
            outcomes.push(Outcome::Failed(label, err.kind));
            // A failure mid-reply that is not the model's passing trouble (say, an auth
            // error in a stream) ends the turn as before: the user keeps what they saw.
            if !falls_back(err.kind) || (emitted && !err.is_transient()) {
                return Err(summarise(err, &outcomes));
            }
            restart |= emitted;
            self.observer.fallback(label);
            tracing::warn!(
                label,
                kind = err.kind.as_str(),
                status = err.status,
                mid_reply = emitted,
                "giving up on the model; falling back to the next one, if any"
            );
            last_error = Some(err);
        }
        match last_error {
            Some(err) => Err(summarise(err, &outcomes)),
            None => Err(nothing_tried(&outcomes)),
        }
    }

    /// Call one entry, retrying transient failures that happened before any output.
    async fn attempt(
        &self,
        entry: &ChainEntry,
        req: &ChatRequest,
        on_event: &mut (dyn for<'a> FnMut(StreamEvent<'a>) + Send),
        restart: &mut bool,
    ) -> Result<ChatResponse, GaveUp> {
        let mut attempt = 0;
        loop {
            let mut emitted = false;
            let result = {
                let mut watch = |event: StreamEvent<'_>| {
                    if std::mem::take(restart) {
                        on_event(StreamEvent::Restart);
                    }
                    emitted = true;
                    on_event(event);
                };
                entry.provider.stream(req, &mut watch).await
            };
            let outcome = result
                .as_ref()
                .map_or_else(|err| err.kind.as_str(), |_| "ok");
            self.observer.call(&entry.label, outcome);
            let err = match result {
                Ok(reply) => {
                    // A reply with no deltas still replaces the abandoned one.
                    if std::mem::take(restart) {
                        on_event(StreamEvent::Restart);
                    }
                    return Ok(reply);
                }
                Err(err) => err,
            };
            // Output already shown is never repeated on the same model; a transient
            // failure mid-reply moves on to the next model instead, as does a request
            // the server may still be reading.
            if emitted || !err.is_transient() || err.still_reading || attempt >= self.max_retries {
                return Err(GaveUp { err, emitted });
            }
            let delay = match err.retry_after {
                Some(wait) if wait > RETRY_AFTER_CAP => {
                    tracing::warn!(
                        label = %entry.label,
                        kind = err.kind.as_str(),
                        retry_after = %format_duration(wait),
                        "the provider asks for a long wait; not retrying this model"
                    );
                    return Err(GaveUp { err, emitted });
                }
                Some(wait) => wait,
                None => backoff(attempt, random_unit()),
            };
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
        }
    }

    /// The position of the entry whose rest ends soonest, when every entry rests.
    fn soonest_if_all_cooling(&self, now: Instant) -> Option<usize> {
        let mut soonest: Option<(usize, Duration)> = None;
        for (position, entry) in self.entries.iter().enumerate() {
            let (left, _) = self.cooldowns.cooling(&entry.label, now)?;
            if soonest.is_none_or(|(_, best)| left < best) {
                soonest = Some((position, left));
            }
        }
        soonest.map(|(position, _)| position)
    }
}

/// The error when no entry was called: none configured, or all began resting
/// while this call went down the chain.
fn nothing_tried(outcomes: &[Outcome<'_>]) -> ProviderError {
    let next = outcomes
        .iter()
        .filter_map(|outcome| match outcome {
            Outcome::Skipped(_, left, kind) => Some((*left, *kind)),
            Outcome::Failed(..) => None,
        })
        .min_by_key(|(left, _)| *left);
    match next {
        Some((left, kind)) => ProviderError::new(
            kind,
            format!(
                "all models are cooling down after errors (next in {}); try again shortly",
                format_rest(left)
            ),
        ),
        None => ProviderError::new(
            ErrorKind::BadRequest,
            "no models configured for this turn; list some in [router] light and heavy",
        ),
    }
}

/// Whether another model may succeed where this one failed. A malformed request fails
/// everywhere; a long context may fit a bigger model.
fn falls_back(kind: ErrorKind) -> bool {
    kind != ErrorKind::BadRequest
}

/// When more than one model was involved, say in `err`'s message what became of each:
/// "…; all 2 models failed (a/m1: rate limit, b/m2: server error)".
fn summarise(mut err: ProviderError, outcomes: &[Outcome<'_>]) -> ProviderError {
    if outcomes.len() < 2 {
        return err;
    }
    let mut skipped = false;
    let each: Vec<String> = outcomes
        .iter()
        .map(|outcome| match outcome {
            Outcome::Failed(label, kind) => format!("{label}: {}", reason(*kind)),
            Outcome::Skipped(label, left, kind) => {
                skipped = true;
                format!(
                    "{label}: cooling down for {} after {}",
                    format_rest(*left),
                    reason(*kind)
                )
            }
        })
        .collect();
    let headline = if skipped {
        "no model could answer".to_string()
    } else {
        format!("all {} models failed", outcomes.len())
    };
    let summary = format!("{headline} ({})", each.join(", "));
    err.message = if err.message.is_empty() {
        summary
    } else {
        format!("{}; {summary}", err.message)
    };
    err
}

/// The wait before retry number `attempt + 1`: `BACKOFF` after `attempt + 1` failures,
/// plus `unit` (in `[0, 1)`) times half of that.
fn backoff(attempt: u32, unit: f64) -> Duration {
    BACKOFF.jittered(attempt.saturating_add(1), MAX_JITTER, unit)
}

#[cfg(test)]
#[path = "chain_tests.rs"]
mod tests;
