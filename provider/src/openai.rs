//! The OpenAI-compatible chat-completions wire format (OpenAI, OpenRouter, Groq,
//! DeepSeek, Ollama, vLLM, LM Studio): encoding a `ChatRequest`, decoding the streamed
//! chunks into events and a `ChatResponse`. HTTP plumbing lives in `transport`.
//!
//! Tool-call arguments are parsed once, when the stream ends. Arguments that are not
//! valid JSON are kept as `Value::String(raw)` so the tool pipeline can tell the model
//! its arguments were broken; the encoder sends such a string back verbatim. llama.cpp's
//! own `timings` (prompt and output tokens and the milliseconds each took) are read as
//! the call's measured speeds.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use serde_json::{Value, json};

use super::body::Body;
use super::error::{self, ProviderError};
use super::pace::Sample;
use super::transport::{self, Call, Flow, Transport};
use super::types::{
    ChatRequest, ChatResponse, Part, Role, StopReason, StreamEvent, ToolSpec, Usage,
};
use super::{Provider, ProviderKind, ProviderSettings};

pub struct OpenAiProvider {
    transport: Transport,
    /// The server rejected `stream_options` once; some compatible servers do. Then usage
    /// is not reported, but replies work.
    no_stream_options: AtomicBool,
}

impl OpenAiProvider {
    pub fn new(settings: ProviderSettings, http: reqwest::Client) -> Self {
        Self {
            transport: Transport::new(settings, http, ProviderKind::Openai.env_var()),
            no_stream_options: AtomicBool::new(false),
        }
    }

    async fn call(
        &self,
        req: &ChatRequest,
        key: Option<&SecretString>,
        call: &Call,
        on_event: &mut (dyn for<'a> FnMut(StreamEvent<'a>) + Send),
    ) -> Result<ChatResponse, ProviderError> {
        let mut with_usage = !self.no_stream_options.load(Ordering::Relaxed);
        loop {
            let body = encode_request(req, with_usage, call.budget.max_tokens);
            let mut request = self
                .transport
                .http
                .post(self.transport.url("/chat/completions"))
                .json(&body);
            if let Some(key) = key {
                request = request.bearer_auth(key.expose_secret());
            }
            let response = self.transport.send(request).await?;
            if !response.status().is_success() {
                let rejection = self.transport.rejection(response).await;
                if rejection.status == 400
                    && with_usage
                    && rejection.body.contains("stream_options")
                {
                    tracing::warn!(
                        provider = %self.transport.settings.name,
                        "server rejects stream_options; retrying without (usage will not be reported)"
                    );
                    self.no_stream_options.store(true, Ordering::Relaxed);
                    with_usage = false;
                    continue;
                }
                return Err(rejection.classify());
            }
            let mut decoder = StreamDecoder::default();
            self.transport
                .pump(response, |event| decoder.on_data(&event.data, on_event))
                .await?;
            if let Some(timings) = decoder.timings {
                call.meter.server_measured(timings);
            }
            return decoder.finish();
        }
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiProvider {
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

/// The JSON body of one streamed chat-completions call; `max_tokens` 0 sends none.
pub fn encode_request(req: &ChatRequest, with_usage: bool, max_tokens: u32) -> Body<Vec<Tool<'_>>> {
    let mut messages = Vec::new();
    let system = [req.system_stable.as_str(), req.system_volatile.as_str()]
        .into_iter()
        .filter(|half| !half.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in &req.messages {
        match message.role {
            Role::User => encode_user(&message.parts, &mut messages),
            Role::Assistant => encode_assistant(&message.parts, &mut messages),
        }
    }
    let mut body = json!({
        "model": req.model,
        "messages": messages,
        "stream": true,
    });
    if with_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    if max_tokens > 0 {
        body["max_tokens"] = json!(max_tokens);
    }
    Body {
        fields: body,
        tools: (!req.tools.is_empty()).then(|| req.tools.iter().map(Tool::new).collect()),
    }
}

/// Tool results become `role: "tool"` messages ahead of the user's own text. A message
/// with images is an array of parts: the text, then each image as a data URL.
fn encode_user(parts: &[Part], out: &mut Vec<Value>) {
    let mut text: Vec<&str> = Vec::new();
    let mut placeholders = Vec::new();
    let mut images = Vec::new();
    for part in parts {
        match part {
            Part::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                // The format has no error flag: say it in the content.
                let content = if *is_error {
                    format!("Error: {content}")
                } else {
                    content.clone()
                };
                out.push(json!({"role": "tool", "tool_call_id": call_id, "content": content}));
            }
            Part::Text { text: t } => text.push(t.as_str()),
            Part::Image {
                data: Some(data), ..
            } => images.push(json!({
                "type": "image_url",
                "image_url": {"url": format!("data:{};base64,{}", data.mime, data.base64)},
            })),
            Part::Image { path, data: None } => placeholders.push(Part::placeholder(path)),
            Part::Reasoning { .. } | Part::ToolCall { .. } => {}
        }
    }
    text.extend(placeholders.iter().map(String::as_str));
    if images.is_empty() {
        if !text.is_empty() {
            out.push(json!({"role": "user", "content": text.join("\n")}));
        }
        return;
    }
    let mut content = Vec::with_capacity(images.len() + 1);
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text.join("\n")}));
    }
    content.extend(images);
    out.push(json!({"role": "user", "content": content}));
}

fn encode_assistant(parts: &[Part], out: &mut Vec<Value>) {
    let mut text = Vec::new();
    let mut calls = Vec::new();
    for part in parts {
        match part {
            Part::Text { text: t } => text.push(t.as_str()),
            Part::ToolCall {
                id,
                name,
                arguments,
            } => {
                let arguments = match arguments {
                    Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                calls.push(json!({
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }));
            }
            // Reasoning is the model's own scratchpad: not sent back.
            Part::Reasoning { .. } | Part::ToolResult { .. } | Part::Image { .. } => {}
        }
    }
    if text.is_empty() && calls.is_empty() {
        return;
    }
    let mut message = json!({"role": "assistant"});
    message["content"] = if text.is_empty() {
        Value::Null
    } else {
        json!(text.join("\n"))
    };
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    out.push(message);
}

/// A tool as chat completions takes it, borrowing the spec.
#[derive(Serialize)]
pub struct Tool<'a> {
    r#type: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

impl<'a> Tool<'a> {
    fn new(tool: &'a ToolSpec) -> Self {
        Tool {
            r#type: "function",
            function: Function {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.input_schema,
            },
        }
    }
}

/// One tool call being streamed in.
#[derive(Debug, Default)]
struct PendingCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assembles a reply from the stream's data lines.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    reasoning: String,
    text: String,
    /// Keyed by the `index` the server gives each call.
    calls: BTreeMap<u64, PendingCall>,
    finish_reason: Option<String>,
    usage: Usage,
    /// The server's own measurement of the call (llama.cpp's `timings`).
    timings: Option<Sample>,
    /// `[DONE]` arrived. A finish reason alone also completes a reply, for servers
    /// that never send `[DONE]`.
    done: bool,
}

impl StreamDecoder {
    /// Handle one SSE data payload.
    pub fn on_data(
        &mut self,
        data: &str,
        on_event: &mut (dyn for<'a> FnMut(StreamEvent<'a>) + Send),
    ) -> Result<Flow, ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Flow::Done);
        }
        if data.is_empty() {
            return Ok(Flow::More);
        }
        let chunk: Value =
            serde_json::from_str(data).map_err(|e| transport::malformed(data, &e))?;
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            return Err(error::classify_stream_error(&chunk));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = decode_usage(usage);
        }
        if let Some(timings) = chunk.get("timings").and_then(decode_timings) {
            self.timings = Some(timings);
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if let Some(delta) = choice.get("delta") {
                self.on_delta(delta, on_event);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_string());
            }
        }
        Ok(Flow::More)
    }

    fn on_delta(
        &mut self,
        delta: &Value,
        on_event: &mut (dyn for<'a> FnMut(StreamEvent<'a>) + Send),
    ) {
        let text_of = |key: &str| {
            delta
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        // DeepSeek says `reasoning_content`, OpenRouter and Ollama say `reasoning`.
        if let Some(reasoning) = text_of("reasoning_content").or_else(|| text_of("reasoning")) {
            self.reasoning.push_str(reasoning);
            on_event(StreamEvent::Reasoning(reasoning));
        }
        if let Some(text) = text_of("content") {
            self.text.push_str(text);
            on_event(StreamEvent::Text(text));
        }
        let calls = delta.get("tool_calls").and_then(Value::as_array);
        for call in calls.into_iter().flatten() {
            let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
            let index = match call.get("index").and_then(Value::as_u64) {
                Some(index) => index,
                // Servers that omit `index` send each call whole, or fragments of the
                // latest one without an id.
                None if !id.is_empty() || self.calls.is_empty() => self.calls.len() as u64,
                None => self.calls.len() as u64 - 1,
            };
            let pending = self.calls.entry(index).or_default();
            if !id.is_empty() {
                pending.id = id.to_string();
            }
            let function = call.get("function");
            let field = |key: &str| function.and_then(|f| f.get(key)).and_then(Value::as_str);
            if let Some(name) = field("name").filter(|n| !n.is_empty()) {
                let first = pending.name.is_empty();
                pending.name.push_str(name);
                if first {
                    on_event(StreamEvent::ToolCallStarted {
                        id: &pending.id,
                        name,
                    });
                }
            }
            if let Some(arguments) = field("arguments") {
                pending.arguments.push_str(arguments);
            }
        }
    }

    /// The stream ended: assemble the reply, or say it was cut short.
    pub fn finish(self) -> Result<ChatResponse, ProviderError> {
        // `[DONE]` without a finish reason still ends a reply; neither means it was cut.
        let reason = match (self.finish_reason, self.done) {
            (Some(reason), _) => reason,
            (None, true) => "stop".to_string(),
            (None, false) => return Err(transport::cut_short()),
        };
        let mut parts = Vec::new();
        if !self.reasoning.is_empty() {
            parts.push(Part::reasoning(self.reasoning));
        }
        if !self.text.is_empty() {
            parts.push(Part::Text { text: self.text });
        }
        let has_calls = !self.calls.is_empty();
        for (index, call) in self.calls {
            parts.push(Part::ToolCall {
                id: if call.id.is_empty() {
                    format!("call_{index}")
                } else {
                    call.id
                },
                name: call.name,
                arguments: parse_arguments(call.arguments),
            });
        }
        let stop = match reason.as_str() {
            // Some servers say "stop" even when they called tools.
            "stop" if has_calls => StopReason::ToolUse,
            "stop" => StopReason::EndTurn,
            "tool_calls" | "function_call" => StopReason::ToolUse,
            "length" => StopReason::MaxTokens,
            other => StopReason::Other(other.to_string()),
        };
        Ok(ChatResponse {
            parts,
            stop,
            usage: self.usage,
        })
    }
}

/// Empty arguments mean none (`{}`); invalid JSON is kept as a string (see module doc).
fn parse_arguments(raw: String) -> Value {
    if raw.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(&raw).unwrap_or(Value::String(raw))
}

/// llama.cpp's `timings`: `prompt_n` tokens read (its cache excluded) in `prompt_ms`,
/// `predicted_n` written in `predicted_ms`.
fn decode_timings(timings: &Value) -> Option<Sample> {
    let count = |key: &str| timings.get(key).and_then(Value::as_u64);
    let millis = |key: &str| {
        let ms = timings.get(key).and_then(Value::as_f64)?;
        (ms.is_finite() && ms >= 0.0).then(|| std::time::Duration::from_secs_f64(ms / 1000.0))
    };
    Some(Sample {
        prompt_tokens: count("prompt_n")?,
        reading: millis("prompt_ms")?,
        output_tokens: count("predicted_n")?,
        writing: millis("predicted_ms")?,
    })
}

fn decode_usage(usage: &Value) -> Usage {
    let number = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let prompt = number(usage.get("prompt_tokens"));
    let cached = usage
        .pointer("/prompt_tokens_details/cached_tokens")
        .or_else(|| usage.get("prompt_cache_hit_tokens")); // DeepSeek
    let cached = number(cached);
    Usage {
        input_tokens: prompt.saturating_sub(cached),
        output_tokens: number(usage.get("completion_tokens")),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

#[cfg(test)]
#[path = "openai_tests.rs"]
mod tests;
