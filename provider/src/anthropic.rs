//! The Anthropic Messages wire format: encoding a `ChatRequest` (with prompt-cache marks
//! on the stable system block and the last tool), decoding the streamed events into
//! `StreamEvent`s and a `ChatResponse`. The JSON's shapes are the types in `wire`; HTTP
//! plumbing lives in `transport`.
//!
//! Extended thinking (`thinking_budget` > 0): the request asks for it, thinking blocks
//! come back as reasoning parts with their signature (redacted blocks with their data),
//! and go back in the assistant messages unchanged, as the API requires around tool
//! use. With thinking off no reasoning is sent back. Tool input is parsed once, at block
//! stop; input that is not valid JSON is kept as `Value::String(raw)`, as the OpenAI
//! decoder does.

mod wire;

use std::borrow::Cow;
use std::collections::BTreeMap;

use reqwest::header::HeaderValue;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

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

/// The body of one streamed Messages call; `max_tokens` 0 means 4,096 (the API requires
/// one).
pub(crate) fn encode_request(req: &ChatRequest, max_tokens: u32) -> wire::Request<'_> {
    let mut system = Vec::new();
    if !req.system_stable.is_empty() {
        let mut stable = wire::Content::text(req.system_stable.as_str());
        stable.mark();
        system.push(stable);
    }
    if !req.system_volatile.is_empty() {
        system.push(wire::Content::text(req.system_volatile.as_str()));
    }
    let thinking = req.thinking_budget > 0;
    let mut messages = Vec::with_capacity(req.messages.len());
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
        if !content.is_empty() {
            messages.push(wire::Message {
                role: message.role,
                content,
            });
        }
    }
    // The whole request, for the calls after it in this turn (they add the tool
    // results to it) and for the next turn when nothing was recalled. With the tools'
    // and the system's, four marks at most, as the API allows.
    if let Some(last) = messages.last_mut() {
        mark_last(&mut last.content);
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
    let last = req.tools.len().saturating_sub(1);
    let tools = req.tools.iter().enumerate().map(|(i, tool)| {
        // One mark on the last tool caches the whole tool list (it precedes the system).
        wire::Tool::new(tool, (i == last).then_some(wire::CacheControl::Ephemeral))
    });
    wire::Request {
        model: &req.model,
        max_tokens,
        stream: true,
        messages,
        system,
        thinking: thinking.then_some(wire::Thinking::Enabled {
            budget_tokens: req.thinking_budget,
        }),
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

/// Put a cache mark on the last block (unless it is a thinking block, which cannot
/// carry one).
fn mark_last(content: &mut [wire::Content<'_>]) {
    if let Some(block) = content.last_mut() {
        block.mark();
    }
}

/// Content blocks of one message; tool results first, as the API requires. `thinking`:
/// the request has extended thinking on, so signed thinking blocks go back.
fn encode_parts(role: Role, parts: &[Part], thinking: bool) -> Vec<wire::Content<'_>> {
    let mut results = Vec::new();
    let mut blocks = Vec::new();
    for part in parts {
        match part {
            Part::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => results.push(wire::Content::ToolResult {
                tool_use_id: call_id,
                content,
                is_error: *is_error,
                cache_control: None,
            }),
            // The API rejects empty text blocks.
            Part::Text { text } if text.is_empty() => {}
            Part::Text { text } => blocks.push(wire::Content::text(text.as_str())),
            Part::Image {
                data: Some(data), ..
            } if role == Role::User => blocks.push(wire::Content::Image {
                source: wire::ImageSource::Base64 {
                    media_type: &data.mime,
                    data: &data.base64,
                },
                cache_control: None,
            }),
            Part::Image { path, .. } if role == Role::User => {
                blocks.push(wire::Content::text(Part::placeholder(path)));
            }
            Part::ToolCall {
                id,
                name,
                arguments,
            } if role == Role::Assistant => blocks.push(wire::Content::ToolUse {
                id,
                name,
                input: tool_input(arguments),
                cache_control: None,
            }),
            Part::Reasoning {
                text,
                redacted: true,
                ..
            } if thinking && role == Role::Assistant => {
                blocks.push(wire::Content::RedactedThinking { data: text });
            }
            Part::Reasoning {
                text,
                signature: Some(signature),
                ..
            } if thinking && role == Role::Assistant => blocks.push(wire::Content::Thinking {
                thinking: text,
                signature,
            }),
            Part::ToolCall { .. } | Part::Reasoning { .. } | Part::Image { .. } => {}
        }
    }
    results.extend(blocks);
    results
}

/// `input` must be an object. Arguments kept raw (unparsable, perhaps from another
/// provider earlier in the conversation) travel inside one.
fn tool_input(arguments: &Value) -> Cow<'_, Value> {
    match arguments {
        Value::Object(_) => Cow::Borrowed(arguments),
        Value::Null => Cow::Owned(json!({})),
        Value::String(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(parsed @ Value::Object(_)) => Cow::Owned(parsed),
            _ => Cow::Owned(json!({"_raw_arguments": raw})),
        },
        other => Cow::Owned(json!({"_raw_arguments": other})),
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
pub(crate) struct StreamDecoder {
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
    pub(crate) fn on_data(
        &mut self,
        data: &str,
        on_event: &mut (dyn for<'a> FnMut(StreamEvent<'a>) + Send),
    ) -> Result<Flow, ProviderError> {
        let event: wire::Event = match serde_json::from_str(data) {
            Ok(event) => event,
            // JSON without a `type` to name it: no event Pincer knows.
            Err(e) if e.is_data() => return Ok(Flow::More),
            Err(e) => return Err(transport::malformed(data, &e)),
        };
        match event {
            wire::Event::MessageStart { message } => {
                if let Some(usage) = message.and_then(|m| m.usage) {
                    self.read_usage(&usage);
                }
            }
            wire::Event::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block {
                    wire::Block::Text { text } => {
                        if !text.is_empty() {
                            on_event(StreamEvent::Text(&text));
                        }
                        Block::Text(text)
                    }
                    wire::Block::Thinking {
                        thinking,
                        signature,
                    } => Block::Thinking {
                        text: thinking,
                        signature: signature.unwrap_or_default(),
                    },
                    wire::Block::RedactedThinking { data } => Block::Redacted(data),
                    wire::Block::ToolUse { id, name, .. } => {
                        on_event(StreamEvent::ToolCallStarted {
                            id: &id,
                            name: &name,
                        });
                        Block::ToolUse {
                            id,
                            name,
                            json: String::new(),
                            input: None,
                        }
                    }
                    wire::Block::Other => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            wire::Event::ContentBlockDelta { index, delta } => {
                match (self.blocks.get_mut(&index), delta) {
                    (Some(Block::Text(acc)), wire::Delta::Text { text }) => {
                        acc.push_str(&text);
                        on_event(StreamEvent::Text(&text));
                    }
                    (
                        Some(Block::Thinking { text: acc, .. }),
                        wire::Delta::Thinking { thinking },
                    ) => {
                        acc.push_str(&thinking);
                        on_event(StreamEvent::Reasoning(&thinking));
                    }
                    (
                        Some(Block::Thinking { signature: acc, .. }),
                        wire::Delta::Signature { signature },
                    ) => {
                        acc.push_str(&signature);
                    }
                    (
                        Some(Block::ToolUse { json, .. }),
                        wire::Delta::InputJson { partial_json },
                    ) => {
                        json.push_str(&partial_json);
                    }
                    // citations, or a delta for an unknown block.
                    _ => {}
                }
            }
            wire::Event::ContentBlockStop { index } => {
                if let Some(Block::ToolUse { json, input, .. }) = self.blocks.get_mut(&index) {
                    *input = Some(parse_input(std::mem::take(json)));
                }
            }
            wire::Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.and_then(|d| d.stop_reason) {
                    self.stop = Some(stop_reason(&reason));
                }
                if let Some(usage) = usage {
                    self.read_usage(&usage);
                }
            }
            wire::Event::MessageStop => {
                self.done = true;
                return Ok(Flow::Done);
            }
            wire::Event::Error { error } => return Err(error::classify_stream_error(&error)),
            // Event types added after this was written.
            wire::Event::Ping | wire::Event::Unknown => {}
        }
        Ok(Flow::More)
    }

    /// Usage fields present in this event replace what was known (`message_delta`
    /// carries cumulative counts).
    fn read_usage(&mut self, usage: &wire::Usage) {
        if let Some(n) = usage.input_tokens {
            self.usage.input_tokens = n;
        }
        if let Some(n) = usage.output_tokens {
            self.usage.output_tokens = n;
        }
        if let Some(n) = usage.cache_read_input_tokens {
            self.usage.cache_read_tokens = n;
        }
        if let Some(n) = usage.cache_creation_input_tokens {
            self.usage.cache_write_tokens = n;
        }
    }

    /// The stream ended: assemble the reply, or say it was cut short.
    pub(crate) fn finish(self) -> Result<ChatResponse, ProviderError> {
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
