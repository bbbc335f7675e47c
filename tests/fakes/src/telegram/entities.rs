//! An incoming message's final text and its `MessageEntity` list, with offsets and
//! lengths in UTF-16 code units as Telegram counts them.
//!
//! Like Telegram, every `@username` (5–32 of `A-Za-z0-9_`, not preceded by a word
//! character) is a `mention`; a leading `/word` is a `bot_command` only when asked for.

use serde_json::{Value, json};

use super::BOT_USERNAME;

/// The text a user's client would send, and its entities.
///
/// `mention` addresses the bot: `"@bot " + text`, or `"/cmd@bot rest"` together with
/// `command` (the command entity then covers `/cmd@bot`, as in Telegram). `command`
/// marks a leading `/word` as a `bot_command`; without one it does nothing.
pub(crate) fn compose(text: &str, mention: bool, command: bool) -> (String, Vec<Value>) {
    let command_len = if command { leading_command(text) } else { 0 };
    let final_text = match (mention, command_len) {
        (true, 0) => format!("@{BOT_USERNAME} {text}"),
        (true, n) => format!("{}@{BOT_USERNAME}{}", &text[..n], &text[n..]),
        (false, _) => text.to_string(),
    };
    let mut entities = Vec::new();
    if command_len > 0 {
        let covered = if mention {
            command_len + 1 + BOT_USERNAME.len()
        } else {
            command_len
        };
        entities.push(entity("bot_command", 0, utf16_len(&final_text[..covered])));
    }
    entities.extend(mentions(&final_text));
    entities.sort_by_key(|e| e["offset"].as_u64());
    (final_text, entities)
}

/// The byte length of a leading `/word` (`/` plus letters, digits, `_`), 0 if none.
fn leading_command(text: &str) -> usize {
    let Some(rest) = text.strip_prefix('/') else {
        return 0;
    };
    let word = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    if word == 0 { 0 } else { 1 + word }
}

/// A `mention` entity for every `@username` in `text`.
pub(crate) fn mentions(text: &str) -> Vec<Value> {
    let mut found = Vec::new();
    let mut offset16 = 0;
    let mut previous: Option<char> = None;
    for (at, c) in text.char_indices() {
        let starts = c == '@' && !previous.is_some_and(is_word);
        if starts {
            let name_len = text[at + 1..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(text.len() - at - 1);
            if (5..=32).contains(&name_len) {
                found.push(entity("mention", offset16, 1 + name_len));
            }
        }
        offset16 += c.len_utf16();
        previous = Some(c);
    }
    found
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn entity(kind: &str, offset: usize, length: usize) -> Value {
    json!({"type": kind, "offset": offset, "length": length})
}

/// Length in UTF-16 code units.
pub(crate) fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mention_is_prepended_with_an_entity() {
        let (text, entities) = compose("hi", true, false);
        assert_eq!(text, "@pincer_test_bot hi");
        assert_eq!(entities, vec![entity("mention", 0, 16)]);
    }

    #[test]
    fn offsets_count_utf16_units() {
        // 🦀 is two UTF-16 units, é one.
        let entities = mentions("é🦀 @someone x@notme @abc");
        assert_eq!(entities, vec![entity("mention", 4, 8)]);
    }

    #[test]
    fn command_with_mention_covers_both() {
        let (text, entities) = compose("/new please", true, true);
        assert_eq!(text, "/new@pincer_test_bot please");
        assert_eq!(entities, vec![entity("bot_command", 0, 20)]);
    }

    #[test]
    fn command_alone_and_no_command() {
        let (_, entities) = compose("/status now", false, true);
        assert_eq!(entities, vec![entity("bot_command", 0, 7)]);
        let (_, entities) = compose("no command", false, true);
        assert!(entities.is_empty());
    }
}
