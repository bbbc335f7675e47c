//! What the fake remembers between calls: the chats it has seen, every message (injected
//! or sent, for replies, edits and deletes) and every file (for `getFile` and downloads).
//!
//! Plain data under the state's lock; it decides nothing about answers.

use std::collections::HashMap;

use axum::body::Bytes;
use serde_json::{Value, json};

use super::objects::ChatInfo;

/// One file the fake can serve.
#[derive(Debug, Clone)]
pub(crate) struct FileEntry {
    pub id: String,
    pub unique_id: String,
    /// Relative path for `GET /file/bot{TOKEN}/{path}`, e.g. `photos/file_3.jpg`.
    pub path: String,
    pub bytes: Bytes,
}

impl FileEntry {
    /// `file_id`, `file_unique_id` and `file_size`, the fields every file object shares.
    pub(crate) fn meta(&self) -> Value {
        json!({
            "file_id": self.id,
            "file_unique_id": self.unique_id,
            "file_size": self.bytes.len(),
        })
    }

    /// `getFile`'s `File` object.
    pub(crate) fn file_json(&self) -> Value {
        let mut file = self.meta();
        file["file_path"] = json!(self.path);
        file
    }
}

/// One message the fake has seen.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    /// The `Message` object without `reply_to_message`.
    pub json: Value,
    /// Sent by the bot (only those may be edited).
    pub from_bot: bool,
    /// The text or caption as sent, before any HTML parsing.
    pub raw_text: String,
    pub parse_mode: Option<String>,
}

#[derive(Debug, Default)]
pub(crate) struct Store {
    chats: HashMap<i64, ChatInfo>,
    messages: HashMap<(i64, i64), Stored>,
    files: HashMap<String, FileEntry>,
    /// `file_path` → `file_id`, for downloads.
    paths: HashMap<String, String>,
    /// The last message id handed out (one counter for every chat).
    last_message_id: i64,
    /// Files registered so far, for unique ids and paths.
    file_count: u64,
}

impl Store {
    /// The chat with `id`: as seen, or made up from the id's sign.
    pub(crate) fn chat(&self, id: i64) -> ChatInfo {
        self.chats
            .get(&id)
            .cloned()
            .unwrap_or_else(|| ChatInfo::guess(id))
    }

    /// Remembers a chat; a forum stays a forum.
    pub(crate) fn remember_chat(&mut self, id: i64, mut info: ChatInfo) -> ChatInfo {
        if let (
            ChatInfo::Supergroup { forum, .. },
            Some(ChatInfo::Supergroup { forum: true, .. }),
        ) = (&mut info, self.chats.get(&id))
        {
            *forum = true;
        }
        self.chats.insert(id, info.clone());
        info
    }

    pub(crate) fn next_message_id(&mut self) -> i64 {
        self.last_message_id += 1;
        self.last_message_id
    }

    pub(crate) fn insert_message(&mut self, chat_id: i64, message_id: i64, stored: Stored) {
        self.messages.insert((chat_id, message_id), stored);
    }

    pub(crate) fn message(&self, chat_id: i64, message_id: i64) -> Option<&Stored> {
        self.messages.get(&(chat_id, message_id))
    }

    pub(crate) fn message_mut(&mut self, chat_id: i64, message_id: i64) -> Option<&mut Stored> {
        self.messages.get_mut(&(chat_id, message_id))
    }

    /// The bot's newest message in `chat_id` that carries an inline keyboard.
    pub(crate) fn newest_with_buttons(&self, chat_id: i64) -> Option<(i64, &Stored)> {
        self.messages
            .iter()
            .filter(|((chat, _), m)| {
                *chat == chat_id && m.from_bot && m.json["reply_markup"].is_object()
            })
            .max_by_key(|((_, id), _)| *id)
            .map(|((_, id), m)| (*id, m))
    }

    pub(crate) fn remove_message(&mut self, chat_id: i64, message_id: i64) -> Option<Stored> {
        self.messages.remove(&(chat_id, message_id))
    }

    /// Stores `bytes` as a new file under `dir` (`photos`, `documents`, `voice`) with the
    /// extension `ext` (with its dot, or `""`).
    pub(crate) fn add_file(&mut self, dir: &str, ext: &str, bytes: Bytes) -> FileEntry {
        self.file_count += 1;
        let n = self.file_count;
        let entry = FileEntry {
            id: format!("FAKE-{dir}-{n}-AgADBAAD"),
            unique_id: format!("AQAD{n}"),
            path: format!("{dir}/file_{n}{ext}"),
            bytes,
        };
        self.paths.insert(entry.path.clone(), entry.id.clone());
        self.files.insert(entry.id.clone(), entry.clone());
        entry
    }

    pub(crate) fn file(&self, file_id: &str) -> Option<&FileEntry> {
        self.files.get(file_id)
    }

    pub(crate) fn file_at(&self, path: &str) -> Option<&FileEntry> {
        self.paths.get(path).and_then(|id| self.files.get(id))
    }
}
