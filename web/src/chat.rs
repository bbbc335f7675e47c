//! The web chat: the owner talks to the assistant in the conversation `web:dm:owner`.
//! `POST /api/chat` takes an AI SDK `useChat` request (its last message, the user's new
//! one, as text), puts it on the bus like any channel's message, and streams what answers
//! *that* message back as AI SDK v6 UI message chunks over SSE (`data: {json}` events,
//! then `data: [DONE]`), with the `x-vercel-ai-ui-message-stream: v1` header: the panel's
//! script and any `useChat` client read the same endpoint. Requests may overlap: each
//! response carries its own message's answer only (`relay`), well-formed from `start` to
//! `finish` (`wire`). A message the dispatcher takes into a turn already running (steer
//! mode), or merges into another's, gets a response that says so and ends. Pincer's own
//! `Retract` goes out as a transient `data-retract` chunk; usage rides in `finish`'s
//! `messageMetadata`.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use axum::Extension;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use maud::html;
use pincer_channels::{
    ChatKind, Done, Inbound, InboundMessage, OutboundBody, OutboundMessage, Sender, Target,
    TurnFailed,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::WebState;
use super::auth::Login;
use super::layout;
use super::relay::Opened;
use super::wire::Wire;

/// The web chat's channel name: the first part of its session key. Defined with the
/// origins, which tell the web chat's owner apart from a chat platform's sender.
pub use pincer_core::access::WEB_CHANNEL as CHANNEL;
/// The one chat on it: the owner's.
pub(crate) const CHAT: &str = "owner";

/// The message the owner typed, as the bus carries it, with an id no other has (the
/// store drops a message whose id it has seen, and responses are routed by it).
pub(crate) fn message(text: String) -> InboundMessage {
    static SENT: AtomicU64 = AtomicU64::new(0);
    let now = pincer_core::clock::now();
    let at = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let n = SENT.fetch_add(1, Ordering::Relaxed);
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
        message_id: format!("web-{at}-{n}"),
        text,
        media: Vec::new(),
        reply_to: None,
        addressed: true,
        received_at: now,
        deliver_to: None,
        scheduled: None,
    }
}

/// `GET /chat`.
pub(crate) async fn page(
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

/// `POST /api/chat`: a `useChat` request in, the answer to its message out as SSE.
pub(crate) async fn stream(
    State(state): State<Arc<WebState>>,
    body: axum::body::Bytes,
) -> Response {
    let text = match super::request::new_text(&body) {
        Ok(text) => text,
        Err(why) => return (StatusCode::BAD_REQUEST, why.to_string()).into_response(),
    };
    let message = message(text);
    let (done, answered) = Done::pair();
    let id = message.message_id.clone();
    let (opened, rx) = state.chat.open(&id);
    if state
        .inbound
        .send(Inbound::answered(message, done))
        .await
        .is_err()
    {
        return (StatusCode::SERVICE_UNAVAILABLE, "Pincer is shutting down").into_response();
    }
    let answer = Answer {
        id,
        rx,
        answered: Some(answered),
        outcome: None,
        bus: state.agent.outbound().clone(),
        wire: Wire::default(),
        _opened: opened,
    };
    let events = stream::unfold(answer, |mut answer| async move {
        let events = answer.next().await?;
        Some((Ok::<_, Infallible>(events), answer))
    });
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
pub(crate) async fn resume() -> StatusCode {
    StatusCode::NO_CONTENT
}

/// What a response says when its message was answered in another message's turn (taken
/// into a turn already running, or merged with a later message).
const TAKEN_IN: &str = "Answered together with your other message, in its reply.";
/// The same, when that turn ended early (the reason follows).
const TAKEN_IN_ENDED: &str = "Taken into the reply to your other message, which ended early:";
/// What it says when it stops reaching its reader.
const CUT: &str = "This reply stopped reaching you (the page fell behind, or Pincer is stopping); the whole reply is in the conversation's transcript.";
/// What it says when Pincer dropped the message unanswered.
const UNANSWERED: &str =
    "Pincer stopped before answering this message (is it shutting down?); send it again.";

/// One request's response while it streams.
struct Answer {
    /// The message it answers.
    id: String,
    /// What answers the message, from `relay`.
    rx: mpsc::Receiver<OutboundMessage>,
    /// Fires when the turn that took the message in has ended (or the message was
    /// dropped unanswered); `None` once heard.
    answered: Option<oneshot::Receiver<Result<(), TurnFailed>>>,
    /// What `answered` said: how that turn ended.
    outcome: Option<Result<(), Option<String>>>,
    /// The outbound bus, for the marker that ends a response with no turn of its own.
    bus: mpsc::Sender<OutboundMessage>,
    wire: Wire,
    /// The route to this response, closed with it.
    _opened: Opened,
}

impl Answer {
    /// The SSE events to send next; `None` once the response has ended.
    async fn next(&mut self) -> Option<String> {
        if self.wire.finished() {
            return None;
        }
        loop {
            tokio::select! {
                message = self.rx.recv() => {
                    let chunks = match message {
                        Some(message) => self.chunks(message.body),
                        None => self.wire.cut(CUT),
                    };
                    return Some(events(chunks, self.wire.finished()));
                }
                outcome = heard(&mut self.answered) => {
                    self.answered = None;
                    self.outcome = Some(match outcome {
                        Ok(ended) => ended.map_err(|failed| Some(failed.0)),
                        Err(_) => Err(None),
                    });
                    // After everything the turn said: the bus keeps its order, so the
                    // marker comes back behind the turn's `finish` (when the turn was
                    // this message's own, the response has ended by then).
                    let marker = OutboundMessage {
                        target: Target::chat(CHANNEL, CHAT, None),
                        body: OutboundBody::Done,
                        reply_to: Some(self.id.clone()),
                        entry: None,
                    };
                    if self.bus.send(marker).await.is_err() {
                        return Some(events(self.wire.cut(UNANSWERED), true));
                    }
                }
            }
        }
    }

    /// A message's chunks; a response ending with nothing of its own says why.
    fn chunks(&mut self, body: OutboundBody) -> Vec<Value> {
        let mut chunks = Vec::new();
        if body == OutboundBody::Done && !self.wire.answered() {
            let why = match self.outcome.take() {
                Some(Ok(())) => OutboundBody::Notice(TAKEN_IN.into()),
                Some(Err(Some(why))) => OutboundBody::Notice(format!("{TAKEN_IN_ENDED} {why}")),
                Some(Err(None)) | None => OutboundBody::Error(UNANSWERED.into()),
            };
            chunks = self.wire.chunks(why);
        }
        chunks.extend(self.wire.chunks(body));
        chunks
    }
}

/// The outcome `answered` brings, or never once it has been heard.
async fn heard(
    answered: &mut Option<oneshot::Receiver<Result<(), TurnFailed>>>,
) -> Result<Result<(), TurnFailed>, oneshot::error::RecvError> {
    match answered {
        Some(rx) => rx.await,
        None => std::future::pending().await,
    }
}

/// `chunks` as SSE events, and the stream's end after them when `end`.
fn events(chunks: Vec<Value>, end: bool) -> String {
    let mut out = String::new();
    for chunk in chunks {
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    if end {
        out.push_str("data: [DONE]\n\n");
    }
    out
}
