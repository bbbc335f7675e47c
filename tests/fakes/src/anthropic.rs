//! The Anthropic Messages wire format: request checks (image blocks included), error
//! bodies, stream events and the non-streamed `message` object.
//!
//! Only bytes and shapes live here; what to send and when is `reply`'s business.

use axum::http::HeaderMap;
use serde_json::{Value, json};

use crate::image;
use crate::reply::{Call, Stop, Turn, Wire};
use crate::sse;
use crate::tokens::Prompt;

/// Whether the request carries `x-api-key: KEY`.
pub(crate) fn authorized(headers: &HeaderMap, key: &str) -> bool {
    headers.get("x-api-key").and_then(|v| v.to_str().ok()) == Some(key)
}

/// What the fake thinks when thinking is on.
pub(crate) const THINKING: &str = "The user asked something; I will answer it.";

/// The signature of a thinking block: a hash of its text, so a block sent back changed
/// (or made up) is refused as the real API refuses it.
pub(crate) fn signature(thinking: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in thinking.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("fakesig{hash:016x}")
}

/// With thinking on: the budget is valid, and the last assistant message — when it
/// called tools whose results follow — starts with the thinking block it was given,
/// unchanged, as the real API requires.
fn validate_thinking(body: &Value) -> Result<(), String> {
    let budget = body["thinking"]["budget_tokens"].as_u64().unwrap_or(0);
    if budget < 1024 {
        return Err(
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024".into(),
        );
    }
    if budget >= body["max_tokens"].as_u64().unwrap_or(0) {
        return Err("`max_tokens` must be greater than `thinking.budget_tokens`".into());
    }
    let messages = body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let Some((i, last)) = messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m["role"] == "assistant")
    else {
        return Ok(());
    };
    let blocks = last["content"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if !blocks.iter().any(|b| b["type"] == "tool_use") {
        return Ok(());
    }
    let first = blocks.first().unwrap_or(&Value::Null);
    match first["type"].as_str() {
        Some("thinking") => {
            let text = first["thinking"].as_str().unwrap_or_default();
            if first["signature"].as_str() != Some(signature(text).as_str()) {
                return Err(format!(
                    "messages.{i}.content.0: Invalid `signature` in `thinking` block"
                ));
            }
            Ok(())
        }
        Some("redacted_thinking") => Ok(()),
        other => Err(format!(
            "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).",
            other.unwrap_or("nothing")
        )),
    }
}

/// The checks the real API makes before it looks at the model, as a 400 message.
pub(crate) fn validate(headers: &HeaderMap, body: &Value) -> Result<(), String> {
    if !headers.contains_key("anthropic-version") {
        return Err("anthropic-version: header is required".into());
    }
    if !body["model"].is_string() {
        return Err("model: Field required".into());
    }
    if !body["messages"].is_array() {
        return Err("messages: Field required".into());
    }
    if !body["max_tokens"].is_u64() {
        return Err("max_tokens: Field required".into());
    }
    if body["thinking"]["type"] == "enabled" {
        validate_thinking(body)?;
    }
    let messages = body["messages"].as_array().into_iter().flatten();
    for (i, message) in messages.enumerate() {
        let blocks = message["content"].as_array().into_iter().flatten();
        for (j, block) in blocks.enumerate() {
            let at = format!("messages.{i}.content.{j}");
            if block["type"] == "image" {
                validate_image(&format!("{at}.image"), block)?;
            }
            if block["type"] == "tool_result" {
                let nested = block["content"].as_array().into_iter().flatten();
                for (k, inner) in nested.enumerate() {
                    if inner["type"] == "image" {
                        validate_image(&format!("{at}.tool_result.content.{k}.image"), inner)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The most base64 text one image may take (5 MB, counted on the encoded string).
const MAX_IMAGE_BASE64: usize = 5 * 1024 * 1024;

/// One `image` block at `at` (`messages.0.content.1.image`): a `base64` source of one of
/// the four image types whose bytes, when recognisable, are what it says they are; or a
/// `url` or `file` source. Bytes that look like no image at all are let through, so
/// tests may send short placeholders.
fn validate_image(at: &str, block: &Value) -> Result<(), String> {
    let source = &block["source"];
    if !source.is_object() {
        return Err(format!("{at}.source: Field required"));
    }
    match source["type"].as_str().unwrap_or_default() {
        "base64" => {}
        "url" if source["url"].is_string() => return Ok(()),
        "url" => return Err(format!("{at}.source.url.url: Field required")),
        "file" if source["file_id"].is_string() => return Ok(()),
        "file" => return Err(format!("{at}.source.file.file_id: Field required")),
        other => {
            return Err(format!(
                "{at}.source: Input tag '{other}' found using 'type' does not match any of the \
                 expected tags: 'base64', 'url', 'file'"
            ));
        }
    }
    let at = format!("{at}.source.base64");
    let declared = source["media_type"].as_str().unwrap_or_default();
    if !image::MIME_TYPES.contains(&declared) {
        return Err(format!(
            "{at}.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or \
             'image/webp'"
        ));
    }
    let Some(data) = source["data"].as_str() else {
        return Err(format!("{at}.data: Field required"));
    };
    if data.len() > MAX_IMAGE_BASE64 {
        return Err(format!(
            "{at}: image exceeds 5 MB maximum: {} bytes > {MAX_IMAGE_BASE64} bytes",
            data.len()
        ));
    }
    let Some(bytes) = image::decode_base64(data).filter(|b| !b.is_empty()) else {
        return Err(format!("{at}.data: Invalid base64 image data"));
    };
    match image::sniff(&bytes) {
        Some(actual) if actual != declared => Err(format!(
            "{at}: The image was specified using the {declared} media type, but the image \
             appears to be a {actual} image"
        )),
        _ => Ok(()),
    }
}

/// `{"type":"error","error":{"type","message"}}` as Anthropic sends it for `status`.
pub(crate) fn error_json(status: u16, kind: Option<&str>, message: Option<&str>) -> Value {
    let (default_kind, default_message) = match status {
        401 => ("authentication_error", "invalid x-api-key"),
        403 => (
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        404 => (
            "not_found_error",
            "The requested resource could not be found.",
        ),
        413 => (
            "request_too_large",
            "Request exceeds the maximum allowed size.",
        ),
        429 => (
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        ),
        529 => ("overloaded_error", "Overloaded"),
        500..=599 => ("api_error", "Internal server error"),
        _ => ("invalid_request_error", "Invalid request."),
    };
    let kind = kind.unwrap_or(default_kind);
    let message = match (message, kind) {
        (Some(message), _) => message,
        (None, "overloaded_error") => "Overloaded",
        (None, _) => default_message,
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// The non-streamed `message` object.
pub(crate) fn whole(turn: &Turn, text: &str, calls: &[Call<'_>], stop: Stop, output: u64) -> Value {
    let mut content = Vec::new();
    if turn.thinking {
        content.push(
            json!({"type": "thinking", "thinking": THINKING, "signature": signature(THINKING)}),
        );
    }
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    for call in calls {
        content.push(
            json!({"type": "tool_use", "id": call_id(call), "name": call.name,
                            "input": call.args}),
        );
    }
    let mut usage = input_usage(&turn.prompt);
    usage["output_tokens"] = json!(output);
    json!({
        "id": id(turn),
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "content": content,
        "stop_reason": stop_reason(stop),
        "stop_sequence": null,
        "usage": usage,
    })
}

/// The event stream of one turn.
pub(crate) struct Stream {
    id: String,
    model: String,
    prompt: Prompt,
    /// Content blocks opened so far: the next block's `index`.
    blocks: usize,
    /// The index of the text block still open, if any (closed before a tool block).
    open_text: Option<usize>,
    /// Open with a signed thinking block.
    thinking: bool,
}

impl Stream {
    pub(crate) fn new(turn: &Turn) -> Stream {
        Stream {
            id: id(turn),
            model: turn.model.clone(),
            prompt: turn.prompt,
            blocks: 0,
            open_text: None,
            thinking: turn.thinking,
        }
    }

    fn next_block(&mut self) -> usize {
        self.blocks += 1;
        self.blocks - 1
    }

    fn close_text(&mut self, events: &mut Vec<String>) {
        if let Some(index) = self.open_text.take() {
            events.push(event("content_block_stop", json!({"index": index})));
        }
    }
}

impl Wire for Stream {
    fn start(&mut self) -> Vec<String> {
        let mut usage = input_usage(&self.prompt);
        usage["output_tokens"] = json!(1);
        let message = json!({
            "id": self.id, "type": "message", "role": "assistant", "model": self.model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage,
        });
        let mut events = vec![
            event("message_start", json!({"message": message})),
            event("ping", json!({})),
        ];
        if self.thinking {
            let index = self.next_block();
            let block = json!({"type": "thinking", "thinking": ""});
            events.push(event(
                "content_block_start",
                json!({"index": index, "content_block": block}),
            ));
            for (kind, key, value) in [
                ("thinking_delta", "thinking", THINKING.to_string()),
                ("signature_delta", "signature", signature(THINKING)),
            ] {
                let delta = json!({"type": kind, key: value});
                events.push(event(
                    "content_block_delta",
                    json!({"index": index, "delta": delta}),
                ));
            }
            events.push(event("content_block_stop", json!({"index": index})));
        }
        events
    }

    fn text(&mut self, piece: &str) -> Vec<String> {
        let mut events = Vec::new();
        let index = match self.open_text {
            Some(index) => index,
            None => {
                let index = self.next_block();
                self.open_text = Some(index);
                let block = json!({"type": "text", "text": ""});
                let start = json!({"index": index, "content_block": block});
                events.push(event("content_block_start", start));
                index
            }
        };
        let delta = json!({"index": index, "delta": {"type": "text_delta", "text": piece}});
        events.push(event("content_block_delta", delta));
        events
    }

    fn tool_call(&mut self, call: &Call<'_>, fragments: &[&str]) -> Vec<String> {
        let mut events = Vec::new();
        self.close_text(&mut events);
        let index = self.next_block();
        let block =
            json!({"type": "tool_use", "id": call_id(call), "name": call.name, "input": {}});
        let start = json!({"index": index, "content_block": block});
        events.push(event("content_block_start", start));
        // The real API opens with an empty fragment; clients must accept it.
        for fragment in std::iter::once(&"").chain(fragments) {
            let delta = json!({"type": "input_json_delta", "partial_json": fragment});
            events.push(event(
                "content_block_delta",
                json!({"index": index, "delta": delta}),
            ));
        }
        events.push(event("content_block_stop", json!({"index": index})));
        events
    }

    fn finish(&mut self, stop: Stop, output_tokens: u64) -> Vec<String> {
        let mut events = Vec::new();
        self.close_text(&mut events);
        let delta = json!({"stop_reason": stop_reason(stop), "stop_sequence": null});
        let usage = json!({"output_tokens": output_tokens});
        events.push(event(
            "message_delta",
            json!({"delta": delta, "usage": usage}),
        ));
        events.push(event("message_stop", json!({})));
        events
    }

    fn stream_error(&mut self, kind: &str) -> Vec<String> {
        let message = if kind == "overloaded_error" {
            "Overloaded".to_string()
        } else {
            format!("fake stream error: {kind}")
        };
        let body = json!({"type": "error", "error": {"type": kind, "message": message}});
        vec![sse::event(Some("error"), &body)]
    }

    fn malformed(&mut self) -> Vec<String> {
        vec![
            sse::raw_event(
                Some("message_start"),
                r#"{"type":"message_start","message":{"id":"#,
            ),
            sse::raw_event(Some("content_block_delta"), "not json at all"),
            event("message_stop", json!({})),
        ]
    }
}

/// An event whose data carries its own name as `type`, as every Anthropic event does.
fn event(name: &str, mut data: Value) -> String {
    data["type"] = json!(name);
    sse::event(Some(name), &data)
}

fn id(turn: &Turn) -> String {
    format!("msg_fake_{}", turn.number)
}

fn call_id(call: &Call<'_>) -> String {
    format!("toolu_{}", call.number)
}

fn stop_reason(stop: Stop) -> &'static str {
    match stop {
        Stop::EndTurn => "end_turn",
        Stop::ToolUse => "tool_use",
        Stop::MaxTokens => "max_tokens",
    }
}

fn input_usage(prompt: &Prompt) -> Value {
    json!({
        "input_tokens": prompt.uncached(),
        "cache_creation_input_tokens": prompt.cache_write,
        "cache_read_input_tokens": prompt.cache_read,
    })
}
