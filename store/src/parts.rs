//! The stored form of a message part: what `parts.body` holds, as JSON. It belongs to
//! the store, not to the provider: `pincer_provider::Part` may change its serde
//! attributes for the wire, and the history written before must still read the same.
//!
//! Format 1 is the JSON written since schema 1 (then `Part`'s own serde form), kept
//! byte for byte, so the rows already stored needed no migration; this file's tests
//! pin it. Changing what `StoredPart` serializes to is a change of format: add a
//! migration to `migrations.rs` that rewrites `parts.body` in the existing rows
//! (SQLite's `json_set` and `json_remove` do most of it in SQL), then the pinned JSON.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Result, StoreError};
use pincer_provider::Part;

/// One part as stored; `type` names the variant, as `parts.kind` does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum StoredPart {
    Text {
        text: String,
    },
    /// The model's reasoning, with Anthropic's signature when it gave one.
    Reasoning {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
    },
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    ToolResult {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
    /// A picture, by the path of its saved file; its bytes are never stored.
    Image {
        path: String,
    },
}

impl StoredPart {
    /// The `parts.kind` column: the variant's name, as in the JSON's `type`.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            StoredPart::Text { .. } => "text",
            StoredPart::Reasoning { .. } => "reasoning",
            StoredPart::ToolCall { .. } => "tool_call",
            StoredPart::ToolResult { .. } => "tool_result",
            StoredPart::Image { .. } => "image",
        }
    }
}

impl From<&Part> for StoredPart {
    fn from(part: &Part) -> StoredPart {
        match part {
            Part::Text { text } => StoredPart::Text { text: text.clone() },
            Part::Reasoning {
                text,
                signature,
                redacted,
            } => StoredPart::Reasoning {
                text: text.clone(),
                signature: signature.clone(),
                redacted: *redacted,
            },
            Part::ToolCall {
                id,
                name,
                arguments,
            } => StoredPart::ToolCall {
                id: id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
            },
            Part::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => StoredPart::ToolResult {
                call_id: call_id.clone(),
                name: name.clone(),
                content: content.clone(),
                is_error: *is_error,
            },
            // `data` holds the bytes a model was shown on one turn; a later turn reads
            // the file again.
            Part::Image { path, data: _ } => StoredPart::Image { path: path.clone() },
        }
    }
}

impl From<StoredPart> for Part {
    fn from(part: StoredPart) -> Part {
        match part {
            StoredPart::Text { text } => Part::Text { text },
            StoredPart::Reasoning {
                text,
                signature,
                redacted,
            } => Part::Reasoning {
                text,
                signature,
                redacted,
            },
            StoredPart::ToolCall {
                id,
                name,
                arguments,
            } => Part::ToolCall {
                id,
                name,
                arguments,
            },
            StoredPart::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => Part::ToolResult {
                call_id,
                name,
                content,
                is_error,
            },
            StoredPart::Image { path } => Part::Image { path, data: None },
        }
    }
}

/// A part as `(kind, body)` for the parts table.
pub(super) fn encode(part: &Part) -> Result<(&'static str, String)> {
    let stored = StoredPart::from(part);
    Ok((stored.kind(), serde_json::to_string(&stored)?))
}

/// A `parts.body` of message `message_id` read back.
pub(super) fn decode(message_id: i64, body: &str) -> Result<Part> {
    serde_json::from_str::<StoredPart>(body)
        .map(Part::from)
        .map_err(|source| StoreError::BadPart { message_id, source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Role, Store, migrations};
    use pincer_provider::ImageData;

    /// Every variant as format 1 stores it, byte for byte: what Pincer has written
    /// since schema 1. A change here is a change of format (see the module doc).
    fn format_1() -> Vec<(Part, &'static str, &'static str)> {
        vec![
            (
                Part::Text { text: "hi".into() },
                "text",
                r#"{"type":"text","text":"hi"}"#,
            ),
            (
                Part::reasoning("hmm"),
                "reasoning",
                r#"{"type":"reasoning","text":"hmm"}"#,
            ),
            (
                Part::Reasoning {
                    text: "c2VjcmV0".into(),
                    signature: Some("sig".into()),
                    redacted: true,
                },
                "reasoning",
                r#"{"type":"reasoning","text":"c2VjcmV0","signature":"sig","redacted":true}"#,
            ),
            (
                Part::ToolCall {
                    id: "call_1".into(),
                    name: "exec".into(),
                    arguments: serde_json::json!({"command": "ls"}),
                },
                "tool_call",
                r#"{"type":"tool_call","id":"call_1","name":"exec","arguments":{"command":"ls"}}"#,
            ),
            (
                Part::ToolResult {
                    call_id: "call_1".into(),
                    name: "exec".into(),
                    content: "a.txt".into(),
                    is_error: false,
                },
                "tool_result",
                r#"{"type":"tool_result","call_id":"call_1","name":"exec","content":"a.txt","is_error":false}"#,
            ),
            (
                Part::Image {
                    path: "inbox/a.jpg".into(),
                    data: None,
                },
                "image",
                r#"{"type":"image","path":"inbox/a.jpg"}"#,
            ),
        ]
    }

    #[test]
    fn each_part_is_stored_in_format_1_exactly() {
        for (part, kind, json) in format_1() {
            assert_eq!(encode(&part).unwrap(), (kind, json.to_string()));
            assert_eq!(decode(1, json).unwrap(), part);
        }
    }

    #[test]
    fn a_pictures_bytes_are_never_stored() {
        let part = Part::Image {
            path: "inbox/a.jpg".into(),
            data: Some(ImageData {
                mime: "image/jpeg".into(),
                base64: "AAAA".into(),
            }),
        };
        let (_, body) = encode(&part).unwrap();
        assert_eq!(body, r#"{"type":"image","path":"inbox/a.jpg"}"#);
        assert_eq!(
            decode(1, &body).unwrap(),
            Part::Image {
                path: "inbox/a.jpg".into(),
                data: None
            }
        );
    }

    #[tokio::test]
    async fn rows_written_at_schema_7_read_back_after_an_upgrade() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pincer.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            migrations::apply_first(&conn, 7).unwrap();
            conn.execute(
                "INSERT INTO sessions (key, created_at, updated_at) VALUES ('terminal:dm:local', 1, 1)",
                [],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO messages (session_id, role, status, position, created_at)
                 VALUES (1, 'assistant', 'done', 1, 1)",
                [],
            )
            .unwrap();
            for (seq, (_, kind, json)) in format_1().into_iter().enumerate() {
                conn.execute(
                    "INSERT INTO parts (message_id, seq, kind, body) VALUES (1, ?1, ?2, ?3)",
                    rusqlite::params![seq as i64, kind, json],
                )
                .unwrap();
            }
        }
        let store = Store::open(&path).unwrap();
        let history = store.history(1).await.unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].role, Role::Assistant);
        let want: Vec<Part> = format_1().into_iter().map(|(part, _, _)| part).collect();
        assert_eq!(history[0].parts, want);
    }
}
