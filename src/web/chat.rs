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
use pincer_channels::{ChatKind, InboundMessage, OutboundBody, OutboundMessage, Sender};
use tokio::sync::mpsc;

use super::WebState;
use super::auth::Login;
use super::layout;
use super::wire::Wire;

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

/// What a response says when it stops reaching its reader.
const CUT: &str = "This reply stopped reaching you (the page fell behind, or Pincer is stopping); the whole reply is in the conversation's transcript.";

/// SSE events until the answer ends; a stream cut before that still ends well-formed.
fn events(
    rx: mpsc::Receiver<OutboundMessage>,
) -> impl Stream<Item = Result<String, Infallible>> + Send {
    stream::unfold(Some((rx, Wire::default())), |state| async move {
        let (mut rx, mut wire) = state?;
        let chunks = match rx.recv().await {
            Some(message) => wire.chunks(message.body),
            None => wire.cut(CUT),
        };
        let end = wire.finished();
        let mut out = String::new();
        for chunk in chunks {
            out.push_str(&format!("data: {chunk}\n\n"));
        }
        if end {
            out.push_str("data: [DONE]\n\n");
        }
        Some((Ok(out), (!end).then_some((rx, wire))))
    })
}
