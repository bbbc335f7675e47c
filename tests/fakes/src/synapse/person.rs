//! `Person`: one registered Matrix user talking to Synapse over the real Client-Server
//! API, as their client would — rooms, messages (mentions, threads, replies, edits),
//! reactions, media — and a `/sync` loop (`sync`) recording what they see.
//!
//! Every call panics with what failed and Synapse's answer: this is test harness code,
//! and a failed call is a failed test.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::home::serial;
use super::media;
use super::sync::{self, Seen, Shared};

/// A path segment with everything but unreserved characters percent-encoded.
pub(crate) fn path_segment(id: &str) -> String {
    id.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One Matrix user; clones share the user's sync loop and log.
#[derive(Clone)]
pub struct Person {
    inner: Arc<Inner>,
}

struct Inner {
    /// Synapse's client API, `http://127.0.0.1:PORT` (never the proxy).
    base: String,
    user_id: String,
    token: String,
    client: reqwest::Client,
    shared: Shared,
    /// The sync loop, started on first use and stopped when the last clone is dropped.
    sync: OnceLock<SyncTask>,
}

struct SyncTask(tokio::task::AbortHandle);

impl Drop for SyncTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl std::fmt::Debug for Person {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Person")
            .field("user_id", &self.inner.user_id)
            .finish()
    }
}

impl Person {
    pub(crate) fn new(base: &str, user_id: &str, token: &str) -> Person {
        Person {
            inner: Arc::new(Inner {
                base: base.to_owned(),
                user_id: user_id.to_owned(),
                token: token.to_owned(),
                client: reqwest::Client::new(),
                shared: Shared::default(),
                sync: OnceLock::new(),
            }),
        }
    }

    /// `@name-n:localhost`.
    pub fn user_id(&self) -> &str {
        &self.inner.user_id
    }

    pub fn access_token(&self) -> &str {
        &self.inner.token
    }

    /// Join every room this person is invited to from now on (their sync loop does).
    pub fn accept_invites(&self) {
        self.inner.shared.auto_join.store(true, Ordering::Relaxed);
        self.start_sync();
    }

    /// Start the sync loop now (it starts by itself on the first `events`/`typing`).
    pub fn start_sync(&self) {
        self.inner.sync.get_or_init(|| {
            let task = tokio::spawn(sync::run(
                self.inner.client.clone(),
                self.inner.base.clone(),
                self.inner.token.clone(),
                self.inner.shared.clone(),
            ));
            SyncTask(task.abort_handle())
        });
    }

    /// Every timeline event this person's sync loop has seen in `room`, in order.
    pub fn events(&self, room: &str) -> Vec<Value> {
        self.seen(room).into_iter().map(|s| s.event).collect()
    }

    /// The `user_ids` of every `m.typing` event seen in `room`, in order.
    pub fn typing(&self, room: &str) -> Vec<Vec<String>> {
        self.start_sync();
        let log = self.inner.shared.read();
        log.rooms
            .get(room)
            .map(|r| r.typing.clone())
            .unwrap_or_default()
    }

    /// Rooms whose events this person's sync loop has seen.
    pub fn rooms(&self) -> Vec<String> {
        self.start_sync();
        self.inner.shared.read().rooms.keys().cloned().collect()
    }

    pub(crate) fn seen(&self, room: &str) -> Vec<Seen> {
        self.start_sync();
        let log = self.inner.shared.read();
        log.rooms
            .get(room)
            .map(|r| r.events.clone())
            .unwrap_or_default()
    }

    /// Every room's events this person has seen.
    pub(crate) fn seen_everywhere(&self) -> Vec<(String, Seen)> {
        self.start_sync();
        let log = self.inner.shared.read();
        log.rooms
            .iter()
            .flat_map(|(room, log)| log.events.iter().map(|s| (room.clone(), s.clone())))
            .collect()
    }

    /// A direct chat with `with` (invited with `is_direct`, `trusted_private_chat`).
    pub async fn create_dm(&self, with: &str) -> String {
        let body = json!({"is_direct": true, "invite": [with], "preset": "trusted_private_chat"});
        self.create(body).await
    }

    /// A private group room with `invite` invited.
    pub async fn create_room(&self, invite: &[&str]) -> String {
        self.create(json!({"preset": "private_chat", "invite": invite, "name": "a test room"}))
            .await
    }

    async fn create(&self, body: Value) -> String {
        let answer = self
            .call(Method::POST, "/_matrix/client/v3/createRoom", Some(body))
            .await;
        answer["room_id"].as_str().expect("a room_id").to_owned()
    }

    pub async fn invite(&self, room: &str, user: &str) {
        let path = format!("/_matrix/client/v3/rooms/{}/invite", path_segment(room));
        self.call(Method::POST, &path, Some(json!({"user_id": user})))
            .await;
    }

    pub async fn join(&self, room: &str) {
        let path = format!("/_matrix/client/v3/join/{}", path_segment(room));
        self.call(Method::POST, &path, Some(json!({}))).await;
    }

    pub async fn leave(&self, room: &str) {
        let path = format!("/_matrix/client/v3/rooms/{}/leave", path_segment(room));
        self.call(Method::POST, &path, Some(json!({}))).await;
    }

    /// Send an event of `kind` with `content`; returns its event id.
    pub async fn send_event(&self, room: &str, kind: &str, content: Value) -> String {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/send/{kind}/pincer-{}",
            path_segment(room),
            serial()
        );
        let answer = self.call(Method::PUT, &path, Some(content)).await;
        answer["event_id"].as_str().expect("an event_id").to_owned()
    }

    /// Send an `m.room.message` with `content`.
    pub async fn send_message(&self, room: &str, content: Value) -> String {
        self.send_event(room, "m.room.message", content).await
    }

    /// A text message; each user in `mentions` is named in the body (unless it already
    /// names them), linked in the HTML body and listed in `m.mentions`.
    pub async fn send_text(&self, room: &str, body: &str, mentions: &[&str]) -> String {
        self.send_message(room, text_content(body, mentions)).await
    }

    /// A text message in the thread under `root`.
    pub async fn send_thread(&self, room: &str, root: &str, body: &str) -> String {
        self.send_message(room, in_thread(text_content(body, &[]), root))
            .await
    }

    /// A text message replying to `in_reply_to`.
    pub async fn send_reply(&self, room: &str, in_reply_to: &str, body: &str) -> String {
        let mut content = text_content(body, &[]);
        content["m.relates_to"] = json!({"m.in_reply_to": {"event_id": in_reply_to}});
        self.send_message(room, content).await
    }

    /// Replace the text of `event` (this person's own message), as clients edit.
    pub async fn edit(&self, room: &str, event: &str, body: &str) -> String {
        let content = json!({
            "msgtype": "m.text", "body": format!("* {body}"),
            "m.new_content": {"msgtype": "m.text", "body": body},
            "m.relates_to": {"rel_type": "m.replace", "event_id": event},
        });
        self.send_message(room, content).await
    }

    /// React to `event` with `key` (an emoji); returns the reaction's event id.
    pub async fn react(&self, room: &str, event: &str, key: &str) -> String {
        let content =
            json!({"m.relates_to": {"rel_type": "m.annotation", "event_id": event, "key": key}});
        self.send_event(room, "m.reaction", content).await
    }

    /// Redact `event` (a reaction taken back, a message deleted).
    pub async fn redact(&self, room: &str, event: &str) -> String {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/redact/{}/pincer-{}",
            path_segment(room),
            path_segment(event),
            serial()
        );
        let answer = self.call(Method::PUT, &path, Some(json!({}))).await;
        answer["event_id"].as_str().expect("an event_id").to_owned()
    }

    /// Show (or stop showing) this person typing in `room`.
    pub async fn set_typing(&self, room: &str, typing: bool) {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/typing/{}",
            path_segment(room),
            path_segment(&self.inner.user_id)
        );
        let body = json!({"typing": typing, "timeout": 30_000});
        self.call(Method::PUT, &path, Some(body)).await;
    }

    /// Upload `bytes` to the media repository; returns the `mxc://` URI.
    pub async fn upload(&self, bytes: &[u8], mime: &str) -> String {
        let url = format!(
            "{}/_matrix/media/v3/upload?filename=upload",
            self.inner.base
        );
        let answer = self
            .inner
            .client
            .post(url)
            .bearer_auth(&self.inner.token)
            .header(reqwest::header::CONTENT_TYPE, mime)
            .body(bytes.to_vec())
            .send()
            .await;
        let answer = json_of("uploading media", answer).await;
        answer["content_uri"]
            .as_str()
            .expect("a content_uri")
            .to_owned()
    }

    /// An `m.image` of `bytes` (PNG, GIF or JPEG: its type and size read from them).
    pub async fn send_image(&self, room: &str, bytes: &[u8]) -> String {
        let (mime, size) = media::image_info(bytes);
        let url = self.upload(bytes, mime).await;
        let mut info = json!({"mimetype": mime, "size": bytes.len()});
        if let Some((w, h)) = size {
            info["w"] = json!(w);
            info["h"] = json!(h);
        }
        let content = json!({"msgtype": "m.image", "body": "image", "url": url, "info": info});
        self.send_message(room, content).await
    }

    /// A voice note: `m.audio` of Ogg Opus bytes marked as voice (MSC3245), with its
    /// length (MSC1767) read from the last Ogg page.
    pub async fn send_voice(&self, room: &str, ogg: &[u8]) -> String {
        let url = self.upload(ogg, "audio/ogg").await;
        let duration = media::ogg_duration_ms(ogg);
        let content = json!({
            "msgtype": "m.audio", "body": "Voice message", "url": url,
            "info": {"mimetype": "audio/ogg", "size": ogg.len(), "duration": duration},
            "org.matrix.msc1767.audio": {"duration": duration},
            "org.matrix.msc3245.voice": {},
        });
        self.send_message(room, content).await
    }

    /// The bytes behind an `mxc://server/id` URI (authenticated media).
    pub async fn download(&self, mxc: &str) -> Vec<u8> {
        let rest = mxc.strip_prefix("mxc://").unwrap_or(mxc);
        let url = format!(
            "{}/_matrix/client/v1/media/download/{rest}",
            self.inner.base
        );
        let answer = self
            .inner
            .client
            .get(url)
            .bearer_auth(&self.inner.token)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .unwrap_or_else(|e| panic!("downloading {mxc}: {e}"));
        answer.bytes().await.expect("the media's bytes").to_vec()
    }

    /// The user ids of `room`'s joined members.
    pub async fn joined_members(&self, room: &str) -> Vec<String> {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/joined_members",
            path_segment(room)
        );
        let answer = self.call(Method::GET, &path, None).await;
        answer["joined"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// `room`'s latest events (up to 1000), oldest first, read from the server's
    /// history (`/messages`), not from the sync loop.
    pub async fn messages(&self, room: &str) -> Vec<Value> {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/messages?dir=b&limit=1000",
            path_segment(room)
        );
        let answer = self.call(Method::GET, &path, None).await;
        let mut events = answer["chunk"].as_array().cloned().unwrap_or_default();
        events.reverse();
        events
    }

    /// One authenticated JSON call; panics with Synapse's answer when it fails.
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self
            .inner
            .client
            .request(method.clone(), format!("{}{path}", self.inner.base))
            .bearer_auth(&self.inner.token)
            .timeout(Duration::from_secs(30));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let what = format!("{} {method} {path}", self.inner.user_id);
        json_of(&what, request.send().await).await
    }
}

async fn json_of(what: &str, answer: reqwest::Result<reqwest::Response>) -> Value {
    let answer = answer.unwrap_or_else(|e| panic!("{what}: {e}"));
    let status = answer.status();
    let text = answer.text().await.unwrap_or_default();
    assert!(status.is_success(), "{what}: {status} {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: {e} in {text}"))
}

/// An `m.text` content mentioning `mentions` (see `Person::send_text`).
pub(crate) fn text_content(body: &str, mentions: &[&str]) -> Value {
    let mut plain = String::new();
    let mut html = String::new();
    for user in mentions.iter().filter(|u| !body.contains(**u)) {
        plain.push_str(&format!("{user} "));
        html.push_str(&format!(
            "<a href=\"https://matrix.to/#/{user}\">{user}</a> "
        ));
    }
    plain.push_str(body);
    html.push_str(&escape_html(body));
    let mut content = json!({"msgtype": "m.text", "body": plain});
    if !mentions.is_empty() {
        content["format"] = json!("org.matrix.custom.html");
        content["formatted_body"] = json!(html);
        content["m.mentions"] = json!({"user_ids": mentions});
    }
    content
}

/// `content` placed in the thread under `root` (with the reply fallback clients add).
pub(crate) fn in_thread(mut content: Value, root: &str) -> Value {
    content["m.relates_to"] = json!({
        "rel_type": "m.thread", "event_id": root,
        "is_falling_back": true, "m.in_reply_to": {"event_id": root},
    });
    content
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
