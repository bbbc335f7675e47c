//! The `/_fake/*` control routes, so another process (a test driving the real `pincer`
//! binary) can inject messages, script faults and read what the bot did. The JSON shapes
//! are listed in the module doc of `telegram`.

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};

use super::fault::Fault;
use super::incoming::{self, Incoming};
use super::record::{CallJson, Sent};
use super::server::App;

/// How long after answering `POST /_fake/outage` the fake goes down, so the answer
/// reaches the caller first.
const OUTAGE_DELAY: Duration = Duration::from_millis(100);

/// The JSON form of `Incoming`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IncomingJson {
    user_id: i64,
    chat_id: Option<i64>,
    chat_type: Option<String>,
    first_name: Option<String>,
    username: Option<String>,
    title: Option<String>,
    #[serde(default)]
    text: String,
    thread_id: Option<i64>,
    reply_to: Option<i64>,
    #[serde(default)]
    reply_to_bot: bool,
    #[serde(default)]
    mention: bool,
    #[serde(default)]
    command: bool,
    photo: Option<FileJson>,
    document: Option<FileJson>,
    voice: Option<FileJson>,
    audio: Option<FileJson>,
}

/// A file's bytes as `base64` or as `text`; documents also need a `name`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileJson {
    name: Option<String>,
    base64: Option<String>,
    text: Option<String>,
}

impl FileJson {
    fn bytes(&self) -> Result<Vec<u8>, String> {
        match (&self.base64, &self.text) {
            (Some(encoded), _) => base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| format!("a file's base64 does not decode: {e}")),
            (None, Some(text)) => Ok(text.clone().into_bytes()),
            (None, None) => Err("a file needs \"base64\" or \"text\"".into()),
        }
    }
}

impl IncomingJson {
    fn build(self) -> Result<Incoming, String> {
        let chat_id = self.chat_id.unwrap_or(self.user_id);
        let group = match self.chat_type.as_deref() {
            None => chat_id < 0,
            Some("private") => false,
            Some("supergroup") => true,
            Some(other) => {
                return Err(format!(
                    "chat_type {other:?}: use \"private\" or \"supergroup\""
                ));
            }
        };
        let mut msg = if group {
            Incoming::group(chat_id, self.user_id, &self.text)
        } else {
            Incoming::dm(self.user_id, &self.text)
        };
        if self.first_name.is_some() || self.username.is_some() {
            let first_name = self
                .first_name
                .unwrap_or_else(|| format!("User{}", self.user_id));
            msg = msg.from(self.user_id, &first_name, self.username.as_deref());
        }
        if let Some(title) = &self.title {
            msg = msg.titled(title);
        }
        if let Some(thread) = self.thread_id {
            msg = msg.in_topic(thread);
        }
        if let Some(replied) = self.reply_to {
            msg = msg.replying_to(replied, self.reply_to_bot);
        }
        if self.mention {
            msg = msg.mentioning_bot();
        }
        if self.command {
            msg = msg.command();
        }
        if let Some(photo) = &self.photo {
            msg = msg.with_photo(photo.bytes()?);
        }
        if let Some(document) = &self.document {
            let name = document.name.as_deref().unwrap_or("file");
            msg = msg.with_document(name, document.bytes()?);
        }
        if let Some(voice) = &self.voice {
            msg = msg.with_voice(voice.bytes()?);
        }
        if let Some(audio) = &self.audio {
            let name = audio.name.as_deref().unwrap_or("audio.mp3");
            msg = msg.with_audio(name, audio.bytes()?);
        }
        Ok(msg)
    }
}

fn bad(message: String) -> Response {
    (StatusCode::BAD_REQUEST, message).into_response()
}

/// Queues one incoming message; answers `{"message_id":N,"update_id":N}`.
pub(crate) async fn inject(State(app): State<App>, body: Bytes) -> Response {
    let parsed = serde_json::from_slice::<IncomingJson>(&body).map_err(|e| {
        format!("expected an incoming message such as {{\"user_id\":42,\"text\":\"hi\"}}: {e}")
    });
    match parsed.and_then(IncomingJson::build) {
        Ok(msg) => {
            let (message_id, update_id) = app.shared.update(|inner| incoming::inject(inner, msg));
            Json(json!({"message_id": message_id, "update_id": update_id})).into_response()
        }
        Err(message) => bad(message),
    }
}

/// Every message the bot sent or edited, oldest first.
pub(crate) async fn sent(State(app): State<App>) -> Json<Vec<Sent>> {
    Json(app.shared.read(|inner| inner.sent.clone()))
}

/// Every API call, oldest first.
pub(crate) async fn calls(State(app): State<App>) -> Json<Vec<CallJson>> {
    let started = app.shared.started;
    let calls = app.shared.read(|inner| {
        inner
            .calls
            .iter()
            .map(|call| CallJson::new(call, started))
            .collect()
    });
    Json(calls)
}

/// Every file the bot sent, oldest first, its bytes in `base64`.
pub(crate) async fn files(State(app): State<App>) -> Json<Vec<Value>> {
    let files = app.shared.read(|inner| {
        inner
            .sent_files
            .iter()
            .map(|f| {
                json!({
                    "kind": f.kind,
                    "chat_id": f.chat_id,
                    "message_id": f.message_id,
                    "message_thread_id": f.message_thread_id,
                    "file_name": f.file_name,
                    "size": f.bytes.len(),
                    "caption": f.caption,
                    "base64": base64::engine::general_purpose::STANDARD.encode(&f.bytes),
                })
            })
            .collect()
    });
    Json(files)
}

/// Every reaction the bot set, oldest first.
pub(crate) async fn reactions(State(app): State<App>) -> Json<Vec<Value>> {
    let reactions = app.shared.read(|inner| {
        inner
            .reactions
            .iter()
            .map(|(chat_id, message_id, emoji)| {
                json!({"chat_id": chat_id, "message_id": message_id, "emoji": emoji})
            })
            .collect()
    });
    Json(reactions)
}

/// `{"confirmed_offset":N,"pending":N}`.
pub(crate) async fn updates(State(app): State<App>) -> Json<Value> {
    let (confirmed, pending) = app
        .shared
        .read(|inner| (inner.updates.confirmed_offset(), inner.updates.pending()));
    Json(json!({"confirmed_offset": confirmed, "pending": pending}))
}

#[derive(Deserialize)]
struct FailJson {
    method: String,
    fault: Fault,
}

/// Queues a fault for the next call of a method.
pub(crate) async fn fail(State(app): State<App>, body: Bytes) -> Response {
    match serde_json::from_slice::<FailJson>(&body) {
        Ok(FailJson { method, fault }) => {
            let key = method.to_ascii_lowercase();
            app.shared
                .update(|inner| inner.faults.entry(key).or_default().push_back(fault));
            StatusCode::NO_CONTENT.into_response()
        }
        Err(e) => bad(format!(
            "expected {{\"method\":\"sendMessage\",\"fault\":\"conflict\"}}: {e}"
        )),
    }
}

#[derive(Deserialize)]
struct OnJson {
    on: bool,
}

pub(crate) async fn reject_html(State(app): State<App>, body: Bytes) -> Response {
    match serde_json::from_slice::<OnJson>(&body) {
        Ok(OnJson { on }) => {
            app.shared.update(|inner| inner.reject_html = on);
            StatusCode::NO_CONTENT.into_response()
        }
        Err(e) => bad(format!("expected {{\"on\":true}}: {e}")),
    }
}

/// The held (or next) `getUpdates` is never answered.
pub(crate) async fn stall(State(app): State<App>) -> Response {
    app.shared.update(|inner| inner.stalls += 1);
    StatusCode::NO_CONTENT.into_response()
}

#[derive(Deserialize)]
struct OutageJson {
    ms: u64,
}

/// Answers 202, then goes down for `ms` milliseconds.
pub(crate) async fn outage(State(app): State<App>, body: Bytes) -> Response {
    match serde_json::from_slice::<OutageJson>(&body) {
        Ok(OutageJson { ms }) => {
            tokio::spawn(async move {
                tokio::time::sleep(OUTAGE_DELAY).await;
                app.listener.outage(Duration::from_millis(ms)).await;
            });
            StatusCode::ACCEPTED.into_response()
        }
        Err(e) => bad(format!("expected {{\"ms\":2000}}: {e}")),
    }
}
