//! A recording pass-through between Pincer and the model server: every request goes on
//! unchanged and every answer comes back as it streams, and the tap keeps both, so a
//! test can see what Pincer sent and what the model really said (which may differ from
//! what Pincer showed the person: that difference is what the tests check).
//!
//! It can also hold a reply mid-stream (`hold_after`): the rest waits until the test
//! `release`s it, so a test can see that Pincer showed the first words while the model
//! was still answering, without timing anything.

use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::watch;

/// One request and its answer, as they passed.
#[derive(Debug, Clone)]
pub(super) struct Exchange {
    pub method: String,
    /// Path and query, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The request body as JSON (`Null` when it had none or was not JSON).
    pub request: Value,
    pub status: u16,
    /// The answer's body as received so far (SSE text for a streamed reply).
    pub answer: String,
    /// The whole answer went through (false while streaming, or when the reader left).
    pub finished: bool,
}

impl Exchange {
    pub(super) fn is_chat(&self) -> bool {
        self.path.ends_with("/chat/completions")
    }

    /// The reply text the server sent: the streamed `delta.content` pieces joined, or a
    /// whole answer's `message.content`.
    pub(super) fn content(&self) -> String {
        let mut text = String::new();
        for event in self.events() {
            let choice = &event["choices"][0];
            for piece in [&choice["delta"]["content"], &choice["message"]["content"]] {
                if let Some(piece) = piece.as_str() {
                    text.push_str(piece);
                }
            }
        }
        text
    }

    /// The server's token counts for this call (the last `usage` it sent).
    pub(super) fn usage(&self) -> Option<Value> {
        self.events()
            .filter_map(|event| event.get("usage").filter(|u| u.is_object()).cloned())
            .last()
    }

    /// The answer's JSON values: each SSE `data:` line, or the whole body.
    fn events(&self) -> impl Iterator<Item = Value> + '_ {
        let whole = serde_json::from_str::<Value>(&self.answer).ok();
        let lines = self
            .answer
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok());
        whole.into_iter().chain(lines)
    }

    /// The text of the request's last user message.
    pub(super) fn last_user_text(&self) -> String {
        self.messages()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(message_text)
            .unwrap_or_default()
    }

    /// The request's messages.
    pub(super) fn messages(&self) -> Vec<Value> {
        self.request["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// A message's text, whether its content is a string or a list of parts.
pub(super) fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

struct Shared {
    upstream: String,
    client: reqwest::Client,
    exchanges: Mutex<Vec<Exchange>>,
    /// Hold a reply once its text has this many non-blank characters (until released).
    hold_after: Mutex<Option<usize>>,
    /// Whether a reply is being held now.
    holding: watch::Sender<bool>,
    released: watch::Sender<bool>,
}

/// The tap, listening on 127.0.0.1; stops when dropped.
pub(super) struct Tap {
    port: u16,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Tap {
    /// A tap in front of `upstream` (`http://127.0.0.1:PORT`, no `/v1`).
    pub(super) async fn start(upstream: &str) -> Tap {
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_string(),
            client: reqwest::Client::new(),
            exchanges: Mutex::new(Vec::new()),
            hold_after: Mutex::new(None),
            holding: watch::channel(false).0,
            released: watch::channel(false).0,
        });
        let app = axum::Router::new()
            .fallback(forward)
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the tap");
        let port = listener.local_addr().expect("its address").port();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Tap { port, shared, task }
    }

    /// The base URL Pincer is given, as `pincer onboard --base-url` takes it.
    pub(super) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Everything that passed so far.
    pub(super) fn exchanges(&self) -> Vec<Exchange> {
        self.shared.exchanges.lock().expect("tap lock").clone()
    }

    /// The chat requests (model calls) so far.
    pub(super) fn chats(&self) -> Vec<Exchange> {
        self.exchanges()
            .into_iter()
            .filter(Exchange::is_chat)
            .collect()
    }

    /// Hold the next reply once `chars` non-blank characters of its text went through.
    pub(super) fn hold_after(&self, chars: usize) {
        *self.shared.hold_after.lock().expect("tap lock") = Some(chars);
    }

    /// Whether a reply is held now.
    pub(super) fn holding(&self) -> bool {
        *self.shared.holding.borrow()
    }

    /// Let the held reply go on; nothing is held after this.
    pub(super) fn release(&self) {
        *self.shared.hold_after.lock().expect("tap lock") = None;
        self.shared.released.send_replace(true);
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.release();
        self.task.abort();
    }
}

async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let method = request.method().clone();
    let path = request
        .uri()
        .path_and_query()
        .map_or("/".to_string(), ToString::to_string);
    let content_type = request.headers().get(header::CONTENT_TYPE).cloned();
    let body = axum::body::to_bytes(request.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    let mut upstream = shared
        .client
        .request(method.clone(), format!("{}{path}", shared.upstream))
        .body(body.clone());
    if let Some(content_type) = content_type {
        upstream = upstream.header(header::CONTENT_TYPE, content_type);
    }
    let answer = match upstream.send().await {
        Ok(answer) => answer,
        Err(err) => {
            return Response::builder()
                .status(StatusCode::BAD_GATEWAY)
                .body(Body::from(format!(
                    "the tap could not reach the model server: {err}"
                )))
                .unwrap_or_default();
        }
    };
    let index = {
        let mut exchanges = shared.exchanges.lock().expect("tap lock");
        exchanges.push(Exchange {
            method: method.to_string(),
            path,
            request: serde_json::from_slice(&body).unwrap_or(Value::Null),
            status: answer.status().as_u16(),
            answer: String::new(),
            finished: false,
        });
        exchanges.len() - 1
    };
    let status = answer.status();
    let content_type = answer
        .headers()
        .get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or(HeaderValue::from_static("application/json"));
    let chunks = answer.bytes_stream();
    let relayed = futures_util::stream::unfold(
        (chunks, shared, false),
        move |(mut chunks, shared, done)| async move {
            if done {
                return None;
            }
            shared.wait_if_held(index).await;
            match chunks.next().await {
                Some(Ok(bytes)) => {
                    shared.record(index, &bytes);
                    Some((Ok::<Bytes, reqwest::Error>(bytes), (chunks, shared, false)))
                }
                Some(Err(err)) => Some((Err(err), (chunks, shared, true))),
                None => {
                    shared.exchanges.lock().expect("tap lock")[index].finished = true;
                    None
                }
            }
        },
    );
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(Body::from_stream(relayed))
        .unwrap_or_default()
}

impl Shared {
    fn record(&self, index: usize, bytes: &Bytes) {
        self.exchanges.lock().expect("tap lock")[index]
            .answer
            .push_str(&String::from_utf8_lossy(bytes));
    }

    /// Before relaying more of reply `index`: wait while a hold applies to it.
    async fn wait_if_held(&self, index: usize) {
        let Some(chars) = *self.hold_after.lock().expect("tap lock") else {
            return;
        };
        let shown = {
            let exchanges = self.exchanges.lock().expect("tap lock");
            let content = exchanges[index].content();
            content.chars().filter(|c| !c.is_whitespace()).count()
        };
        if shown < chars {
            return;
        }
        self.holding.send_replace(true);
        let mut released = self.released.subscribe();
        let _ = released.wait_for(|released| *released).await;
        self.holding.send_replace(false);
    }
}
