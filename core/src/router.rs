//! The cheap-first router: a score from 0 to 1 for each turn, from what the user sent
//! and how the conversation has gone; below `router.threshold` the light chain
//! answers, otherwise the heavy one. Scores come from structure (attachments, code,
//! length, tool use, depth), never from matching phrases.

use crate::provider::{ChatMessage, Part, Role};

/// Which chain a turn uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Light,
    Heavy,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Light => "light",
            Tier::Heavy => "heavy",
        }
    }
}

/// How many of the latest messages count as "recent" for tool use.
const RECENT: usize = 10;

/// What the score is made of, for the log.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score {
    pub value: f64,
    pub tokens: usize,
    pub recent_tool_calls: usize,
    pub depth: usize,
}

/// Score the turn whose newest user message ends `messages`. `attachment` says the
/// message came with media.
pub fn score(messages: &[ChatMessage], attachment: bool) -> Score {
    let latest = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User && m.parts.iter().any(|p| matches!(p, Part::Text { .. })))
        .map(ChatMessage::text)
        .unwrap_or_default();
    // About four characters a token: good enough to tell short from long.
    let tokens = latest.chars().count().div_ceil(4);
    let recent_tool_calls = messages
        .iter()
        .rev()
        .take(RECENT)
        .flat_map(|m| &m.parts)
        .filter(|p| matches!(p, Part::ToolCall { .. }))
        .count();
    let depth = messages.len();
    let mut value: f64 = 0.0;
    if attachment {
        value = 1.0;
    }
    if latest.contains("```") {
        value += 0.40;
    }
    value += match tokens {
        201.. => 0.35,
        51..=200 => 0.15,
        _ => 0.0,
    };
    value += match recent_tool_calls {
        4.. => 0.25,
        1..=3 => 0.10,
        _ => 0.0,
    };
    if depth > 10 {
        value += 0.10;
    }
    Score {
        value: value.min(1.0),
        tokens,
        recent_tool_calls,
        depth,
    }
}

pub fn tier(score: f64, threshold: f64) -> Tier {
    if score < threshold {
        Tier::Light
    } else {
        Tier::Heavy
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(text: &str) -> ChatMessage {
        ChatMessage::user_text(text)
    }

    #[test]
    fn hi_is_light_and_long_code_is_heavy() {
        let hi = score(&[user("hi")], false);
        assert_eq!(hi.value, 0.0);
        assert_eq!(tier(hi.value, 0.35), Tier::Light);
        let long_code = format!(
            "Why does this fail?\n```rust\n{}\n```",
            "let x = compute(a, b, c);\n".repeat(40)
        );
        let heavy = score(&[user(&long_code)], false);
        assert!((heavy.value - 0.75).abs() < 1e-9, "{heavy:?}");
        assert_eq!(tier(heavy.value, 0.35), Tier::Heavy);
    }

    #[test]
    fn each_signal_adds_its_weight() {
        assert_eq!(score(&[user("x")], true).value, 1.0);
        assert!((score(&[user(&"word ".repeat(60))], false).value - 0.15).abs() < 1e-9);
        let call = ChatMessage {
            role: Role::Assistant,
            parts: vec![Part::ToolCall {
                id: "1".into(),
                name: "read_file".into(),
                arguments: json!({}),
            }],
        };
        let with_tools = [call.clone(), user("and now?")];
        assert!((score(&with_tools, false).value - 0.10).abs() < 1e-9);
        let many: Vec<ChatMessage> = (0..4).map(|_| call.clone()).chain([user("ok")]).collect();
        assert!((score(&many, false).value - 0.25).abs() < 1e-9);
        let deep: Vec<ChatMessage> = (0..11).map(|_| user("hi")).collect();
        assert!((score(&deep, false).value - 0.10).abs() < 1e-9);
    }
}
