//! Photos, documents and voice notes: storing their bytes as files and writing the JSON a
//! message carries for them (`photo: [PhotoSize]`, `document: Document`, `voice: Voice`).

use axum::body::Bytes;
use serde_json::{Value, json};

use super::store::{FileEntry, Store};

/// Which kind of media; the name is the message field and the send method's parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Photo,
    Document,
    Voice,
}

impl Kind {
    /// `photo`, `document` or `voice`.
    pub(crate) fn field(self) -> &'static str {
        match self {
            Kind::Photo => "photo",
            Kind::Document => "document",
            Kind::Voice => "voice",
        }
    }

    /// Stores `bytes` and returns the field's JSON. `name` is a document's file name.
    pub(crate) fn store(self, store: &mut Store, bytes: Bytes, name: &str) -> Value {
        match self {
            Kind::Photo => {
                // Telegram sends several sizes, smallest first; both serve the same bytes.
                let small = store.add_file("photos", ".jpg", bytes.clone());
                let large = store.add_file("photos", ".jpg", bytes);
                json!([size(&small, 90, 67), size(&large, 800, 600)])
            }
            Kind::Document => {
                let entry = store.add_file("documents", &extension(name), bytes);
                self.json(&entry, name)
            }
            Kind::Voice => {
                let entry = store.add_file("voice", ".oga", bytes);
                self.json(&entry, name)
            }
        }
    }

    /// The field's JSON for a file already stored (a send that passed a `file_id`).
    pub(crate) fn json(self, entry: &FileEntry, name: &str) -> Value {
        match self {
            Kind::Photo => json!([size(entry, 800, 600)]),
            Kind::Document => {
                let mut document = entry.meta();
                let name = if name.is_empty() { "file" } else { name };
                document["file_name"] = json!(name);
                document["mime_type"] = json!(mime_type(name));
                document
            }
            Kind::Voice => {
                let mut voice = entry.meta();
                voice["duration"] = json!(1);
                voice["mime_type"] = json!("audio/ogg");
                voice
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

/// `.txt` for `notes.txt`; `""` without an extension.
fn extension(name: &str) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => format!(".{ext}"),
        _ => String::new(),
    }
}

fn mime_type(name: &str) -> &'static str {
    let ext = extension(name).to_ascii_lowercase();
    match ext.as_str() {
        ".txt" | ".md" | ".log" => "text/plain",
        ".json" => "application/json",
        ".pdf" => "application/pdf",
        ".png" => "image/png",
        ".jpg" | ".jpeg" => "image/jpeg",
        ".csv" => "text/csv",
        ".html" => "text/html",
        ".zip" => "application/zip",
        _ => "application/octet-stream",
    }
}
