//! The web tools: `web_fetch` (one page as readable text) and `web_search` (a
//! configured search backend). They own their HTTP clients and their own limits; the
//! registry in `tools` only lists them. Nothing here reads config files: the caller
//! passes a [`FetchPolicy`] and [`SearchSettings`].
//!
//! # Layout
//! - `fetch`  — [`WebFetch`]: scheme and address checks per hop, manual redirects,
//!   the 20 s deadline, the 2 MiB body cap, content-type dispatch, the 24 KiB output.
//! - `ssrf`   — which addresses are forbidden, the URL check for IP literals, and the
//!   filtering DNS resolver (no connection to an inner address, even by rebinding).
//! - `html`   — HTML → text: the main content, numbered links; snippet tag stripping.
//! - `layout` — the text being written: whitespace, line breaks, bullets, markers.
//! - `search` — [`WebSearch`]: brave, tavily and searxng requests and result lists.
//!
//! Tests (`fetch_tests`, `search_tests`) drive both tools through `Tool::call`
//! against the raw-socket fake in `fake`, which listens on 127.0.0.1 only.

mod fetch;
mod html;
mod layout;
mod search;
mod ssrf;

#[cfg(test)]
mod fake;
#[cfg(test)]
mod fetch_tests;
#[cfg(test)]
mod html_tests;
#[cfg(test)]
mod search_tests;

use crate::tools::ToolError;

pub use fetch::{FetchPolicy, WebFetch};
pub use search::{SearchSettings, WebSearch};
pub use ssrf::Lookup;
pub(crate) use ssrf::{Forbidden, classify};

/// Both tools identify themselves the same way; some sites refuse a blank agent.
const USER_AGENT: &str = concat!(
    "Mozilla/5.0 (compatible; pincer/",
    env!("CARGO_PKG_VERSION"),
    ")"
);

/// A string argument that must say something: trimmed, and not empty.
fn non_empty<'a>(value: &'a str, key: &str) -> Result<&'a str, ToolError> {
    Some(value.trim())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ToolError::new(format!("missing string argument `{key}`")))
}

/// Cut `text` to at most `max` bytes on a character boundary; true if it was cut.
fn truncate(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    true
}
