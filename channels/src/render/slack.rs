//! Markdown → Slack mrkdwn, and a reply cut into chunks that fit Slack's limit.
//!
//! The limit is [`SLACK_LIMIT`] (4,000 characters of the text as sent): Slack's
//! chat.postMessage documentation recommends keeping `text` under 4,000 characters and
//! truncates it past 40,000, so 4,000 is the largest size that is shown whole and reads
//! as one message. The mapping is described in `slack/mrkdwn.rs`. Nothing here sends.

mod mrkdwn;

use super::SLACK_LIMIT;
use super::fit::split_rendered;
use super::split::char_len;

/// The smallest markdown limit a chunk is re-split with (rendering grows text at most
/// about fivefold: `&` becomes `&amp;`).
const MIN_LIMIT: usize = 500;

/// Converts markdown to Slack mrkdwn: `*bold*`, `_italic_`, `~strike~`, `` `code` ``,
/// code blocks, `>` quotes, `<url|text>` links, with `&`, `<` and `>` escaped.
pub fn to_slack_mrkdwn(markdown: &str) -> String {
    mrkdwn::render(markdown)
}

/// Splits a markdown reply into chunks whose mrkdwn fits Slack's limit, in order (the
/// markdown of each; render it with [`to_slack_mrkdwn`] to send).
pub fn slack_chunks(markdown: &str) -> Vec<String> {
    split_rendered(
        markdown,
        SLACK_LIMIT,
        MIN_LIMIT,
        &char_len,
        &to_slack_mrkdwn,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_reply_fits_and_keeps_every_word() {
        let mut text = String::new();
        for i in 0..300 {
            text.push_str(&format!(
                "Point **{i}** see [docs](https://example.com/{i}) & `a < b`.\n\n"
            ));
        }
        let chunks = slack_chunks(&text);
        assert!(chunks.len() > 2);
        for chunk in &chunks {
            let rendered = to_slack_mrkdwn(chunk);
            assert!(
                char_len(&rendered) <= SLACK_LIMIT,
                "{}",
                char_len(&rendered)
            );
            assert!(rendered.starts_with("Point *"), "{rendered}");
        }
        assert_eq!(
            chunks.join("\n\n").split_whitespace().collect::<Vec<_>>(),
            text.split_whitespace().collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_code_block_cut_in_two_stays_a_code_block_in_both() {
        let mut text = String::from("```rust\n");
        for i in 0..600 {
            text.push_str(&format!("let v{i} = {i};\n"));
        }
        text.push_str("```\n");
        let chunks = slack_chunks(&text);
        assert!(chunks.len() >= 2);
        for chunk in &chunks {
            let rendered = to_slack_mrkdwn(chunk);
            assert!(rendered.starts_with("```\nlet v"), "{rendered}");
            assert!(rendered.ends_with("\n```"), "{rendered}");
        }
    }
}
