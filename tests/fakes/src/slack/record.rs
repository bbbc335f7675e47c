//! What the fake remembers: every API call, every message the bot posted (with its
//! edits applied), every envelope sent over the socket and its acknowledgement, and
//! every file uploaded.

use std::time::{Duration, Instant};

use serde_json::Value;

/// One Web API call as received (params from the query, JSON or form body).
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub params: Value,
    pub at: Instant,
}

/// A message in a channel: the bot's (posted through the API) or a user's (injected).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    pub channel: String,
    pub ts: String,
    /// The text now, after edits.
    pub text: String,
    pub thread_ts: Option<String>,
    /// The blocks now, as sent (`None` when the message has none).
    pub blocks: Option<Value>,
    /// How many times `chat.update` changed it.
    pub edits: usize,
    /// Every text it showed, the first one and each edit, in order.
    pub history: Vec<String>,
    /// Who wrote it (`UBOT` for the bot).
    pub user: String,
    /// A `chat.postEphemeral` message; `user` is then the one person who sees it.
    pub ephemeral: bool,
    /// When it was posted, or changed last.
    pub at: Instant,
}

impl Posted {
    /// Whether it carries buttons (an `actions` block).
    pub fn has_buttons(&self) -> bool {
        self.buttons().next().is_some()
    }

    /// The buttons' `value`s.
    pub fn buttons(&self) -> impl Iterator<Item = &Value> {
        self.blocks
            .iter()
            .filter_map(Value::as_array)
            .flatten()
            .filter(|b| b["type"] == "actions")
            .filter_map(|b| b["elements"].as_array())
            .flatten()
            .filter(|e| e["type"] == "button")
    }
}

/// One envelope sent over the socket and what became of it.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub envelope_id: String,
    /// `events_api`, `interactive`, `slash_commands`.
    pub kind: String,
    pub payload: Value,
    pub retry_attempt: u32,
    /// The connection it was last sent on and when.
    pub connection: Option<u64>,
    pub sent_at: Option<Instant>,
    /// When it was acknowledged (the first ack), and how many acks came.
    pub acked_at: Option<Instant>,
    pub acks: usize,
}

impl Delivery {
    /// How long the ack took after the (last) sending.
    pub fn ack_latency(&self) -> Option<Duration> {
        Some(self.acked_at?.saturating_duration_since(self.sent_at?))
    }
}

/// A file the bot uploaded: `files.getUploadURLExternal` names it, a POST to the upload
/// URL brings its bytes, `files.completeUploadExternal` shares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upload {
    pub file_id: String,
    /// `filename` as given to `files.getUploadURLExternal`.
    pub file_name: String,
    /// The bytes posted to the upload URL (a raw body, or a multipart form's file part).
    pub bytes: Vec<u8>,
    /// The posted file's `Content-Type`, if it had one.
    pub content_type: Option<String>,
    /// Set by `files.completeUploadExternal`: its `channel_id`.
    pub channel: Option<String>,
    pub thread_ts: Option<String>,
    /// The file's `title` in `files.completeUploadExternal`.
    pub title: Option<String>,
    /// `initial_comment`.
    pub comment: Option<String>,
    pub completed: bool,
}
