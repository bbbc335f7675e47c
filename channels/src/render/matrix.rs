//! Markdown → Matrix HTML (`formatted_body`), and a reply cut into chunks that fit one
//! Matrix event.
//!
//! A chunk is at most [`MATRIX_LIMIT`] characters of markdown — short enough to read as
//! one message — and its event (the markdown as `body`, the HTML as `formatted_body`,
//! both JSON-escaped) stays under [`EVENT_BYTES`], below the 65,536 bytes the spec allows
//! a whole event. The HTML is pulldown-cmark's, with raw HTML in the markdown shown as
//! text (a model's `<script>` is not markup) and images as links (Matrix clients show
//! only `mxc://` images).

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

use super::fit::split_rendered;
use super::split::{char_len, split};

/// The most characters of markdown one message carries.
pub const MATRIX_LIMIT: usize = 6000;
/// The most bytes a chunk's `body` and `formatted_body` take in the event's JSON.
const EVENT_BYTES: usize = 60_000;
/// The smallest re-split chunk, in bytes of markdown.
const MIN_BYTES: usize = 1000;

/// Converts markdown to the HTML Matrix clients render.
pub fn to_matrix_html(markdown: &str) -> String {
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
    let mut in_image = false;
    // Links and pictures whose scheme is not a safe one are dropped (their text stays).
    let (mut links, mut images) = (0usize, 0usize);
    let events = Parser::new_ext(markdown, options).filter_map(move |event| match event {
        Event::Start(Tag::Link { ref dest_url, .. }) if !safe_url(dest_url) => {
            links += 1;
            None
        }
        Event::End(TagEnd::Link) if links > 0 => {
            links -= 1;
            None
        }
        Event::Start(Tag::Image { ref dest_url, .. }) if !safe_url(dest_url) => {
            images += 1;
            None
        }
        Event::End(TagEnd::Image) if images > 0 => {
            images -= 1;
            None
        }
        other => Some(other),
    });
    let events = events.map(move |event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        // `![alt](url)` → a link to the picture.
        Event::Start(Tag::Image {
            dest_url, title, ..
        }) => {
            in_image = true;
            Event::Start(Tag::Link {
                link_type: pulldown_cmark::LinkType::Inline,
                dest_url,
                title,
                id: CowStr::Borrowed(""),
            })
        }
        Event::End(TagEnd::Image) if in_image => {
            in_image = false;
            Event::End(TagEnd::Link)
        }
        other => other,
    });
    let mut html = String::with_capacity(markdown.len() * 5 / 4);
    pulldown_cmark::html::push_html(&mut html, events);
    html.trim_end().to_string()
}

/// A link a client may follow: the web, mail, Matrix, or a relative reference.
fn safe_url(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    match lower.split_once(':') {
        Some((scheme, _)) if !scheme.contains(['/', '?', '#']) => {
            matches!(scheme, "http" | "https" | "mailto" | "mxc" | "matrix")
        }
        _ => true, // no scheme: relative
    }
}

/// What a chunk weighs in its event: both fields, JSON-escaped.
fn event_bytes(markdown: &str) -> usize {
    let json = |s: &str| serde_json::to_string(s).map_or(s.len() * 6, |j| j.len());
    json(markdown) + json(&to_matrix_html(markdown))
}

/// Splits a markdown reply into chunks of at most [`MATRIX_LIMIT`] characters whose
/// event fits, in order (the markdown of each; `to_matrix_html` renders it).
pub fn matrix_chunks(markdown: &str) -> Vec<String> {
    split(markdown, MATRIX_LIMIT, &char_len)
        .into_iter()
        .flat_map(|chunk| {
            split_rendered(&chunk, EVENT_BYTES, MIN_BYTES, &str::len, &|c: &str| {
                "x".repeat(event_bytes(c))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_html_and_raw_html_stays_text() {
        let html = to_matrix_html("**bold** and `code`\n\n<script>alert(1)</script>");
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(html.contains("<code>code</code>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("<script>"), "{html}");
        for bad in [
            "javascript:alert(1)",
            "JavaScript:x",
            "data:text/html,x",
            "vbscript:x",
        ] {
            let html = to_matrix_html(&format!("[click]({bad}) and ![pic]({bad})"));
            assert!(!html.contains("href"), "{html}");
            assert!(html.contains("click"), "{html}");
        }
        let image = to_matrix_html("![cat](https://example.org/cat.png)");
        assert!(
            image.contains("<a href=\"https://example.org/cat.png\">cat</a>"),
            "{image}"
        );
    }

    #[test]
    fn chunks_fit_the_limit_and_the_event_size() {
        let mut text = String::new();
        for n in 0..40 {
            text.push_str(&format!(
                "Paragraph {n}: {}\n\n",
                "words and \"quotes\" ".repeat(30)
            ));
            text.push_str(&format!("```\n{}```\n\n", "<tag attr=\"v\">\n".repeat(20)));
        }
        let chunks = matrix_chunks(&text);
        assert!(chunks.len() > 3);
        for chunk in &chunks {
            assert!(char_len(chunk) <= MATRIX_LIMIT);
            assert!(event_bytes(chunk) <= EVENT_BYTES);
            assert_eq!(chunk.matches("```").count() % 2, 0);
        }
        // Control characters grow sixfold in JSON: still one event each.
        let control = "\u{1}".repeat(9000);
        for chunk in matrix_chunks(&control) {
            assert!(
                event_bytes(&chunk) <= EVENT_BYTES,
                "{}",
                event_bytes(&chunk)
            );
        }
    }
}
