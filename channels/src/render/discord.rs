//! A reply cut into chunks that fit Discord's 2000-character limit. Discord renders
//! markdown itself, so a chunk is the markdown as written; only the cutting is ours
//! (the shared splitter: paragraphs first, code fences closed and reopened).

use super::DISCORD_LIMIT;
use super::split::{char_len, split};

/// Splits a markdown reply into chunks of at most [`DISCORD_LIMIT`] characters, in order.
pub fn discord_chunks(markdown: &str) -> Vec<String> {
    split(markdown, DISCORD_LIMIT, &char_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_replies_fit_and_code_blocks_stay_balanced() {
        let mut text = String::new();
        for n in 0..30 {
            text.push_str(&format!(
                "Paragraph {n} with 猫 and 🦀. {}\n\n",
                "word ".repeat(40)
            ));
            text.push_str(&format!("```rust\n{}```\n\n", "let x = 1;\n".repeat(15)));
        }
        let chunks = discord_chunks(&text);
        assert!(chunks.len() > 3);
        for chunk in &chunks {
            assert!(char_len(chunk) <= DISCORD_LIMIT, "{}", char_len(chunk));
            assert_eq!(chunk.matches("```").count() % 2, 0, "{chunk}");
        }
        let words = |t: &str| -> Vec<String> {
            t.split_whitespace()
                .filter(|w| !w.starts_with("```"))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(words(&chunks.join("\n")), words(&text));
    }

    #[test]
    fn a_short_reply_is_one_chunk() {
        assert_eq!(discord_chunks("hi **there**"), vec!["hi **there**"]);
    }
}
