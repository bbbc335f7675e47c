//! The credential scrubber: every text that leaves the process — replies to channels,
//! chat-command answers, log lines, tool results shown to the model — passes through
//! it. Known token shapes (OpenAI, Anthropic, GitHub, AWS, Slack, Telegram) and every
//! secret value loaded at start become `[REDACTED]`, and so do the secret's simple
//! transforms (`forms`): base64 anywhere inside a longer base64 text, URL-safe base64,
//! hex, the reversed string, and a header's credential without its scheme. A streamed
//! reply goes through `StreamScrubber`, which holds back the end of the stream while it
//! may be the beginning of a secret, so a secret split across pieces is seen whole.
//!
//! It must never be the only thing between a secret and a chat: it catches what it
//! knows, it does not sandbox.

mod forms;
mod literals;
mod stream;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use pincer_channels::{Chunk, OutboundBody};
use regex::Regex;

pub use forms::header_forms;
use literals::Literals;
pub use stream::StreamScrubber;

pub const REDACTED: &str = "[REDACTED]";

/// Secret values shorter than this are not scrubbed one by one (too many false hits).
const MIN_SECRET_LEN: usize = 8;

/// Token shapes. Each matches only runs of `is_token_char` characters, with `\b` at
/// most at its two ends: `StreamScrubber` relies on that to know where a stream may be
/// cut without splitting a match (see `stream::is_cut`).
const PATTERNS: &[&str] = &[
    r"sk-ant-[A-Za-z0-9_\-]{16,}",               // Anthropic
    r"sk-(?:proj-)?[A-Za-z0-9_\-]{20,}",         // OpenAI and compatible
    r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}", // GitHub tokens
    r"github_pat_[A-Za-z0-9_]{22,}",             // GitHub fine-grained tokens
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",            // AWS access key ids
    r"xox[abprs]-[A-Za-z0-9\-]{10,}",            // Slack bot/user tokens
    r"xapp-[A-Za-z0-9\-]{10,}",                  // Slack app tokens
    r"\b[0-9]{8,10}:[A-Za-z0-9_\-]{35}\b",       // Telegram bot tokens
];

/// `text` with its `%XX` escapes decoded, when it has any (and they decode to text).
fn percent_decoded(text: &str) -> Option<String> {
    if !text.contains('%') {
        return None;
    }
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escape = (bytes[i] == b'%')
            .then(|| Some((hex(*bytes.get(i + 1)?)?, hex(*bytes.get(i + 2)?)?)))
            .flatten();
        match escape {
            Some((hi, lo)) => {
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'%'));
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// How many letters and digits of a secret in a row `carries_loosely` looks for.
const LOOSE_PIECE: usize = 16;

/// Only the ASCII letters and digits of `text`, lower-cased.
fn loosely(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The characters any of `PATTERNS` can match.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':')
}

pub struct Scrubber {
    patterns: Vec<Regex>,
    /// Each secret as is and reversed, matched in the text as it stands.
    plain: Option<Literals>,
    /// Each secret's base64 and hex forms, matched with line breaks taken out.
    encoded: Option<Literals>,
    /// Each secret as `loosely` folds it, for what a person types (`carries_loosely`).
    folded: Vec<String>,
}

impl Scrubber {
    pub fn new(mut secrets: Vec<String>) -> Self {
        secrets.retain(|s| s.len() >= MIN_SECRET_LEN);
        let mut plain = Vec::new();
        let mut encoded = Vec::new();
        let folded = secrets.iter().map(|s| loosely(s)).collect();
        for secret in secrets {
            encoded.extend(forms::encoded(&secret));
            plain.push(forms::reversed(&secret));
            plain.push(secret);
        }
        // The patterns are constants tested in `tests`; one that failed to compile would
        // simply not scrub, never crash.
        let patterns = PATTERNS.iter().filter_map(|p| Regex::new(p).ok()).collect();
        Self {
            patterns,
            plain: Literals::new(plain, false),
            encoded: Literals::new(encoded, true),
            folded,
        }
    }

    /// Whether `text` carries a secret as a person might type or be talked into typing
    /// it: in any case, with spaces, dashes or hidden characters between its letters,
    /// or without its public prefix (`sk-proj-`) — any `LOOSE_PIECE` letters and digits
    /// of it in a row. For answers that leave Pincer (an MCP server's question), on top
    /// of `scrub`.
    pub fn carries_loosely(&self, text: &str) -> bool {
        let text = loosely(text);
        self.folded.iter().any(|secret| {
            let piece = LOOSE_PIECE.min(secret.len());
            piece > 0 && (0..=secret.len() - piece).any(|at| text.contains(&secret[at..at + piece]))
        })
    }

    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let spans = self.spans(text);
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        Cow::Owned(redact(text, &spans))
    }

    /// Whether `text` holds anything the scrubber would take out.
    pub fn finds(&self, text: &str) -> bool {
        !self.spans(text).is_empty()
    }

    /// Whether tool-call arguments carry a secret: in any of their strings or keys as
    /// the tool will read them (JSON escapes undone, so a secret with `"` or `\` in it
    /// is found), or percent-decoded (a secret put in a URL).
    pub fn in_arguments(&self, args: &serde_json::Value) -> bool {
        self.scrub_arguments(args).is_some()
    }

    /// Tool-call arguments with every secret taken out of their strings and keys, the
    /// same transforms as for text (a string whose percent-decoded form holds one is
    /// replaced whole); `None` when there was none.
    pub fn scrub_arguments(&self, args: &serde_json::Value) -> Option<serde_json::Value> {
        use serde_json::Value;
        let clean = |text: &str| -> Option<String> {
            match self.scrub(text) {
                Cow::Owned(clean) => Some(clean),
                Cow::Borrowed(_) => {
                    let decoded = percent_decoded(text)?;
                    self.finds(&decoded).then(|| REDACTED.to_string())
                }
            }
        };
        match args {
            Value::String(text) => clean(text).map(Value::String),
            Value::Array(items) => {
                let scrubbed: Vec<Option<Value>> = items
                    .iter()
                    .map(|item| self.scrub_arguments(item))
                    .collect();
                scrubbed.iter().any(Option::is_some).then(|| {
                    Value::Array(
                        scrubbed
                            .into_iter()
                            .zip(items)
                            .map(|(new, old)| new.unwrap_or_else(|| old.clone()))
                            .collect(),
                    )
                })
            }
            Value::Object(map) => {
                let mut changed = false;
                let mut out = serde_json::Map::new();
                for (key, value) in map {
                    let key = clean(key)
                        .inspect(|_| changed = true)
                        .unwrap_or_else(|| key.clone());
                    let value = self
                        .scrub_arguments(value)
                        .inspect(|_| changed = true)
                        .unwrap_or_else(|| value.clone());
                    out.insert(key, value);
                }
                changed.then_some(Value::Object(out))
            }
            _ => None,
        }
    }

    /// `scrub` for a text already owned: no copy when nothing is found.
    pub fn scrub_owned(&self, text: String) -> String {
        let spans = self.spans(&text);
        if spans.is_empty() {
            return text;
        }
        redact(&text, &spans)
    }

    /// A message for a channel with its text scrubbed.
    pub fn scrub_body(&self, body: OutboundBody) -> OutboundBody {
        match body {
            OutboundBody::Text(text) => OutboundBody::Text(self.scrub_owned(text)),
            OutboundBody::Notice(text) => OutboundBody::Notice(self.scrub_owned(text)),
            OutboundBody::Error(text) => OutboundBody::Error(self.scrub_owned(text)),
            OutboundBody::Chunk(chunk) => OutboundBody::Chunk(self.scrub_chunk(chunk)),
            OutboundBody::File { mut media, sent } => {
                media.caption = media.caption.map(|c| self.scrub_owned(c));
                OutboundBody::File { media, sent }
            }
            other @ (OutboundBody::Done | OutboundBody::React { .. }) => other,
        }
    }

    /// A chunk with every text it carries scrubbed (a delta alone: a stream is scrubbed
    /// across its deltas by `StreamScrubber`).
    pub fn scrub_chunk(&self, chunk: Chunk) -> Chunk {
        match chunk {
            Chunk::TextDelta { id, delta } => Chunk::TextDelta {
                id,
                delta: self.scrub_owned(delta),
            },
            Chunk::TextEnd { id, text } => Chunk::TextEnd {
                id,
                text: self.scrub_owned(text),
            },
            Chunk::ReasoningDelta { id, delta } => Chunk::ReasoningDelta {
                id,
                delta: self.scrub_owned(delta),
            },
            Chunk::ToolInputAvailable {
                tool_call_id,
                tool_name,
                input,
            } => Chunk::ToolInputAvailable {
                tool_call_id,
                tool_name,
                input: self.scrub_arguments(&input).unwrap_or(input),
            },
            Chunk::ToolOutputAvailable {
                tool_call_id,
                output,
            } => Chunk::ToolOutputAvailable {
                tool_call_id,
                output: self.scrub_owned(output),
            },
            Chunk::ToolOutputError {
                tool_call_id,
                error_text,
            } => Chunk::ToolOutputError {
                tool_call_id,
                error_text: self.scrub_owned(error_text),
            },
            Chunk::Error { error_text } => Chunk::Error {
                error_text: self.scrub_owned(error_text),
            },
            other => other,
        }
    }

    /// Where `text` holds something to redact: every occurrence of every literal and
    /// every token-shape match, overlapping ones merged, in order. Each span is decided
    /// by the text around it alone, which is what lets a stream be scrubbed in pieces.
    fn spans(&self, text: &str) -> Vec<Range<usize>> {
        let mut found = Vec::new();
        for literals in [&self.plain, &self.encoded].into_iter().flatten() {
            literals.find(text.as_bytes(), &mut found);
        }
        for pattern in &self.patterns {
            found.extend(pattern.find_iter(text).map(|m| m.range()));
        }
        merge(found)
    }

    /// Where the end of `text` may be the beginning of a secret or of one of its
    /// forms (`text.len()` when it cannot): a stream releases nothing from there on.
    fn unfinished(&self, text: &str) -> usize {
        [&self.plain, &self.encoded]
            .into_iter()
            .flatten()
            .filter_map(|literals| literals.unfinished(text.as_bytes()))
            .min()
            .unwrap_or(text.len())
    }
}

/// Sort spans and merge those that overlap (touching ones stay apart, so a text cut
/// between two of them scrubs the same in pieces as whole).
fn merge(mut spans: Vec<Range<usize>>) -> Vec<Range<usize>> {
    spans.sort_unstable_by_key(|s| s.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start < last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    merged
}

/// `text` with each span replaced by `REDACTED`.
fn redact(text: &str, spans: &[Range<usize>]) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    for span in spans {
        out.extend_from_slice(bytes.get(at..span.start).unwrap_or_default());
        out.extend_from_slice(REDACTED.as_bytes());
        at = span.end;
    }
    out.extend_from_slice(bytes.get(at..).unwrap_or_default());
    // Spans start and end on character boundaries (every literal and pattern is
    // whole UTF-8), so this is never lossy.
    match String::from_utf8(out) {
        Ok(text) => text,
        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
    }
}

/// The process-wide scrubber the log writer uses, set once secrets are loaded.
static GLOBAL: OnceLock<Arc<Scrubber>> = OnceLock::new();

pub fn install(scrubber: Arc<Scrubber>) {
    // A second install (tests starting the core twice) keeps the first.
    let _ = GLOBAL.set(scrubber);
}

/// Whether `text` carries a secret the installed scrubber knows, exactly or loosely
/// (`Scrubber::carries_loosely`), or anything shaped like a key.
pub fn carries_secret(text: &str) -> bool {
    scrub_global(text) != text || GLOBAL.get().is_some_and(|s| s.carries_loosely(text))
}

/// Scrub with the installed scrubber, or with the token patterns alone before one is.
pub fn scrub_global(text: &str) -> Cow<'_, str> {
    match GLOBAL.get() {
        Some(scrubber) => scrubber.scrub(text),
        None => {
            static PATTERNS_ONLY: OnceLock<Scrubber> = OnceLock::new();
            PATTERNS_ONLY
                .get_or_init(|| Scrubber::new(Vec::new()))
                .scrub(text)
        }
    }
}

/// A log writer that scrubs every line before it reaches stderr.
pub struct ScrubbingStderr;

impl std::io::Write for ScrubbingStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(scrub_global(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
