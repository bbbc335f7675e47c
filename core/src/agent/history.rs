//! Turning a stored transcript into the message list a provider accepts: user and
//! assistant turns alternate, every tool call is followed at once by its result (a
//! synthetic "interrupted" one when a crash lost it), and consecutive user texts are
//! joined.

use std::collections::HashMap;

use crate::provider::{ChatMessage, Part, Role};
use crate::store::{self, StoredMessage};

/// `stamp` turns a message's time (unix ms) into the prefix its user text gets.
pub(super) fn to_chat(
    history: &[StoredMessage],
    stamp: &dyn Fn(i64) -> String,
) -> Vec<ChatMessage> {
    let mut results: HashMap<&str, &Part> = HashMap::new();
    for message in history {
        for part in &message.parts {
            if let Part::ToolResult { call_id, .. } = part {
                results.insert(call_id.as_str(), part);
            }
        }
    }
    let mut out: Vec<ChatMessage> = Vec::new();
    for message in history {
        match message.role {
            store::Role::Tool => {} // placed right after their calls below
            store::Role::User => {
                let prefix = stamp(message.created_at);
                for part in &message.parts {
                    let part = match part {
                        Part::Text { text } if !prefix.is_empty() => Part::Text {
                            text: format!("{prefix} {text}"),
                        },
                        other => other.clone(),
                    };
                    push_user(&mut out, part);
                }
            }
            store::Role::Assistant => {
                let parts: Vec<Part> = message
                    .parts
                    .iter()
                    .filter(|p| !matches!(p, Part::ToolResult { .. }))
                    .cloned()
                    .collect();
                if parts.is_empty() {
                    continue;
                }
                let calls: Vec<(String, String)> = parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::ToolCall { id, name, .. } => Some((id.clone(), name.clone())),
                        _ => None,
                    })
                    .collect();
                push_assistant(&mut out, parts);
                for (id, name) in calls {
                    let result = match results.get(id.as_str()) {
                        Some(part) => (*part).clone(),
                        None => Part::ToolResult {
                            call_id: id,
                            name,
                            content: store::INTERRUPTED.to_string(),
                            is_error: true,
                        },
                    };
                    push_user(&mut out, result);
                }
            }
        }
    }
    out
}

/// Add `text` to the newest user message as a part of its own, not joined to its
/// text: recalled memory, which the next turn does not repeat, so the provider can put
/// a cache mark before it (`ChatRequest::recalled_at`).
pub(super) fn push_user_apart(out: &mut Vec<ChatMessage>, text: String) {
    match out.last_mut() {
        Some(message) if message.role == Role::User => message.parts.push(Part::Text { text }),
        _ => push_user(out, Part::Text { text }),
    }
}

/// Add a part to the conversation's trailing user message (or start one). Tool results
/// stay ahead of text, and two texts are joined with a blank line.
pub(super) fn push_user(out: &mut Vec<ChatMessage>, part: Part) {
    if out.last().is_none_or(|m| m.role != Role::User) {
        out.push(ChatMessage {
            role: Role::User,
            parts: Vec::new(),
        });
    }
    let Some(message) = out.last_mut() else {
        return;
    };
    match part {
        Part::Text { text } => {
            if let Some(Part::Text { text: last }) = message.parts.last_mut() {
                last.push_str("\n\n");
                last.push_str(&text);
            } else {
                message.parts.push(Part::Text { text });
            }
        }
        Part::ToolResult { .. } => {
            let first_text = message
                .parts
                .iter()
                .position(|p| matches!(p, Part::Text { .. }))
                .unwrap_or(message.parts.len());
            message.parts.insert(first_text, part);
        }
        other => message.parts.push(other),
    }
}

/// Add an assistant message; a text-only reply continuing a text-only reply (an
/// output-limit continuation) joins it.
pub(super) fn push_assistant(out: &mut Vec<ChatMessage>, parts: Vec<Part>) {
    if let Some(last) = out.last_mut()
        && last.role == Role::Assistant
        && !last
            .parts
            .iter()
            .any(|p| matches!(p, Part::ToolCall { .. }))
    {
        for part in parts {
            match (last.parts.last_mut(), part) {
                (Some(Part::Text { text: prev }), Part::Text { text }) => prev.push_str(&text),
                (_, part) => last.parts.push(part),
            }
        }
        return;
    }
    out.push(ChatMessage {
        role: Role::Assistant,
        parts,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Role as R, Status};
    use serde_json::json;

    fn msg(id: i64, role: R, parts: Vec<Part>) -> StoredMessage {
        StoredMessage {
            id,
            position: id,
            role,
            parts,
            status: Status::Done,
            sender: None,
            created_at: 0,
            tier: None,
        }
    }

    fn text(t: &str) -> Part {
        Part::Text { text: t.into() }
    }

    #[test]
    fn results_follow_their_calls_and_lost_ones_are_interrupted() {
        let call = |id: &str| Part::ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: json!({}),
        };
        let history = vec![
            msg(1, R::User, vec![text("read two files")]),
            msg(2, R::Assistant, vec![call("a"), call("b")]),
            // A steered message stored before the results arrived.
            msg(3, R::User, vec![text("also the third")]),
            msg(
                4,
                R::Tool,
                vec![Part::ToolResult {
                    call_id: "a".into(),
                    name: "read_file".into(),
                    content: "A".into(),
                    is_error: false,
                }],
            ),
        ];
        let chat = to_chat(&history, &|_| String::new());
        assert_eq!(chat.len(), 3);
        assert_eq!(chat[2].role, Role::User);
        assert!(
            matches!(&chat[2].parts[0], Part::ToolResult { call_id, content, .. } if call_id == "a" && content == "A")
        );
        assert!(
            matches!(&chat[2].parts[1], Part::ToolResult { call_id, is_error: true, .. } if call_id == "b")
        );
        assert_eq!(chat[2].parts[2], text("also the third"));
    }

    #[test]
    fn consecutive_user_messages_are_joined() {
        let history = vec![
            msg(1, R::User, vec![text("first")]),
            msg(2, R::User, vec![text("second")]),
        ];
        let chat = to_chat(&history, &|_| String::new());
        assert_eq!(chat.len(), 1);
        assert_eq!(chat[0].parts, vec![text("first\n\nsecond")]);
    }

    #[test]
    fn continued_replies_join_into_one_assistant_message() {
        let history = vec![
            msg(1, R::User, vec![text("long story")]),
            msg(2, R::Assistant, vec![text("Once upon")]),
            msg(3, R::Assistant, vec![text(" a time")]),
        ];
        let chat = to_chat(&history, &|_| String::new());
        assert_eq!(chat.len(), 2);
        assert_eq!(chat[1].parts, vec![text("Once upon a time")]);
    }
}
