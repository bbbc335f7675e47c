//! The Anthropic Messages wire format: encoding a `ChatRequest` (with prompt-cache marks
//! on the stable system block and the last tool), decoding the streamed events into
//! `StreamEvent`s and a `ChatResponse`. HTTP plumbing lives in `transport`.
//!
//! Extended thinking (`thinking_budget` > 0): the request asks for it, thinking blocks
//! come back as reasoning parts with their signature (redacted blocks with their data),
//! and go back in the assistant messages unchanged, as the API requires around tool
//! use. With thinking off no reasoning is sent back. Tool input is parsed once, at block
//! stop; input that is not valid JSON is kept as `Value::String(raw)`, as the OpenAI
//! decoder does.

use std::collections::BTreeMap;

use reqwest::header::HeaderValue;
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use serde_json::{Value, json};

use super::body::Body;
use super::error::{self, ErrorKind, ProviderError};
use super::transport::{self, Call, Flow, Transport};
use super::types::{ChatRequest, ChatResponse, Part, Role, StopReason, StreamEvent, Usage};
use super::{Provider, ProviderKind, ProviderSettings};

const API_VERSION: &str = "2023-06-01";
/// Anthropic requires `max_tokens`; used when the request leaves it at 0.
const DEFAULT_MAX_TOKENS: u32 = 4096;

pub struct AnthropicProvider {
    transport: Transport,
}

impl AnthropicProvider {
    pub fn new(settings: ProviderSettings, http: reqwest::Client) -> Self {
        Self {
            transport: Transport::new(settings, http, ProviderKind::Anthropic.env_var()),
        }
    }

    async fn call(
        &self,
        req: &ChatRequest,
        key: Option<&SecretString>,
        call: &Call,
        on_event: &mut (dyn for<'a> FnMut(StreamEvent<'a>) + Send),
    ) -> Result<ChatResponse, ProviderError> {
        let mut request = self
            .transport
            .http
            .post(self.transport.url("/v1/messages"))
            .header("anthropic-version", API_VERSION)
            .json(&encode_request(req, call.budget.max_tokens));
        if let Some(key) = key {
            let mut value = HeaderValue::from_str(key.expose_secret()).map_err(|_| {
                ProviderError::new(
                    ErrorKind::Auth,
                    "the API key contains characters that cannot be sent in an HTTP header",
                )
            })?;
            value.set_sensitive(true);
            request = request.header("x-api-key", value);
        }
        let response = self.transport.send(request).await?;
        if !response.status().is_success() {
            return Err(self.transport.rejection(response).await.classify());
        }
        let mut decoder = StreamDecoder::default();
        self.transport
            .pump(response, |event| decoder.on_data(&event.data, on_event))
            .await?;
        decoder.finish()
    }
}

#[async_trait::async_trait]
impl Provider for AnthropicProvider {
    async fn stream(
        &self,
        req: &ChatRequest,
        on_event: &mut (dyn for<'a> FnMut(StreamEvent<'a>) + Send),
    ) -> Result<ChatResponse, ProviderError> {
        let key = self.transport.key();
        let call = self.transport.begin(req);
        let meter = &call.meter;
        let mut watch = |event: StreamEvent<'_>| {
            meter.reply_began();
            on_event(event);
        };
        let reply = self.call(req, key.map(|(_, key)| key), &call, &mut watch);
        self.transport
            .run(key.map(|(index, _)| index), &call, reply)
            .await
    }
}

/// The JSON body of one streamed Messages call; `max_tokens` 0 means 4,096 (the API
/// requires one).
pub fn encode_request(req: &ChatRequest, max_tokens: u32) -> Body<Vec<Tool<'_>>> {
    let mut system = Vec::new();
    if !req.system_stable.is_empty() {
        system.push(json!({
            "type": "text",
            "text": req.system_stable,
            "cache_control": {"type": "ephemeral"},
        }));
    }
    if !req.system_volatile.is_empty() {
        system.push(json!({"type": "text", "text": req.system_volatile}));
    }
    let thinking = req.thinking_budget > 0;
    let mut messages: Vec<Value> = Vec::with_capacity(req.messages.len());
    for (i, message) in req.messages.iter().enumerate() {
        let content = match req.recalled_at {
            Some((at, part)) if at == i && splits_cleanly(&message.parts, part) => {
                // What the next turn repeats ends before the recalled memory: cached
                // for it there.
                let mut content = encode_parts(message.role, &message.parts[..part], thinking);
                mark_last(&mut content);
                content.extend(encode_parts(message.role, &message.parts[part..], thinking));
                content
            }
            _ => encode_parts(message.role, &message.parts, thinking),
        };
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        if !content.is_empty() {
            messages.push(json!({"role": role, "content": content}));
        }
    }
    // The whole request, for the calls after it in this turn (they add the tool
    // results to it) and for the next turn when nothing was recalled. With the tools'
    // and the system's, four marks at most, as the API allows.
    if let Some(Value::Array(content)) = messages.last_mut().and_then(|m| m.get_mut("content")) {
        mark_last(content);
    }
    let mut max_tokens = if max_tokens > 0 {
        max_tokens
    } else {
        DEFAULT_MAX_TOKENS
    };
    // Thinking counts against max_tokens, which must exceed the budget: the reply keeps
    // its own allowance on top.
    if req.thinking_budget > 0 {
        max_tokens += req.thinking_budget;
    }
    let mut body = json!({
        "model": req.model,
        "max_tokens": max_tokens,
        "stream": true,
        "messages": messages,
    });
    if !system.is_empty() {
        body["system"] = Value::Array(system);
    }
    if req.thinking_budget > 0 {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": req.thinking_budget});
    }
    let last = req.tools.len().saturating_sub(1);
    let tools = req.tools.iter().enumerate().map(|(i, tool)| Tool {
        name: &tool.name,
        description: &tool.description,
        input_schema: &tool.input_schema,
        // One mark on the last tool caches the whole tool list (it precedes the system).
        cache_control: (i == last).then_some(CacheControl {
            r#type: "ephemeral",
        }),
    });
    Body {
        fields: body,
        tools: (!req.tools.is_empty()).then(|| tools.collect()),
    }
}

/// Whether a message can be sent in two halves at `part` with the order the API wants:
/// the second half (the recalled memory) has no tool results, which go first.
fn splits_cleanly(parts: &[Part], part: usize) -> bool {
    part > 0
        && part <= parts.len()
        && !parts[part..]
            .iter()
            .any(|p| matches!(p, Part::ToolResult { .. }))
}

/// Put a cache mark on the last block, unless it is a thinking block (which cannot
/// carry one).
fn mark_last(content: &mut [Value]) {
    if let Some(Value::Object(block)) = content.last_mut()
        && !matches!(
            block.get("type").and_then(Value::as_str),
            Some("thinking" | "redacted_thinking")
        )
    {
        block.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

/// A tool as the Messages API takes it, borrowing the spec.
#[derive(Serialize)]
pub struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Serialize)]
struct CacheControl {
    r#type: &'static str,
}

/// Content blocks of one message; tool results first, as the API requires. `thinking`:
/// the request has extended thinking on, so signed thinking blocks go back.
fn encode_parts(role: Role, parts: &[Part], thinking: bool) -> Vec<Value> {
    let mut results = Vec::new();
    let mut blocks = Vec::new();
    for part in parts {
        match part {
            Part::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => results.push(json!({
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": content,
                "is_error": is_error,
            })),
            // The API rejects empty text blocks.
            Part::Text { text } if text.is_empty() => {}
            Part::Text { text } => blocks.push(json!({"type": "text", "text": text})),
            Part::Image {
                data: Some(data), ..
            } if role == Role::User => blocks.push(json!({
                "type": "image",
                "source": {"type": "base64", "media_type": data.mime, "data": data.base64},
            })),
            Part::Image { path, .. } if role == Role::User => {
                blocks.push(json!({"type": "text", "text": Part::placeholder(path)}));
            }
            Part::ToolCall {
                id,
                name,
                arguments,
            } if role == Role::Assistant => blocks.push(json!({
                "type": "tool_use",
                "id": id,
                "name": name,
                "input": tool_input(arguments),
            })),
            Part::Reasoning {
                text,
                redacted: true,
                ..
            } if thinking && role == Role::Assistant => {
                blocks.push(json!({"type": "redacted_thinking", "data": text}));
            }
            Part::Reasoning {
                text,
                signature: Some(signature),
                ..
            } if thinking && role == Role::Assistant => blocks.push(json!({
                "type": "thinking",
                "thinking": text,
                "signature": signature,
            })),
            Part::ToolCall { .. } | Part::Reasoning { .. } | Part::Image { .. } => {}
        }
    }
    results.extend(blocks);
    results
}

/// `input` must be an object. Arguments kept raw (unparsable, perhaps from another
/// provider earlier in the conversation) travel inside one.
fn tool_input(arguments: &Value) -> Value {
    match arguments {
        Value::Object(_) => arguments.clone(),
        Value::Null => json!({}),
        Value::String(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(parsed @ Value::Object(_)) => parsed,
            _ => json!({"_raw_arguments": raw}),
        },
        other => json!({"_raw_arguments": other}),
    }
}

/// One content block being streamed in.
#[derive(Debug)]
enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    /// `redacted_thinking`: encrypted, sent back as it came.
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        /// `input_json_delta` fragments, parsed at block stop.
        json: String,
        /// Set at block stop.
        input: Option<Value>,
    },
    /// Block types this decoder does not turn into parts.
    Other,
}

/// Assembles a reply from the stream's events.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    /// Keyed by the block `index` the server gives.
    blocks: BTreeMap<u64, Block>,
    stop: Option<StopReason>,
    usage: Usage,
    /// `message_stop` arrived.
    done: bool,
}

impl StreamDecoder {
    /// Handle one SSE data payload. The payload's own `type` names the event, so the
    /// SSE `event:` line is not needed.
    pub fn on_data(
        &mut self,
        data: &str,
        on_event: &mut (dyn for<'a> FnMut(StreamEvent<'a>) + Send),
    ) -> Result<Flow, ProviderError> {
        let event: Value =
            serde_json::from_str(data).map_err(|e| transport::malformed(data, &e))?;
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match text(&event, "type") {
            "message_start" => {
                if let Some(usage) = event.pointer("/message/usage") {
                    self.read_usage(usage);
                }
            }
            "content_block_start" => {
                let block = event.get("content_block").unwrap_or(&Value::Null);
                let block = match text(block, "type") {
                    "text" => {
                        let initial = text(block, "text");
                        if !initial.is_empty() {
                            on_event(StreamEvent::Text(initial));
                        }
                        Block::Text(initial.to_string())
                    }
                    "thinking" => Block::Thinking {
                        text: text(block, "thinking").to_string(),
                        signature: text(block, "signature").to_string(),
                    },
                    "redacted_thinking" => Block::Redacted(text(block, "data").to_string()),
                    "tool_use" => {
                        let name = text(block, "name");
                        let id = text(block, "id");
                        on_event(StreamEvent::ToolCallStarted { id, name });
                        Block::ToolUse {
                            id: text(block, "id").to_string(),
                            name: name.to_string(),
                            json: String::new(),
                            input: None,
                        }
                    }
                    _ => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let delta = event.get("delta").unwrap_or(&Value::Null);
                match (self.blocks.get_mut(&index), text(delta, "type")) {
                    (Some(Block::Text(acc)), "text_delta") => {
                        let piece = text(delta, "text");
                        acc.push_str(piece);
                        on_event(StreamEvent::Text(piece));
                    }
                    (Some(Block::Thinking { text: acc, .. }), "thinking_delta") => {
                        let piece = text(delta, "thinking");
                        acc.push_str(piece);
                        on_event(StreamEvent::Reasoning(piece));
                    }
                    (Some(Block::Thinking { signature, .. }), "signature_delta") => {
                        signature.push_str(text(delta, "signature"));
                    }
                    (Some(Block::ToolUse { json, .. }), "input_json_delta") => {
                        json.push_str(text(delta, "partial_json"));
                    }
                    // citations, or a delta for an unknown block.
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(Block::ToolUse { json, input, .. }) = self.blocks.get_mut(&index) {
                    *input = Some(parse_input(std::mem::take(json)));
                }
            }
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop_reason(reason));
                }
                if let Some(usage) = event.get("usage") {
                    self.read_usage(usage);
                }
            }
            "message_stop" => {
                self.done = true;
                return Ok(Flow::Done);
            }
            "error" => return Err(error::classify_stream_error(&event)),
            // `ping` and event types added after this was written.
            _ => {}
        }
        Ok(Flow::More)
    }

    /// Usage fields present in this event replace what was known (`message_delta`
    /// carries cumulative counts).
    fn read_usage(&mut self, usage: &Value) {
        let read = |key: &str| usage.get(key).and_then(Value::as_u64);
        if let Some(n) = read("input_tokens") {
            self.usage.input_tokens = n;
        }
        if let Some(n) = read("output_tokens") {
            self.usage.output_tokens = n;
        }
        if let Some(n) = read("cache_read_input_tokens") {
            self.usage.cache_read_tokens = n;
        }
        if let Some(n) = read("cache_creation_input_tokens") {
            self.usage.cache_write_tokens = n;
        }
    }

    /// The stream ended: assemble the reply, or say it was cut short.
    pub fn finish(self) -> Result<ChatResponse, ProviderError> {
        if !self.done {
            return Err(transport::cut_short());
        }
        let mut parts = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                Block::Text(text) if !text.is_empty() => parts.push(Part::Text { text }),
                Block::Thinking { text, signature }
                    if !text.is_empty() || !signature.is_empty() =>
                {
                    parts.push(Part::Reasoning {
                        text,
                        signature: (!signature.is_empty()).then_some(signature),
                        redacted: false,
                    });
                }
                Block::Redacted(data) => parts.push(Part::Reasoning {
                    text: data,
                    signature: None,
                    redacted: true,
                }),
                Block::ToolUse {
                    id,
                    name,
                    json,
                    input,
                } => parts.push(Part::ToolCall {
                    id,
                    name,
                    arguments: input.unwrap_or_else(|| parse_input(json)),
                }),
                Block::Text(_) | Block::Thinking { .. } | Block::Other => {}
            }
        }
        Ok(ChatResponse {
            parts,
            stop: self.stop.unwrap_or(StopReason::EndTurn),
            usage: self.usage,
        })
    }
}

/// A string field, or "" when absent.
fn text<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_string()),
    }
}

/// Empty input means none (`{}`); invalid JSON is kept as a string (see module doc).
fn parse_input(raw: String) -> Value {
    if raw.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(&raw).unwrap_or(Value::String(raw))
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;
