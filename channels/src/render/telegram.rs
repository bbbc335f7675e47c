//! Markdown → Telegram's HTML subset, and a reply cut into chunks that fit Telegram's limit.
//!
//! Emits only the tags Telegram's `parse_mode=HTML` accepts, properly nested, with every
//! text escaped; the mapping is described in `telegram/html.rs`. It does not send anything
//! (the Telegram adapter does) and knows no other platform.

mod html;

use super::TELEGRAM_LIMIT;
use super::split::{split, utf16_len};

/// One message's worth of a reply for Telegram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelegramChunk {
    /// The chunk as Telegram HTML, at most [`TELEGRAM_LIMIT`] UTF-16 units.
    pub html: String,
    /// The chunk's markdown source, at most [`TELEGRAM_LIMIT`] UTF-16 units: sent without
    /// `parse_mode` when Telegram rejects the HTML.
    pub plain: String,
}

/// The smallest markdown limit `telegram_chunks` re-splits with. Rendering grows a text at
/// most about twelvefold (a `"` in a link's URL becomes `&quot;` twice), so a chunk this
/// small always renders within Telegram's limit.
const MIN_LIMIT: usize = 256;

/// Converts markdown to Telegram's HTML subset: `b i s code pre a blockquote`, and
/// `code class="language-x"` inside `pre`. Inline HTML in the markdown is shown as text.
pub fn to_telegram_html(markdown: &str) -> String {
    html::render(markdown)
}

/// Splits a markdown reply into chunks whose HTML and plain forms each fit Telegram's limit
/// (4096 UTF-16 units), in order. Code blocks cut between chunks are closed and reopened.
pub fn telegram_chunks(markdown: &str) -> Vec<TelegramChunk> {
    let mut out = Vec::new();
    for piece in split(markdown, TELEGRAM_LIMIT, &utf16_len) {
        push_fitting(piece, TELEGRAM_LIMIT, &mut out);
    }
    out
}

/// Renders `markdown` (already within `limit`); if its HTML is over Telegram's limit,
/// splits it again with a limit shrunk in proportion to the growth.
fn push_fitting(markdown: String, limit: usize, out: &mut Vec<TelegramChunk>) {
    let mut html = to_telegram_html(&markdown);
    if html.trim().is_empty() {
        // E.g. only link reference definitions: Telegram refuses an empty message.
        html = html::escape(&markdown, false);
    }
    let size = utf16_len(&html);
    if size <= TELEGRAM_LIMIT || limit <= MIN_LIMIT {
        out.push(TelegramChunk {
            html,
            plain: markdown,
        });
        return;
    }
    let proportional = limit * TELEGRAM_LIMIT / size * 9 / 10;
    let smaller = proportional.min(limit * 3 / 4).max(MIN_LIMIT);
    for piece in split(&markdown, smaller, &utf16_len) {
        push_fitting(piece, smaller, out);
    }
}

#[cfg(test)]
mod tests {
    use super::html::tests::assert_valid;
    use super::*;

    fn words(text: &str) -> Vec<&str> {
        text.split_whitespace().collect()
    }

    #[test]
    fn text_full_of_escapes_still_fits() {
        for text in [
            "<".repeat(10_000),
            "a < b & c > d \"e\" ".repeat(900),
            "&".repeat(9000),
        ] {
            let chunks = telegram_chunks(&text);
            for chunk in &chunks {
                assert!(
                    utf16_len(&chunk.html) <= TELEGRAM_LIMIT,
                    "{}",
                    utf16_len(&chunk.html)
                );
                assert!(utf16_len(&chunk.plain) <= TELEGRAM_LIMIT);
                assert_valid(&chunk.html);
            }
            let joined: String = chunks.into_iter().map(|c| c.plain).collect();
            assert!(
                words(&joined).concat() == words(&text).concat(),
                "text was lost"
            );
        }
        let chunks = telegram_chunks(&"<".repeat(10_000));
        assert!(chunks.iter().all(|c| c.html.replace("&lt;", "").is_empty()));
    }

    #[test]
    fn long_reply_keeps_every_word_and_fits() {
        let mut text = String::new();
        for i in 0..400 {
            text.push_str(&format!(
                "Point **{i}** links [here](https://example.com/{i}) "
            ));
            text.push_str("and says `x < y` for 🦀 and 猫.\n\n");
        }
        let chunks = telegram_chunks(&text);
        assert!(chunks.len() > 5);
        for chunk in &chunks {
            assert!(utf16_len(&chunk.html) <= TELEGRAM_LIMIT);
            assert!(
                chunk.html.starts_with("Point <b>"),
                "chunks start at paragraphs"
            );
            assert_valid(&chunk.html);
        }
        let joined: Vec<String> = chunks.into_iter().map(|c| c.plain).collect();
        assert_eq!(words(&joined.join("\n\n")), words(&text));
    }

    #[test]
    fn split_code_block_renders_as_a_pre_in_every_chunk() {
        let mut text = String::from("Here:\n\n```rust\n");
        for i in 0..400 {
            text.push_str(&format!("let v{i} = {i} < {i} + 1;\n"));
        }
        text.push_str("```\n");
        let chunks = telegram_chunks(&text);
        assert!(chunks.len() >= 3);
        for chunk in &chunks[1..] {
            assert!(
                chunk
                    .html
                    .starts_with("<pre><code class=\"language-rust\">let v")
            );
            assert!(chunk.html.ends_with("</code></pre>"));
            assert!(utf16_len(&chunk.html) <= TELEGRAM_LIMIT);
            assert_valid(&chunk.html);
        }
    }

    #[test]
    fn every_kind_of_block_split_anywhere_stays_valid() {
        let block = "# Plan\n\nSome *intro* with [a link](https://e.com/a?b&c) and `code`.\n\n\
            - first **point**\n  - nested <tag>\n1. one\n2. two\n\n> quoted text\n> > deeper\n\n\
            | a | b |\n|---|---|\n| 1 | 2 |\n\n```sh\necho \"<hi>\" && ls\n```\n\n---\n\n";
        let text = block.repeat(60);
        let chunks = telegram_chunks(&text);
        assert!(chunks.len() > 2);
        for chunk in &chunks {
            assert!(utf16_len(&chunk.html) <= TELEGRAM_LIMIT);
            assert_valid(&chunk.html);
        }
    }

    #[test]
    fn reference_definitions_alone_still_give_text() {
        let chunks = telegram_chunks("[a]: https://example.com/?x&y");
        assert_eq!(chunks[0].html, "[a]: https://example.com/?x&amp;y");
    }
}
