//! What Pincer reads of a `POST /api/chat` body (an AI SDK `useChat` request): the new
//! user message's text. The conversation lives on the server (`web:dm:owner`), so only
//! the last message counts, and what would need the history rewritten — regenerating a
//! reply, editing an earlier message — or a file is refused with what to do instead,
//! never half done. A plain `{"text": …}` is taken too.

use serde_json::Value;

/// Why a chat request is not answered, each with what to do instead.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    #[error("the body is not JSON ({0}); send {{\"messages\": [...]}} as useChat does")]
    NotJson(serde_json::Error),
    #[error(
        "Pincer cannot regenerate a reply: the conversation is kept on the server, and its replies stay. Send the message again to ask again."
    )]
    Regenerate,
    #[error("unknown trigger {0:?}; Pincer answers \"submit-message\" (a new user message)")]
    Trigger(String),
    #[error(
        "Pincer cannot edit an earlier message: the conversation is kept on the server. Send the corrected text as a new message (or /new to start over)."
    )]
    Edit,
    #[error("no messages: send {{\"messages\": [...]}} ending with the user's new message")]
    NoMessages,
    #[error(
        "the last message is not the user's: Pincer answers a new user message (tool approvals and tool results from the browser are not taken)"
    )]
    NotTheUsers,
    #[error(
        "the web chat takes text only; put the file in the workspace and name it, or send it on a chat channel"
    )]
    File,
    #[error("the last user message has no text part")]
    NoText,
}

/// The text of the request's new user message, or why the request cannot be answered.
pub(crate) fn new_text(body: &[u8]) -> Result<String, Refused> {
    let value: Value = serde_json::from_slice(body).map_err(Refused::NotJson)?;
    if let Some(text) = value.get("text").and_then(Value::as_str) {
        return Ok(text.to_string());
    }
    match value.get("trigger").and_then(Value::as_str) {
        None | Some("submit-message") => {}
        Some("regenerate-message") => {
            return Err(Refused::Regenerate);
        }
        Some(other) => {
            return Err(Refused::Trigger(other.to_string()));
        }
    }
    if value.get("messageId").is_some_and(|id| !id.is_null()) {
        return Err(Refused::Edit);
    }
    let message = value
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|messages| messages.last())
        .ok_or(Refused::NoMessages)?;
    if message.get("role").and_then(Value::as_str) != Some("user") {
        return Err(Refused::NotTheUsers);
    }
    let parts = message
        .get("parts")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let kind = |p: &Value| p.get("type").and_then(Value::as_str).map(str::to_string);
    if parts.iter().any(|p| kind(p).as_deref() == Some("file")) {
        return Err(Refused::File);
    }
    let text: Vec<&str> = parts
        .iter()
        .filter(|p| kind(p).as_deref() == Some("text"))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    let text = text.join("\n");
    if text.trim().is_empty() {
        return Err(Refused::NoText);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(body: Value) -> Result<String, String> {
        new_text(body.to_string().as_bytes()).map_err(|why| why.to_string())
    }

    fn user(parts: Value) -> Value {
        json!({"id": "u1", "role": "user", "parts": parts})
    }

    #[test]
    fn the_new_user_message_is_read_and_what_would_rewrite_history_is_refused() {
        let hi = user(json!([{"type": "text", "text": "hi"}]));
        let body = json!({"id": "web", "messages": [hi.clone()], "trigger": "submit-message"});
        assert_eq!(read(body), Ok("hi".into()));
        assert_eq!(read(json!({"text": "plain"})), Ok("plain".into()));
        let regenerate = json!({"messages": [hi.clone()], "trigger": "regenerate-message"});
        assert!(read(regenerate).unwrap_err().contains("cannot regenerate"));
        let edit =
            json!({"messages": [hi.clone()], "trigger": "submit-message", "messageId": "u1"});
        assert!(read(edit).unwrap_err().contains("cannot edit"));
        let reply = json!({"id": "a1", "role": "assistant", "parts": []});
        let approval = json!({"messages": [hi.clone(), reply], "trigger": "submit-message"});
        assert!(read(approval).unwrap_err().contains("not the user's"));
        let file = json!({"type": "file", "mediaType": "image/png", "url": "data:,"});
        let with_file = json!({"messages": [user(json!([file, {"type": "text", "text": "see"}]))]});
        assert!(read(with_file).unwrap_err().contains("text only"));
        assert!(
            new_text(b"not json")
                .unwrap_err()
                .to_string()
                .contains("not JSON")
        );
    }
}
