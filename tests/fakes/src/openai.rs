//! The OpenAI chat-completions wire format: request checks (image parts included),
//! error bodies, stream chunks and the non-streamed `chat.completion` object.
//!
//! Only bytes and shapes live here; what to send and when is `reply`'s business.

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use serde_json::{Value, json};

use crate::image;
use crate::reply::{Call, Stop, Turn, Wire};
use crate::sse;
use crate::tokens::Prompt;

/// Whether the request carries `Authorization: Bearer KEY`.
pub(crate) fn authorized(headers: &HeaderMap, key: &str) -> bool {
    let sent = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok());
    sent.and_then(|v| v.strip_prefix("Bearer ")) == Some(key)
}

/// The checks the real API makes before it looks at the model, as a 400 message.
pub(crate) fn validate(_headers: &HeaderMap, body: &Value) -> Result<(), String> {
    if !body["model"].is_string() {
        return Err("you must provide a model parameter".into());
    }
    if !body["messages"].is_array() {
        return Err("Missing required parameter: 'messages'.".into());
    }
    if !body["stream_options"].is_null() && body["stream"] != true {
        let msg = "The 'stream_options' parameter is only allowed when 'stream' is enabled.";
        return Err(msg.into());
    }
    let messages = body["messages"].as_array().into_iter().flatten();
    for (i, message) in messages.enumerate() {
        validate_content(i, message)?;
    }
    Ok(())
}

/// The content part types the API knows.
const PART_TYPES: &[&str] = &[
    "text",
    "image_url",
    "input_audio",
    "refusal",
    "audio",
    "file",
];

/// One message's content parts: known types, text where text belongs, and image parts
/// only from the user, each a web address or a base64 `data:` URL of one of the four
/// image types.
fn validate_content(i: usize, message: &Value) -> Result<(), String> {
    let role = message["role"].as_str().unwrap_or_default();
    let parts = message["content"].as_array().into_iter().flatten();
    for (j, part) in parts.enumerate() {
        let at = format!("messages[{i}].content[{j}]");
        let kind = part["type"].as_str().unwrap_or_default();
        if !PART_TYPES.contains(&kind) {
            return Err(format!(
                "Invalid value: '{kind}'. Supported values are: 'text', 'image_url', \
                 'input_audio', 'refusal', 'audio', and 'file'."
            ));
        }
        if kind == "text" && !part["text"].is_string() {
            return Err(format!("Missing required parameter: '{at}.text'."));
        }
        if kind != "image_url" {
            continue;
        }
        if role != "user" {
            return Err(format!(
                "Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role \
                 'user', but this message with role '{role}' contains an image URL."
            ));
        }
        if !part["image_url"].is_object() {
            return Err(format!("Missing required parameter: '{at}.image_url'."));
        }
        let Some(url) = part["image_url"]["url"].as_str() else {
            return Err(format!("Missing required parameter: '{at}.image_url.url'."));
        };
        if url.starts_with("https://") || url.starts_with("http://") {
            continue;
        }
        if let Err(why) = image::decode_data_url(url) {
            return Err(format!(
                "Invalid image URL: '{at}.image_url.url'. Expected a base64-encoded data URL \
                 with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), \
                 but got {}.",
                why.got()
            ));
        }
        let detail = &part["image_url"]["detail"];
        if !detail.is_null() && !["auto", "low", "high"].contains(&detail.as_str().unwrap_or("")) {
            return Err(format!(
                "Invalid value: '{}'. Supported values are: 'auto', 'low', and 'high'.",
                detail.as_str().unwrap_or_default()
            ));
        }
    }
    Ok(())
}

/// `{"error":{"message","type","param","code"}}` as OpenAI sends it for `status`.
pub(crate) fn error_json(status: u16, kind: Option<&str>, message: Option<&str>) -> Value {
    let (default_kind, code, default_message) = match status {
        401 => (
            "invalid_request_error",
            Some("invalid_api_key"),
            "Incorrect API key provided",
        ),
        404 => (
            "invalid_request_error",
            Some("model_not_found"),
            "The model does not exist or you do not have access to it.",
        ),
        429 => (
            "requests",
            Some("rate_limit_exceeded"),
            "Rate limit reached for requests",
        ),
        503 | 529 => (
            "server_error",
            None,
            "The engine is currently overloaded, please try again later.",
        ),
        500..=599 => (
            "server_error",
            None,
            "The server had an error while processing your request. Sorry about that!",
        ),
        _ => ("invalid_request_error", None, "Invalid request."),
    };
    json!({"error": {
        "message": message.unwrap_or(default_message),
        "type": kind.unwrap_or(default_kind),
        "param": null,
        "code": code,
    }})
}

/// The non-streamed `chat.completion` object.
pub(crate) fn whole(turn: &Turn, text: &str, calls: &[Call<'_>], stop: Stop, output: u64) -> Value {
    let mut message = json!({"role": "assistant", "content": text, "refusal": null});
    if !calls.is_empty() {
        if text.is_empty() {
            message["content"] = Value::Null;
        }
        let calls: Vec<Value> = calls
            .iter()
            .map(|c| {
                json!({"id": call_id(c), "type": "function",
                       "function": {"name": c.name, "arguments": c.args.to_string()}})
            })
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": id(turn),
        "object": "chat.completion",
        "created": turn.created,
        "model": turn.model,
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "message": message, "logprobs": null,
                     "finish_reason": finish_reason(stop)}],
        "usage": usage(&turn.prompt, output),
    })
}

/// The `chat.completion.chunk` stream of one turn.
pub(crate) struct Stream {
    id: String,
    model: String,
    created: u64,
    /// Only with `stream_options.include_usage` do chunks carry `usage` at all.
    include_usage: bool,
    prompt: Prompt,
    /// Tool calls sent so far: the next one's `index`.
    tools: usize,
}

impl Stream {
    pub(crate) fn new(turn: &Turn) -> Stream {
        Stream {
            id: id(turn),
            model: turn.model.clone(),
            created: turn.created,
            include_usage: turn.include_usage,
            prompt: turn.prompt,
            tools: 0,
        }
    }

    fn chunk(&self, choices: Value, usage: Option<Value>) -> String {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "fp_fake",
            "choices": choices,
        });
        if self.include_usage {
            chunk["usage"] = usage.unwrap_or(Value::Null);
        }
        sse::event(None, &chunk)
    }

    fn delta(&self, delta: Value, finish: Option<&str>) -> String {
        let choice = json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish});
        self.chunk(json!([choice]), None)
    }
}

impl Wire for Stream {
    fn start(&mut self) -> Vec<String> {
        vec![self.delta(json!({"role": "assistant", "content": ""}), None)]
    }

    fn text(&mut self, piece: &str) -> Vec<String> {
        vec![self.delta(json!({"content": piece}), None)]
    }

    fn tool_call(&mut self, call: &Call<'_>, fragments: &[&str]) -> Vec<String> {
        let index = self.tools;
        self.tools += 1;
        let first = json!({"tool_calls": [{"index": index, "id": call_id(call), "type": "function",
                                           "function": {"name": call.name, "arguments": ""}}]});
        let mut events = vec![self.delta(first, None)];
        for fragment in fragments {
            let more =
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]});
            events.push(self.delta(more, None));
        }
        events
    }

    fn finish(&mut self, stop: Stop, output_tokens: u64) -> Vec<String> {
        let mut events = vec![self.delta(json!({}), Some(finish_reason(stop)))];
        if self.include_usage {
            let usage = usage(&self.prompt, output_tokens);
            events.push(self.chunk(json!([]), Some(usage)));
        }
        events.push(sse::raw_event(None, "[DONE]"));
        events
    }

    fn stream_error(&mut self, kind: &str) -> Vec<String> {
        vec![sse::event(None, &error_json(500, Some(kind), None))]
    }

    fn malformed(&mut self) -> Vec<String> {
        vec![
            sse::raw_event(
                None,
                r#"{"id":"chatcmpl-fake","object":"chat.completion.chunk","#,
            ),
            sse::raw_event(None, "not json at all"),
            sse::raw_event(None, "[DONE]"),
        ]
    }
}

fn id(turn: &Turn) -> String {
    format!("chatcmpl-fake-{}", turn.number)
}

fn call_id(call: &Call<'_>) -> String {
    format!("call_{}", call.number)
}

fn finish_reason(stop: Stop) -> &'static str {
    match stop {
        Stop::EndTurn => "stop",
        Stop::ToolUse => "tool_calls",
        Stop::MaxTokens => "length",
    }
}

fn usage(prompt: &Prompt, output: u64) -> Value {
    json!({
        "prompt_tokens": prompt.total,
        "completion_tokens": output,
        "total_tokens": prompt.total + output,
        "prompt_tokens_details": {"cached_tokens": prompt.cache_read},
        "completion_tokens_details": {"reasoning_tokens": 0},
    })
}
