//! The web chat: the owner talks to the assistant in the conversation `web:dm:owner`.
//! `POST /api/chat` takes an AI SDK `useChat` request (its last user message's text),
//! puts it on the bus like any channel's message, and streams the turn back as AI SDK
//! v6 UI message chunks over SSE (`data: {json}` events, then `data: [DONE]`), with the
//! `x-vercel-ai-ui-message-stream: v1` header: the panel's script and any `useChat`
//! client read the same endpoint. Pincer's own `Retract` goes out as a transient
//! `data-retract` chunk; usage rides in `finish`'s `messageMetadata`.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use axum::Extension;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream};
use maud::html;
use pincer_channels::chunk::{Chunk, FinishReason};
use pincer_channels::{ChatKind, InboundMessage, OutboundBody, OutboundMessage, Sender};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::WebState;
use super::auth::Login;
use super::layout;

/// The web chat's channel name: the first part of its session key.
pub const CHANNEL: &str = "web";
/// The one chat on it: the owner's.
pub const CHAT: &str = "owner";
/// Outbound messages a slow browser may fall behind by before it is cut off.
const BACKLOG: usize = 1024;

/// Hands the web chat's outbound messages to the browsers streaming it.
#[derive(Default)]
pub struct WebChat {
    streams: Mutex<Vec<mpsc::Sender<OutboundMessage>>>,
}

impl WebChat {
    fn subscribe(&self) -> mpsc::Receiver<OutboundMessage> {
        let (tx, rx) = mpsc::channel(BACKLOG);
        if let Ok(mut streams) = self.streams.lock() {
            streams.push(tx);
        }
        rx
    }

    /// Give `message` to every open stream; a closed or hopelessly behind one is dropped.
    pub fn deliver(&self, message: OutboundMessage) {
        let began = std::time::Instant::now();
        if let OutboundBody::File { sent, .. } = &message.body {
            sent.fire(Ok(CHANNEL.into()));
        }
        let seen = message.body.complete_text().is_some()
            || matches!(
                message.body,
                OutboundBody::Notice(_) | OutboundBody::Error(_) | OutboundBody::File { .. }
            );
        let mut shown = false;
        if let Ok(mut streams) = self.streams.lock() {
            streams.retain(|tx| tx.try_send(message.clone()).is_ok());
            shown = !streams.is_empty();
        }
        if seen {
            // Nobody had the chat open: the reply is stored, but no one saw it go out.
            crate::metrics::message_out(CHANNEL, shown.then(|| began.elapsed()));
        }
    }
}

/// The message the owner typed, as the bus carries it.
pub fn message(text: String) -> InboundMessage {
    let now = crate::clock::now();
    let id = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    InboundMessage {
        channel: CHANNEL.into(),
        account: "default".into(),
        chat_id: CHAT.into(),
        chat_kind: ChatKind::Dm,
        thread_id: None,
        sender: Sender {
            raw_id: CHAT.into(),
            canonical: format!("{CHANNEL}:{CHAT}"),
            display_name: "owner".into(),
        },
        message_id: format!("web-{id}"),
        text,
        media: Vec::new(),
        reply_to: None,
        addressed: true,
        received_at: now,
        ack: None,
        deliver_to: None,
        scheduled: None,
        done: None,
    }
}

/// `GET /chat`.
pub async fn page(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
) -> Response {
    let key = format!("{CHANNEL}:dm:{CHAT}");
    let session = state.agent.store().find_session(&key).await.ok();
    let body = html! {
        p.muted { "You talk as the owner, in the conversation " code { (key) } "."
            @if let Some(id) = session { " " a href=(format!("/conversations/{id}")) { "Its transcript" } } }
        div #chat-log aria-live="polite" {}
        form #chat-form {
            textarea name="text" placeholder="Message Pincer…" aria-label="Message" required {}
            button.primary type="submit" { "Send" }
        }
    };
    layout::page("Chat", "/chat", &login.csrf, body)
}

/// `POST /api/chat`: a `useChat` request in, the turn out as SSE.
pub async fn stream(State(state): State<Arc<WebState>>, body: axum::body::Bytes) -> Response {
    let text = match super::request::new_text(&body) {
        Ok(text) => text,
        Err(why) => return (StatusCode::BAD_REQUEST, why).into_response(),
    };
    let rx = state.chat.subscribe();
    if state.inbound.send(message(text)).await.is_err() {
        return (StatusCode::SERVICE_UNAVAILABLE, "Pincer is shutting down").into_response();
    }
    let events = events(rx);
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (
                header::HeaderName::from_static("x-vercel-ai-ui-message-stream"),
                "v1",
            ),
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        axum::body::Body::from_stream(events),
    )
        .into_response()
}

/// `GET /api/chat/{id}/stream`, where `useChat` asks to resume a stream after a reload:
/// 204, nothing to resume (a response is not kept for a second reader; the whole reply
/// is in the conversation's transcript).
pub async fn resume() -> StatusCode {
    StatusCode::NO_CONTENT
}

/// SSE events until the answer ends.
fn events(
    rx: mpsc::Receiver<OutboundMessage>,
) -> impl Stream<Item = Result<String, Infallible>> + Send {
    stream::unfold(Some((rx, Wire::default())), |state| async move {
        let (mut rx, mut wire) = state?;
        let message = rx.recv().await?;
        let end = message.body.is_end();
        let mut out = String::new();
        for chunk in wire.chunks(message.body) {
            out.push_str(&format!("data: {chunk}\n\n"));
        }
        if end {
            out.push_str("data: [DONE]\n\n");
        }
        Some((Ok(out), (!end).then_some((rx, wire))))
    })
}

/// Turns outbound messages into wire chunks, opening the message when the first one
/// is not a turn's `start` (a command's answer).
#[derive(Default, Clone)]
pub struct Wire {
    started: bool,
    texts: u32,
}

impl Wire {
    pub fn chunks(&mut self, body: OutboundBody) -> Vec<Value> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            if !matches!(body, OutboundBody::Chunk(Chunk::Start { .. })) {
                out.push(json!({"type": "start"}));
            }
        }
        match body {
            OutboundBody::Chunk(chunk) => out.extend(chunk_json(&chunk)),
            OutboundBody::Text(text) | OutboundBody::Notice(text) => {
                self.texts += 1;
                let id = format!("note-{}", self.texts);
                out.push(json!({"type": "text-start", "id": id}));
                out.push(json!({"type": "text-delta", "id": id, "delta": text}));
                out.push(json!({"type": "text-end", "id": id}));
            }
            OutboundBody::Error(text) => out.push(json!({"type": "error", "errorText": text})),
            OutboundBody::Done => out.push(json!({"type": "finish", "finishReason": "stop"})),
            OutboundBody::File { media, .. } => {
                self.texts += 1;
                let id = format!("note-{}", self.texts);
                let caption = media.caption.as_deref().unwrap_or_default();
                let line = format!(
                    "[file] {} ({} bytes) {caption}",
                    media.file_name,
                    media.bytes.len()
                );
                out.push(json!({"type": "text-start", "id": id}));
                out.push(json!({"type": "text-delta", "id": id, "delta": line.trim_end()}));
                out.push(json!({"type": "text-end", "id": id}));
            }
            OutboundBody::React { .. } => {}
        }
        out
    }
}

/// One chunk on the AI SDK v6 wire (camelCase fields, only the schema's keys).
pub fn chunk_json(chunk: &Chunk) -> Option<Value> {
    Some(match chunk {
        Chunk::Start { message_id } => json!({"type": "start", "messageId": message_id}),
        Chunk::StartStep => json!({"type": "start-step"}),
        Chunk::TextStart { id } => json!({"type": "text-start", "id": id}),
        Chunk::TextDelta { id, delta } => json!({"type": "text-delta", "id": id, "delta": delta}),
        Chunk::TextEnd { id, .. } => json!({"type": "text-end", "id": id}),
        Chunk::ReasoningStart { id } => json!({"type": "reasoning-start", "id": id}),
        Chunk::ReasoningDelta { id, delta } => {
            json!({"type": "reasoning-delta", "id": id, "delta": delta})
        }
        Chunk::ReasoningEnd { id } => json!({"type": "reasoning-end", "id": id}),
        Chunk::ToolInputStart {
            tool_call_id,
            tool_name,
        } => json!({"type": "tool-input-start", "toolCallId": tool_call_id, "toolName": tool_name}),
        Chunk::ToolInputAvailable {
            tool_call_id,
            tool_name,
            input,
        } => json!({"type": "tool-input-available", "toolCallId": tool_call_id,
                     "toolName": tool_name, "input": input}),
        Chunk::ToolOutputAvailable {
            tool_call_id,
            output,
        } => json!({"type": "tool-output-available", "toolCallId": tool_call_id, "output": output}),
        Chunk::ToolOutputError {
            tool_call_id,
            error_text,
        } => {
            json!({"type": "tool-output-error", "toolCallId": tool_call_id, "errorText": error_text})
        }
        Chunk::FinishStep => json!({"type": "finish-step"}),
        Chunk::Retract => json!({"type": "data-retract", "data": null, "transient": true}),
        Chunk::Finish { reason, usage } => {
            let reason = match reason {
                FinishReason::Stop => "stop",
                FinishReason::Length => "length",
                FinishReason::Error => "error",
                FinishReason::Aborted => "other",
            };
            json!({"type": "finish", "finishReason": reason, "messageMetadata": {
                "usage": {
                    "inputTokens": usage.input_tokens,
                    "outputTokens": usage.output_tokens,
                    "cacheReadTokens": usage.cache_read_tokens,
                    "cacheWriteTokens": usage.cache_write_tokens,
                    "costUsd": usage.cost_usd,
                },
                "model": usage.model,
            }})
        }
        Chunk::Error { error_text } => json!({"type": "error", "errorText": error_text}),
    })
}
