//! Photos, documents, voice notes and audio files: storing their bytes as files and
//! writing the JSON a message carries for them (`photo: [PhotoSize]`, `document:
//! Document`, `voice: Voice`, `audio: Audio`), with a `mime_type` guessed from the file
//! name as Telegram does (`crate::mime`).

use axum::body::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::store::{FileEntry, Store};

/// Which kind of media; the name is the message field and the send method's parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    /// `sendPhoto` / `message.photo`.
    Photo,
    /// `sendDocument` / `message.document`.
    Document,
    /// `sendVoice` / `message.voice` (an OGG/Opus voice note).
    Voice,
    /// `sendAudio` / `message.audio` (a music or audio file).
    Audio,
}

impl MediaKind {
    /// `photo`, `document`, `voice` or `audio`.
    pub fn field(self) -> &'static str {
        match self {
            MediaKind::Photo => "photo",
            MediaKind::Document => "document",
            MediaKind::Voice => "voice",
            MediaKind::Audio => "audio",
        }
    }

    /// Stores `bytes` and returns the field's JSON. `name` is a document's file name.
    pub(crate) fn store(self, store: &mut Store, bytes: Bytes, name: &str) -> Value {
        match self {
            MediaKind::Photo => {
                // Telegram sends several sizes, smallest first; both serve the same bytes.
                let small = store.add_file("photos", ".jpg", bytes.clone());
                let large = store.add_file("photos", ".jpg", bytes);
                json!([size(&small, 90, 67), size(&large, 800, 600)])
            }
            MediaKind::Document => {
                let entry = store.add_file("documents", &extension(name), bytes);
                self.json(&entry, name)
            }
            MediaKind::Voice => {
                let entry = store.add_file("voice", ".oga", bytes);
                self.json(&entry, name)
            }
            MediaKind::Audio => {
                let entry = store.add_file("music", &extension(name), bytes);
                self.json(&entry, name)
            }
        }
    }

    /// The field's JSON for a file already stored (a send that passed a `file_id`).
    pub(crate) fn json(self, entry: &FileEntry, name: &str) -> Value {
        match self {
            MediaKind::Photo => json!([size(entry, 800, 600)]),
            MediaKind::Document => {
                let mut document = entry.meta();
                let name = if name.is_empty() { "file" } else { name };
                document["file_name"] = json!(name);
                document["mime_type"] = json!(crate::mime::from_name(name));
                document
            }
            MediaKind::Voice => {
                let mut voice = entry.meta();
                voice["duration"] = json!(1);
                voice["mime_type"] = json!("audio/ogg");
                voice
            }
            MediaKind::Audio => {
                let mut audio = entry.meta();
                let name = if name.is_empty() { "audio.mp3" } else { name };
                audio["duration"] = json!(1);
                audio["file_name"] = json!(name);
                audio["mime_type"] = json!(crate::mime::from_name(name));
                audio
            }
        }
    }
}

fn size(entry: &FileEntry, width: u32, height: u32) -> Value {
    let mut size = entry.meta();
    size["width"] = json!(width);
    size["height"] = json!(height);
    size
}

/// `.txt` for `notes.txt` (the case kept, as in a stored path); `""` without one.
fn extension(name: &str) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => format!(".{ext}"),
        _ => String::new(),
    }
}
