//! The credential scrubber: every text that leaves the process — replies to channels,
//! log lines, tool results shown to the model — passes through it. Known token shapes
//! (OpenAI, Anthropic, GitHub, AWS, Slack, Telegram) and every secret value loaded at
//! start become `[REDACTED]`.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use regex::Regex;

pub const REDACTED: &str = "[REDACTED]";

/// Secret values shorter than this are not scrubbed one by one (too many false hits).
const MIN_SECRET_LEN: usize = 8;

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

pub struct Scrubber {
    patterns: Vec<Regex>,
    /// Exact secret values from .security.yml and the environment, longest first.
    secrets: Vec<String>,
}

impl Scrubber {
    pub fn new(mut secrets: Vec<String>) -> Self {
        secrets.retain(|s| s.len() >= MIN_SECRET_LEN);
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        // The patterns are constants tested below; one that failed to compile would
        // simply not scrub, never crash.
        let patterns = PATTERNS.iter().filter_map(|p| Regex::new(p).ok()).collect();
        Self { patterns, secrets }
    }

    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        for pattern in &self.patterns {
            if pattern.is_match(&out) {
                out = Cow::Owned(pattern.replace_all(&out, REDACTED).into_owned());
            }
        }
        out
    }
}

/// The process-wide scrubber the log writer uses, set once secrets are loaded.
static GLOBAL: OnceLock<Arc<Scrubber>> = OnceLock::new();

pub fn install(scrubber: Arc<Scrubber>) {
    // A second install (tests starting the core twice) keeps the first.
    let _ = GLOBAL.set(scrubber);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_token_shape_and_loaded_secret_is_redacted() {
        let scrubber = Scrubber::new(vec!["my-own-long-password".into(), "short".into()]);
        let samples = [
            "sk-proj-abcdefghijklmnopqrstuvwxyz0123",
            "sk-ant-api03-abcdefghijklmnopqrstuvwx",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "github_pat_11ABCDEFG0123456789_abcdefghij",
            "AKIAIOSFODNN7EXAMPLE",
            "xoxb-1234567890-abcdefghij",
            "xapp-1-A0123456789-abcdef",
            "123456789:AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T0",
            "my-own-long-password",
        ];
        for secret in samples {
            let text = format!("the key is {secret}, keep it safe");
            let clean = scrubber.scrub(&text);
            assert_eq!(
                clean,
                format!("the key is {REDACTED}, keep it safe"),
                "{secret}"
            );
        }
        assert_eq!(
            scrubber.scrub("a short word and sk-not"),
            "a short word and sk-not"
        );
    }
}
