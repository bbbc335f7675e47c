//! Plausible token counts: about four bytes per token, never zero.
//!
//! Prompt caching is imitated: the bytes a request shares with the previous request of
//! the same model, compared in the providers' order (tools, system prompt, messages; see
//! `cache`), count as cached, four bytes a token. OpenAI reports that as
//! `prompt_tokens_details.cached_tokens` (always on); Anthropic only when the request
//! carries a `cache_control` marker, as `cache_read_input_tokens`, and then half of the
//! rest as `cache_creation_input_tokens`. These are the fake's rules, not the providers'
//! exact accounting (no minimum length, no 128-token steps, no breakpoint limits):
//! assert on their presence, sums and rough shares, not on exact values.

use crate::recorded::Format;

/// Input-side counts of one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Prompt {
    /// Every prompt token, cached or not.
    pub total: u64,
    /// Tokens served from the cache.
    pub cache_read: u64,
    /// Tokens written to the cache (Anthropic only).
    pub cache_write: u64,
}

impl Prompt {
    /// Anthropic's `input_tokens`: the prompt tokens neither read from nor written to cache.
    pub(crate) fn uncached(&self) -> u64 {
        self.total - self.cache_read - self.cache_write
    }
}

/// Counts for the request body `raw`, of which `shared` bytes were found in the cache
/// (`cache::PromptCache::shared`).
pub(crate) fn prompt(format: Format, shared: usize, raw: &[u8]) -> Prompt {
    let total = count(raw.len());
    let cached = (shared as u64 / 4).min(total);
    match format {
        Format::OpenAi => Prompt {
            total,
            cache_read: cached,
            cache_write: 0,
        },
        Format::Anthropic if contains(raw, b"\"cache_control\"") => Prompt {
            total,
            cache_read: cached,
            cache_write: (total - cached) / 2,
        },
        Format::Anthropic => Prompt {
            total,
            cache_read: 0,
            cache_write: 0,
        },
    }
}

/// Output tokens for a reply of this text and these serialized tool arguments.
pub(crate) fn output<'a>(text: &str, args: impl IntoIterator<Item = &'a str>) -> u64 {
    count(text.len() + args.into_iter().map(str::len).sum::<usize>())
}

fn count(bytes: usize) -> u64 {
    (bytes as u64 / 4).max(1)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_zero_and_shared_bytes_are_cached() {
        assert_eq!(prompt(Format::OpenAi, 0, b"").total, 1);
        let body = vec![b'a'; 800];
        let p = prompt(Format::OpenAi, 400, &body);
        assert_eq!((p.total, p.cache_read, p.cache_write), (200, 100, 0));
        assert_eq!(prompt(Format::OpenAi, 4000, &body).cache_read, 200);
        let a = prompt(Format::Anthropic, 400, &body);
        assert_eq!(a.cache_read, 0, "no cache_control, no cache");
        let mut marked = body.clone();
        marked.extend_from_slice(br#""cache_control""#);
        let a = prompt(Format::Anthropic, 400, &marked);
        assert!(a.cache_read > 0 && a.cache_write > 0);
        assert_eq!(a.uncached() + a.cache_read + a.cache_write, a.total);
    }
}
