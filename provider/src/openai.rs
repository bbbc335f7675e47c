//! The OpenAI-compatible chat-completions wire format (OpenAI, OpenRouter, Groq,
//! DeepSeek, Ollama, vLLM, LM Studio): encoding a `ChatRequest`, decoding the streamed
//! chunks into events and a `ChatResponse`. The JSON's shapes are the types in `wire`;
//! HTTP plumbing lives in `transport`.
//!
//! Tool-call arguments are parsed once, when the stream ends. Arguments that are not
//! valid JSON are kept as `Value::String(raw)` so the tool pipeline can tell the model
//! its arguments were broken; the encoder sends such a string back verbatim. llama.cpp's
//! own `timings` (prompt and output tokens and the milliseconds each took) are read as
//! the call's measured speeds.

mod wire;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

use super::error::{self, ProviderError};
use super::pace::Sample;
use super::transport::{self, Call, Flow, Transport};
use super::types::{ChatRequest, ChatResponse, Part, Role, StopReason, StreamEvent, Usage};
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

/// The body of one streamed chat-completions call; `max_tokens` 0 sends none.
pub(crate) fn encode_request(
    req: &ChatRequest,
    with_usage: bool,
    max_tokens: u32,
) -> wire::Request<'_> {
    let mut messages = Vec::new();
    let system = [req.system_stable.as_str(), req.system_volatile.as_str()]
        .into_iter()
        .filter(|half| !half.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    if !system.is_empty() {
        messages.push(wire::Message::System { content: system });
    }
    for message in &req.messages {
        match message.role {
            Role::User => encode_user(&message.parts, &mut messages),
            Role::Assistant => encode_assistant(&message.parts, &mut messages),
        }
    }
    wire::Request {
        model: &req.model,
        messages,
        stream: true,
        stream_options: with_usage.then_some(wire::StreamOptions {
            include_usage: true,
        }),
        max_tokens: (max_tokens > 0).then_some(max_tokens),
        tools: (!req.tools.is_empty()).then(|| req.tools.iter().map(wire::Tool::new).collect()),
    }
}

/// Tool results become `role: "tool"` messages ahead of the user's own text. A message
/// with images is an array of parts: the text, then each image as a data URL.
fn encode_user<'a>(parts: &'a [Part], out: &mut Vec<wire::Message<'a>>) {
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
                    Cow::Owned(format!("Error: {content}"))
                } else {
                    Cow::Borrowed(content.as_str())
                };
                out.push(wire::Message::Tool {
                    tool_call_id: call_id,
                    content,
                });
            }
            Part::Text { text: t } => text.push(t.as_str()),
            Part::Image {
                data: Some(data), ..
            } => images.push(wire::ContentPart::ImageUrl {
                image_url: wire::ImageUrl {
                    url: format!("data:{};base64,{}", data.mime, data.base64),
                },
            }),
            Part::Image { path, data: None } => placeholders.push(Part::placeholder(path)),
            Part::Reasoning { .. } | Part::ToolCall { .. } => {}
        }
    }
    text.extend(placeholders.iter().map(String::as_str));
    if images.is_empty() {
        if !text.is_empty() {
            out.push(wire::Message::User {
                content: wire::UserContent::Text(text.join("\n")),
            });
        }
        return;
    }
    let mut content = Vec::with_capacity(images.len() + 1);
    if !text.is_empty() {
        content.push(wire::ContentPart::Text {
            text: text.join("\n"),
        });
    }
    content.extend(images);
    out.push(wire::Message::User {
        content: wire::UserContent::Parts(content),
    });
}

fn encode_assistant<'a>(parts: &'a [Part], out: &mut Vec<wire::Message<'a>>) {
    let mut text = Vec::new();
    let mut tool_calls = Vec::new();
    for part in parts {
        match part {
            Part::Text { text: t } => text.push(t.as_str()),
            Part::ToolCall {
                id,
                name,
                arguments,
            } => tool_calls.push(wire::ToolCall {
                id,
                kind: wire::ToolKind::Function,
                function: wire::FunctionCall {
                    name,
                    arguments: match arguments {
                        Value::String(raw) => Cow::Borrowed(raw.as_str()),
                        other => Cow::Owned(other.to_string()),
                    },
                },
            }),
            // Reasoning is the model's own scratchpad: not sent back.
            Part::Reasoning { .. } | Part::ToolResult { .. } | Part::Image { .. } => {}
        }
    }
    if text.is_empty() && tool_calls.is_empty() {
        return;
    }
    out.push(wire::Message::Assistant {
        content: (!text.is_empty()).then(|| text.join("\n")),
        tool_calls,
    });
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
pub(crate) struct StreamDecoder {
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
    pub(crate) fn on_data(
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
        let chunk: wire::Chunk = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            // JSON, but not an object (a bare string, say): nothing in it to use.
            Err(e) if e.is_data() => return Ok(Flow::More),
            Err(e) => return Err(transport::malformed(data, &e)),
        };
        if let Some(error) = &chunk.error {
            return Err(error::classify_stream_error(error));
        }
        if let Some(usage) = &chunk.usage {
            self.usage = decode_usage(usage);
        }
        if let Some(timings) = chunk.timings.as_ref().and_then(decode_timings) {
            self.timings = Some(timings);
        }
        for choice in &chunk.choices {
            if let Some(delta) = &choice.delta {
                self.on_delta(delta, on_event);
            }
            if let Some(reason) = &choice.finish_reason {
                self.finish_reason = Some(reason.clone());
            }
        }
        Ok(Flow::More)
    }

    fn on_delta(
        &mut self,
        delta: &wire::Delta,
        on_event: &mut (dyn for<'a> FnMut(StreamEvent<'a>) + Send),
    ) {
        // DeepSeek says `reasoning_content`, OpenRouter and Ollama say `reasoning`.
        if let Some(reasoning) =
            non_empty(&delta.reasoning_content).or_else(|| non_empty(&delta.reasoning))
        {
            self.reasoning.push_str(reasoning);
            on_event(StreamEvent::Reasoning(reasoning));
        }
        if let Some(text) = non_empty(&delta.content) {
            self.text.push_str(text);
            on_event(StreamEvent::Text(text));
        }
        for call in delta.tool_calls.iter().flatten() {
            let id = call.id.as_deref().unwrap_or_default();
            let index = match call.index {
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
            let function = call.function.as_ref();
            if let Some(name) = function.and_then(|f| non_empty(&f.name)) {
                let first = pending.name.is_empty();
                pending.name.push_str(name);
                if first {
                    on_event(StreamEvent::ToolCallStarted {
                        id: &pending.id,
                        name,
                    });
                }
            }
            if let Some(arguments) = function.and_then(|f| f.arguments.as_deref()) {
                pending.arguments.push_str(arguments);
            }
        }
    }

    /// The stream ended: assemble the reply, or say it was cut short.
    pub(crate) fn finish(self) -> Result<ChatResponse, ProviderError> {
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

/// A text field that says something.
fn non_empty(field: &Option<String>) -> Option<&str> {
    field.as_deref().filter(|s| !s.is_empty())
}

/// llama.cpp's `timings`, when it gave all four figures and its times are real.
fn decode_timings(timings: &wire::Timings) -> Option<Sample> {
    let millis = |ms: Option<f64>| {
        let ms = ms?;
        (ms.is_finite() && ms >= 0.0).then(|| std::time::Duration::from_secs_f64(ms / 1000.0))
    };
    Some(Sample {
        prompt_tokens: timings.prompt_n?,
        reading: millis(timings.prompt_ms)?,
        output_tokens: timings.predicted_n?,
        writing: millis(timings.predicted_ms)?,
    })
}

fn decode_usage(usage: &wire::Usage) -> Usage {
    let cached = usage
        .prompt_tokens_details
        .as_ref()
        .and_then(|details| details.cached_tokens)
        .or(usage.prompt_cache_hit_tokens) // DeepSeek
        .unwrap_or(0);
    Usage {
        input_tokens: usage.prompt_tokens.unwrap_or(0).saturating_sub(cached),
        output_tokens: usage.completion_tokens.unwrap_or(0),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

#[cfg(test)]
#[path = "openai_tests.rs"]
mod tests;
