//! What the fake saw: one `Recorded` per chat request (with its images), one
//! `Transcription` per transcription request, and the two wire `Format`s.
//!
//! Recording is passive: nothing here decides how to answer.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::image;

/// Which API a request spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Format {
    /// `POST /v1/chat/completions`.
    #[serde(rename = "openai")]
    OpenAi,
    /// `POST /v1/messages`.
    #[serde(rename = "anthropic")]
    Anthropic,
}

/// One chat request as received, before any check (a request refused with 401/400/404 is
/// recorded too).
#[derive(Debug, Clone)]
pub struct Recorded {
    pub format: Format,
    /// The JSON body; a body that is not JSON is kept as a JSON string of its text.
    pub body: Value,
    /// Header names lower-cased, in the order received.
    pub headers: Vec<(String, String)>,
    pub at: Instant,
}

impl Recorded {
    /// The text of the last user message that has any text, parts or blocks joined with
    /// `\n`; `""` if none. User turns made only of Anthropic `tool_result` blocks are
    /// skipped, so both formats give the same answer mid tool loop. A leading time stamp
    /// as Pincer writes it (`[Sun 2026-11-22 09:30] `) is left out, so tests and the echo
    /// see what the person typed; `last_user_text_raw` keeps it.
    pub fn last_user_text(&self) -> String {
        strip_stamp(&last_user_text(&self.body)).to_string()
    }

    /// `last_user_text` exactly as sent, stamp included.
    pub fn last_user_text_raw(&self) -> String {
        last_user_text(&self.body)
    }

    /// The first value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `model` the request asked for, `""` if none.
    pub fn model(&self) -> &str {
        self.body["model"].as_str().unwrap_or_default()
    }

    /// The inline images of the last user message, as `(mime, decoded bytes)` in order:
    /// OpenAI `image_url` parts with a `data:` URL, Anthropic `image` blocks with a
    /// `base64` source. Images given by URL or file id carry no bytes and are left out.
    /// As with `last_user_text`, Anthropic user turns made only of `tool_result` blocks
    /// are skipped, so this is the last message a person wrote in both formats.
    pub fn last_user_images(&self) -> Vec<(String, Vec<u8>)> {
        let Some(message) = last_person_message(&self.body) else {
            return Vec::new();
        };
        image::parts(&message["content"])
            .filter_map(image::inline)
            .collect()
    }

    /// How many image parts the whole request carries, in every message (Anthropic
    /// `tool_result` contents included), inline or by URL: proves that images of earlier
    /// turns are, or are not, sent again.
    pub fn all_image_count(&self) -> usize {
        image::count_all(&self.body)
    }
}

/// One request to `POST /v1/audio/transcriptions`, as received (refused ones too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transcription {
    /// The `model` field; `""` if missing.
    pub model: String,
    /// The `file` part's file name; `""` if missing.
    pub file_name: String,
    /// The `file` part's `Content-Type`, if it had one.
    pub content_type: Option<String>,
    /// The file's length in bytes.
    pub size: usize,
    /// The file's bytes (not in `GET /_fake/transcriptions`, which gives `size`).
    #[serde(skip)]
    pub bytes: Vec<u8>,
    /// `response_format` as sent (`None`: the default, `json`).
    pub response_format: Option<String>,
    /// `language` as sent.
    pub language: Option<String>,
    /// The HTTP status the fake answered.
    pub status: u16,
}

/// The JSON shape `GET /_fake/requests` returns for one request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordedJson {
    pub format: Format,
    pub body: Value,
    pub headers: Vec<(String, String)>,
    /// Milliseconds since the fake started.
    pub at_ms: u64,
}

impl RecordedJson {
    pub(crate) fn new(recorded: &Recorded, started: Instant) -> RecordedJson {
        let at_ms = recorded.at.saturating_duration_since(started).as_millis();
        RecordedJson {
            format: recorded.format,
            body: recorded.body.clone(),
            headers: recorded.headers.clone(),
            at_ms: u64::try_from(at_ms).unwrap_or(u64::MAX),
        }
    }
}

/// Both formats keep `messages: [{role, content}]` where content is a string or an array
/// of typed parts, and both call a text part `{"type":"text","text":..}`.
/// `text` without a leading `[Www YYYY-MM-DD HH:MM] ` stamp.
pub(crate) fn strip_stamp(text: &str) -> &str {
    let bytes = text.as_bytes();
    let stamp_len = "[Sun 2026-11-22 09:30] ".len();
    let shaped = bytes.len() >= stamp_len
        && bytes[0] == b'['
        && bytes[4] == b' '
        && bytes[stamp_len - 2] == b']'
        && bytes[stamp_len - 1] == b' '
        && bytes[5..9].iter().all(u8::is_ascii_digit);
    if shaped { &text[stamp_len..] } else { text }
}

pub(crate) fn last_user_text(body: &Value) -> String {
    let Some(messages) = body["messages"].as_array() else {
        return String::new();
    };
    messages
        .iter()
        .rev()
        .filter(|m| m["role"] == "user")
        .map(|m| content_text(&m["content"]))
        .find(|text| !text.is_empty())
        .unwrap_or_default()
}

/// The system prompt as one text: Anthropic's `system` (a string or text blocks) or
/// the OpenAI `system`/`developer` messages, joined.
pub(crate) fn system_text(body: &Value) -> String {
    let mut out = content_text(&body["system"]);
    for message in body["messages"].as_array().into_iter().flatten() {
        if message["role"] == "system" || message["role"] == "developer" {
            out.push_str(&content_text(&message["content"]));
        }
    }
    out
}

/// The last user message that is not made only of Anthropic `tool_result` blocks.
fn last_person_message(body: &Value) -> Option<&Value> {
    let only_tool_results = |content: &Value| {
        content.as_array().is_some_and(|blocks| {
            !blocks.is_empty() && blocks.iter().all(|b| b["type"] == "tool_result")
        })
    };
    body["messages"]
        .as_array()?
        .iter()
        .rev()
        .filter(|m| m["role"] == "user")
        .find(|m| !only_tool_results(&m["content"]))
}

fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openai_string_and_parts() {
        let body = json!({"messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "image_url"}, {"type": "text", "text": "y"}]},
            {"role": "tool", "content": "result"}
        ]});
        assert_eq!(last_user_text(&body), "x\ny");
    }

    #[test]
    fn anthropic_skips_tool_result_turns() {
        let body = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "read it"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "r", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}
        ]});
        assert_eq!(last_user_text(&body), "read it");
    }

    #[test]
    fn nothing_gives_empty() {
        assert_eq!(last_user_text(&json!({})), "");
        assert_eq!(strip_stamp("[Sun 2026-11-22 09:30] hi"), "hi");
        assert_eq!(strip_stamp("[not a stamp] hi"), "[not a stamp] hi");
        assert_eq!(last_user_text(&json!({"messages": []})), "");
    }
}
