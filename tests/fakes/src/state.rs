//! The state one fake model shares between its handle and its request handlers: the
//! script queue, the request log, the required key and the id counters; for
//! transcriptions, the transcript, the scripted failures and their own log.
//!
//! Locks here are short and never held across `.await`.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::http::HeaderMap;
use serde_json::Value;
use tokio::sync::watch;

use crate::cache::PromptCache;
use crate::recorded::{self, Format, Recorded, RecordedJson, Transcription};
use crate::reply::Turn;
use crate::step::Step;
use crate::tokens;
use crate::transcription::{Failure, Transcript};

pub(crate) struct Shared {
    inner: Mutex<Inner>,
    /// How many requests are recorded, so `wait_for_requests` wakes without polling.
    recorded: watch::Sender<usize>,
    /// Becomes `true` when the `FakeModel` is dropped: stalled streams end then.
    shutdown: watch::Receiver<bool>,
    /// When the fake started, for `at_ms` in `GET /_fake/requests`.
    started: Instant,
    /// Set by `FakeModel::keep_bodies(false)`.
    bodies_off: std::sync::atomic::AtomicBool,
    /// How many transcription requests are recorded, for `wait_for_transcriptions`.
    transcribed: watch::Sender<usize>,
    /// `POST /v1/audio/speech`: its log and scripted failures (not cleared by `reset`).
    speeches: crate::speech::Speeches,
    /// How many streamed replies lost their client before their end (`hung_up`).
    hung_up: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

#[derive(Default)]
struct Inner {
    queue: VecDeque<Step>,
    requests: Vec<Recorded>,
    /// Set by `require_key`: requests without it get 401.
    required_key: Option<String>,
    /// Chat turns answered so far (the next turn's number is this + 1).
    turns: u64,
    /// Tool calls issued so far, so ids stay unique across turns.
    calls: u64,
    /// The previous request of each model, to imitate prompt caching.
    cache: PromptCache,
    /// What every transcription answers (`set_transcript`).
    transcript: Transcript,
    /// Failures for the next transcriptions, FIFO (`fail_next_transcription`).
    transcription_failures: VecDeque<Failure>,
    /// Every transcription request, oldest first.
    transcriptions: Vec<Transcription>,
    /// `delay_transcriptions`: how long each transcription takes to answer.
    transcription_delay: Option<std::time::Duration>,
    /// `limit_context`: requests estimated over this many tokens are refused.
    context_limit: Option<u64>,
    /// `drop_tools`: the tools of a request are neither counted nor called, as a
    /// server whose chat template has no place for them.
    drops_tools: bool,
    /// `answer_when_system_contains`: standing answers to requests whose system prompt
    /// holds the text, taken before the queue (and never used up).
    rules: Vec<(String, Step)>,
}

impl Shared {
    pub(crate) fn new(shutdown: watch::Receiver<bool>) -> Shared {
        Shared {
            inner: Mutex::new(Inner::default()),
            recorded: watch::Sender::new(0),
            transcribed: watch::Sender::new(0),
            bodies_off: std::sync::atomic::AtomicBool::new(false),
            shutdown,
            started: Instant::now(),
            hung_up: Default::default(),
            speeches: Default::default(),
        }
    }

    pub(crate) fn speeches(&self) -> &crate::speech::Speeches {
        &self.speeches
    }

    pub(crate) fn hung_up(&self) -> u64 {
        self.hung_up.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn shutdown(&self) -> watch::Receiver<bool> {
        self.shutdown.clone()
    }

    pub(crate) fn push(&self, steps: impl IntoIterator<Item = Step>) -> usize {
        let mut inner = self.lock();
        inner.queue.extend(steps);
        inner.queue.len()
    }

    pub(crate) fn require_key(&self, key: Option<String>) {
        self.lock().required_key = key;
    }

    pub(crate) fn required_key(&self) -> Option<String> {
        self.lock().required_key.clone()
    }

    /// Clears the queue, the log, the counters, the cache memory, the context limit and
    /// the standing answers (not the key); the transcript goes back to its default, its
    /// failures and log are cleared.
    pub(crate) fn reset(&self) {
        let mut inner = self.lock();
        let key = inner.required_key.take();
        *inner = Inner {
            required_key: key,
            ..Inner::default()
        };
        self.recorded.send_replace(0);
        self.transcribed.send_replace(0);
    }

    pub(crate) fn set_transcript(&self, transcript: Transcript) {
        self.lock().transcript = transcript;
    }

    pub(crate) fn transcript(&self) -> Transcript {
        self.lock().transcript.clone()
    }

    /// Queues a failure for the next transcription; returns how many are queued.
    pub(crate) fn fail_next_transcription(&self, failure: Failure) -> usize {
        let mut inner = self.lock();
        inner.transcription_failures.push_back(failure);
        inner.transcription_failures.len()
    }

    pub(crate) fn take_transcription_failure(&self) -> Option<Failure> {
        self.lock().transcription_failures.pop_front()
    }

    pub(crate) fn record_transcription(&self, transcription: Transcription) {
        let count = {
            let mut inner = self.lock();
            inner.transcriptions.push(transcription);
            inner.transcriptions.len()
        };
        self.transcribed.send_replace(count);
    }

    pub(crate) fn transcriptions(&self) -> Vec<Transcription> {
        self.lock().transcriptions.clone()
    }

    pub(crate) fn transcribed_count(&self) -> watch::Receiver<usize> {
        self.transcribed.subscribe()
    }

    /// Whether requests are recorded whole; off, only their format and time are kept
    /// (benchmarks sending thousands of requests).
    pub(crate) fn keep_bodies(&self, keep: bool) {
        self.bodies_off
            .store(!keep, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn record(&self, format: Format, headers: &HeaderMap, body: Value) {
        let keep = !self.bodies_off.load(std::sync::atomic::Ordering::Relaxed);
        let body = if keep { body } else { Value::Null };
        let headers = headers
            .iter()
            .filter(|_| keep)
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_string(), value)
            })
            .collect();
        let recorded = Recorded {
            format,
            body,
            headers,
            at: Instant::now(),
        };
        let count = {
            let mut inner = self.lock();
            inner.requests.push(recorded);
            inner.requests.len()
        };
        self.recorded.send_replace(count);
    }

    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.lock().requests.clone()
    }

    pub(crate) fn requests_json(&self) -> Vec<RecordedJson> {
        let inner = self.lock();
        let started = self.started;
        inner
            .requests
            .iter()
            .map(|r| RecordedJson::new(r, started))
            .collect()
    }

    pub(crate) fn recorded_count(&self) -> watch::Receiver<usize> {
        self.recorded.subscribe()
    }

    pub(crate) fn delay_transcriptions(&self, delay: Option<std::time::Duration>) {
        self.lock().transcription_delay = delay;
    }

    pub(crate) fn transcription_delay(&self) -> Option<std::time::Duration> {
        self.lock().transcription_delay
    }

    pub(crate) fn limit_context(&self, tokens: Option<u64>) {
        self.lock().context_limit = tokens;
    }

    pub(crate) fn drop_tools(&self, drop: bool) {
        self.lock().drops_tools = drop;
    }

    /// The tokens of the request's tools when the server drops them (`drop_tools`).
    fn dropped(&self, body: &Value) -> u64 {
        match self.lock().drops_tools {
            true if body.get("tools").is_some() => body["tools"].to_string().len() as u64 / 4,
            _ => 0,
        }
    }

    /// The request's estimated tokens when they are over `limit_context`'s limit.
    pub(crate) fn over_context(&self, body: &Value, raw: &Bytes) -> Option<(u64, u64)> {
        let limit = self.lock().context_limit?;
        let tokens = (raw.len() as u64 / 4).saturating_sub(self.dropped(body));
        (tokens > limit).then_some((tokens, limit))
    }

    pub(crate) fn add_rule(&self, needle: String, step: Step) {
        self.lock().rules.push((needle, step));
    }

    /// Takes the next step (or the echo default) and numbers the turn.
    pub(crate) fn begin_turn(&self, format: Format, body: &Value, raw: &Bytes) -> (Step, Turn) {
        let dropped = self.dropped(body);
        let mut inner = self.lock();
        let system = recorded::system_text(body);
        let ruled = inner
            .rules
            .iter()
            .find(|(needle, _)| system.contains(needle.as_str()))
            .map(|(_, step)| step.clone());
        let step = ruled
            .or_else(|| inner.queue.pop_front())
            .unwrap_or_else(|| {
                Step::text(format!(
                    "echo: {}",
                    recorded::strip_stamp(&recorded::last_user_text(body))
                ))
            });
        let calls = match step.innermost() {
            Step::ToolCalls { calls, .. } => calls.len() as u64,
            _ => 0,
        };
        inner.turns += 1;
        let first_call = inner.calls + 1;
        inner.calls += calls;
        let shared = inner.cache.shared(format, body);
        let mut prompt = tokens::prompt(format, shared, raw);
        prompt.total = prompt.total.saturating_sub(dropped).max(1);
        prompt.cache_read = prompt.cache_read.min(prompt.total);
        prompt.cache_write = prompt.cache_write.min(prompt.total - prompt.cache_read);
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let turn = Turn {
            format,
            stream: body["stream"] == true,
            include_usage: body["stream_options"]["include_usage"] == true,
            model: body["model"].as_str().unwrap_or_default().to_string(),
            number: inner.turns,
            first_call,
            prompt,
            created,
            thinking: format == Format::Anthropic && body["thinking"]["type"] == "enabled",
            hung_up: std::sync::Arc::clone(&self.hung_up),
        };
        (step, turn)
    }
}
