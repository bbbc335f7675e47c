//! What the bot did, as the fake saw it: a `Call` per API request (refused ones too), a
//! `Sent` per message the bot sent or edited successfully, and a `SentFile` per file it
//! sent.
//!
//! Recording is passive: nothing here decides how to answer.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::attachment::MediaKind;

/// One API request as received.
#[derive(Debug, Clone)]
pub struct Call {
    /// The Bot API's camelCase name (`sendMessage`) when known, else the path's name.
    pub method: String,
    /// The parameters as one JSON object. Query, form and multipart values stay strings
    /// as sent, except the JSON-valued fields (`reply_parameters`, `reply_markup`,
    /// `entities`, `commands`, …) which are parsed; an uploaded file shows as
    /// `{"file_name": .., "size": N}` under the field that attached it.
    pub params: Value,
    pub at: Instant,
}

impl Call {
    /// One parameter (`Value::Null` if absent).
    pub fn param(&self, key: &str) -> &Value {
        &self.params[key]
    }

    /// A parameter as an integer, whether it came as a JSON number or a string.
    pub fn param_i64(&self, key: &str) -> Option<i64> {
        crate::telegram::params::as_i64(&self.params[key])
    }
}

/// The JSON shape `GET /_fake/calls` returns for one call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallJson {
    pub method: String,
    pub params: Value,
    /// Milliseconds since the fake started.
    pub at_ms: u64,
}

impl CallJson {
    pub(crate) fn new(call: &Call, started: Instant) -> CallJson {
        let at_ms = call.at.saturating_duration_since(started).as_millis();
        CallJson {
            method: call.method.clone(),
            params: call.params.clone(),
            at_ms: u64::try_from(at_ms).unwrap_or(u64::MAX),
        }
    }
}

/// A message the bot sent (`sendMessage`, `sendPhoto`, `sendDocument`, `sendVoice`,
/// `sendAudio`) or edited (`editMessageText`), in the order the fake accepted them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sent {
    /// The Bot API's name of the method, e.g. `sendMessage` or `editMessageText`.
    pub method: String,
    pub chat_id: i64,
    /// The new message's id, or the edited one's.
    pub message_id: i64,
    /// The text or caption exactly as the bot sent it (HTML tags and all); `""` if none.
    pub text: String,
    pub parse_mode: Option<String>,
    pub message_thread_id: Option<i64>,
    /// The message replied to (`reply_parameters.message_id` or `reply_to_message_id`).
    pub reply_to: Option<i64>,
    /// The uploaded file's name, for media sends.
    pub file_name: Option<String>,
    /// When the fake accepted it (in process only: `/_fake/sent` leaves it out, and a
    /// `Sent` read back from there has the time it was read).
    #[serde(skip, default = "Instant::now")]
    pub at: Instant,
}

/// A file the bot sent (`sendPhoto`, `sendDocument`, `sendVoice`, `sendAudio`), in the
/// order the fake accepted them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentFile {
    pub kind: MediaKind,
    pub chat_id: i64,
    /// The new message's id.
    pub message_id: i64,
    pub message_thread_id: Option<i64>,
    /// The uploaded file's name; `None` for a file sent by `file_id` or URL.
    pub file_name: Option<String>,
    /// The uploaded bytes (sent by `file_id`: the stored file's; by URL: empty).
    pub bytes: Vec<u8>,
    /// The caption exactly as sent (HTML tags and all); `""` if none.
    pub caption: String,
}
