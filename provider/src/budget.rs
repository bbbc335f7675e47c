//! Sizing one call to what the model can do: the whole-call limit grows with the
//! request's size at the model's measured reading speed, and `max_tokens` shrinks to
//! what the model can write, at its measured speed, within what is left of the limit.
//! A slow local model reading a 2,300-token request (56–140 s on a CPU) is not cut off
//! at a fixed 120 s, and a 4,096-token reply is not asked of a model that writes 5
//! tokens a second. Speeds come from `pace`; until a model is measured, reading is
//! assumed slow (`UNMEASURED_PROMPT_PER_SEC`) and `max_tokens` is left as asked.
//! Nothing here does I/O: `Meter` only takes times.

use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::pace::{Sample, Speeds};
use super::types::{ChatRequest, Part, Usage};

/// Prompt tokens a second assumed for a model not yet measured: a small model on a
/// CPU (issue 34 measured 17–41 for Qwen2.5-Coder 1.5B and 0.5B under llama.cpp).
pub(crate) const UNMEASURED_PROMPT_PER_SEC: f64 = 40.0;
/// The reading allowance is this many times the expected reading time.
const READ_MARGIN: f64 = 1.5;
/// Longest reading allowance added to a call: past it, the model is too slow for the
/// request and `agent.max_turn_secs` would end the turn anyway.
const MAX_READ_ALLOWANCE: Duration = Duration::from_secs(15 * 60);
/// Share of the writing time a capped reply is sized to fill.
const WRITE_SHARE: f64 = 0.8;
/// `max_tokens` is never capped below this: a reply needs room to say something.
pub(crate) const MIN_REPLY_TOKENS: u32 = 128;
/// What a picture costs in the estimate, as the agent counts it.
const IMAGE_TOKENS: u64 = 1_600;

/// The configured limits a call is sized within.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Limits {
    /// `providers.NAME.timeout_secs`: the time a reply may take once the request is
    /// read.
    pub reply: Duration,
    /// `[models."P/M"] call_timeout_secs`: the whole call, reading included, when set.
    pub call: Option<Duration>,
}

/// How one call is bounded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Budget {
    /// The whole call, from sending the request to the reply's last byte.
    pub limit: Duration,
    /// What to send as `max_tokens` (0: the request left it to the server).
    pub max_tokens: u32,
    /// The request's size, estimated (bytes ÷ 4).
    pub prompt_tokens: u64,
    /// `limit` is the configured `call_timeout_secs`, not derived.
    pub fixed: bool,
}

/// The budget of a call of `prompt_tokens` asking for `asked` output tokens.
///
/// Limit: `call_timeout_secs` when set; else `timeout_secs` plus 1.5 × the expected
/// reading time (at most 15 min). `max_tokens`: `asked`, lowered (not below 128) to
/// what the model writes at its measured speed in 80% of the time left after reading;
/// left as asked while the writing speed is unknown.
pub(crate) fn size(prompt_tokens: u64, asked: u32, limits: Limits, speeds: Speeds) -> Budget {
    let per_sec = speeds
        .prompt_per_sec
        .filter(|r| *r > 0.0)
        .unwrap_or(UNMEASURED_PROMPT_PER_SEC);
    let reading =
        (prompt_tokens as f64 / per_sec * READ_MARGIN).min(MAX_READ_ALLOWANCE.as_secs_f64());
    let reading = Duration::from_secs_f64(reading);
    let (limit, writing) = match limits.call {
        Some(call) => (call, call.saturating_sub(reading)),
        None => (limits.reply + reading, limits.reply),
    };
    let max_tokens = match speeds.output_per_sec.filter(|r| *r > 0.0) {
        Some(per_sec) => {
            let fits = (per_sec * writing.as_secs_f64() * WRITE_SHARE).min(f64::from(u32::MAX));
            let fits = (fits as u32).max(MIN_REPLY_TOKENS);
            if asked == 0 { fits } else { asked.min(fits) }
        }
        None => asked,
    };
    Budget {
        limit,
        max_tokens,
        prompt_tokens,
        fixed: limits.call.is_some(),
    }
}

/// The request's size in tokens, estimated as its text's bytes ÷ 4 (the system prompt,
/// every part, every tool's schema) plus 1,600 a picture.
pub(crate) fn estimate_tokens(req: &ChatRequest) -> u64 {
    let mut bytes = req.system_stable.len() + req.system_volatile.len();
    let mut images = 0;
    for part in req.messages.iter().flat_map(|m| &m.parts) {
        bytes += match part {
            Part::Text { text } | Part::Reasoning { text, .. } => text.len(),
            Part::ToolCall {
                name, arguments, ..
            } => name.len() + json_len(arguments),
            Part::ToolResult { content, .. } => content.len(),
            Part::Image { .. } => {
                images += 1;
                0
            }
        };
    }
    for tool in &req.tools {
        bytes += tool.name.len() + tool.description.len() + json_len(&tool.input_schema);
    }
    bytes as u64 / 4 + images * IMAGE_TOKENS
}

/// The length of a value's JSON, counted without building the string.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a counter cannot fail; a failure would only undercount.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// The clock of one call: when it began, when its reply began, and the server's own
/// figures when it reported them (llama.cpp's `timings`).
#[derive(Debug)]
pub(crate) struct Meter {
    started: Instant,
    reply_began: OnceLock<Instant>,
    server: Mutex<Option<Sample>>,
}

impl Meter {
    pub(crate) fn start() -> Self {
        Self {
            started: Instant::now(),
            reply_began: OnceLock::new(),
            server: Mutex::new(None),
        }
    }

    /// A piece of the reply arrived (the first one counts).
    pub(crate) fn reply_began(&self) {
        let _ = self.reply_began.get_or_init(Instant::now);
    }

    /// Whether any of the reply has arrived.
    pub(crate) fn replying(&self) -> bool {
        self.reply_began.get().is_some()
    }

    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The server measured the call itself; its figures beat the clock's.
    pub(crate) fn server_measured(&self, sample: Sample) {
        *self.server.lock().unwrap_or_else(PoisonError::into_inner) = Some(sample);
    }

    /// What the finished call showed: the server's own figures, else the clock's
    /// reading and writing times with the reply's usage (the prompt tokens the server
    /// read are those it did not have cached).
    pub(crate) fn sample(&self, usage: &Usage) -> Sample {
        if let Some(sample) = *self.server.lock().unwrap_or_else(PoisonError::into_inner) {
            return sample;
        }
        let now = Instant::now();
        let began = self.reply_began.get().copied().unwrap_or(now);
        Sample {
            prompt_tokens: usage.input_tokens + usage.cache_write_tokens,
            reading: began.saturating_duration_since(self.started),
            output_tokens: usage.output_tokens,
            writing: now.saturating_duration_since(began),
        }
    }
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
