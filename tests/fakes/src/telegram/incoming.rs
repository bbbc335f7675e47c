//! `Incoming`: what a user sends the bot, built up in a test, and its injection as a
//! `message` update (with the chat, the sender, entities, media, replies and topics
//! shaped as Telegram shapes them).

use axum::body::Bytes;
use serde_json::{Value, json};

use super::attachment::MediaKind;
use super::entities;
use super::objects::{self, ChatInfo, Content, Draft};
use super::state::Inner;
use super::store::Stored;

/// A message from a user, for `FakeTelegram::inject`.
#[derive(Debug, Clone)]
pub struct Incoming {
    place: Place,
    user_id: i64,
    first_name: String,
    username: Option<String>,
    text: String,
    thread_id: Option<i64>,
    /// The message replied to, and whether the bot sent it.
    reply_to: Option<(i64, bool)>,
    mention: bool,
    command: bool,
    attachment: Option<(MediaKind, String, Vec<u8>)>,
}

#[derive(Debug, Clone)]
enum Place {
    /// The DM with the sender (chat id = user id).
    Private,
    Supergroup {
        id: i64,
        title: String,
    },
}

impl Incoming {
    /// A DM: private chat whose id is the user's, sender `User{id}` / `@user{id}`.
    pub fn dm(user_id: i64, text: &str) -> Incoming {
        Incoming {
            place: Place::Private,
            user_id,
            first_name: format!("User{user_id}"),
            username: Some(format!("user{user_id}")),
            text: text.to_string(),
            thread_id: None,
            reply_to: None,
            mention: false,
            command: false,
            attachment: None,
        }
    }

    /// A message in a supergroup (`chat_id` negative, e.g. `-100123`) titled "Group".
    pub fn group(chat_id: i64, user_id: i64, text: &str) -> Incoming {
        Incoming {
            place: Place::Supergroup {
                id: chat_id,
                title: "Group".into(),
            },
            ..Incoming::dm(user_id, text)
        }
    }

    /// Another title for the group (no effect on a DM).
    pub fn titled(mut self, title: &str) -> Incoming {
        if let Place::Supergroup { title: t, .. } = &mut self.place {
            *t = title.to_string();
        }
        self
    }

    /// In forum topic `thread_id`: `message_thread_id`, `is_topic_message: true`, and the
    /// chat becomes (and stays) a forum, `is_forum: true`.
    pub fn in_topic(mut self, thread_id: i64) -> Incoming {
        self.thread_id = Some(thread_id);
        self
    }

    /// A reply to `message_id`, which the bot sent if `from_bot`. A message the fake has
    /// seen in this chat is quoted as it was; an unknown one is made up. In a group that
    /// is not a forum the reply also carries `message_thread_id = message_id`.
    pub fn replying_to(mut self, message_id: i64, from_bot: bool) -> Incoming {
        self.reply_to = Some((message_id, from_bot));
        self
    }

    /// Addresses the bot: `"@pincer_test_bot " + text` with a `mention` entity (or, with
    /// `command`, `"/cmd@pincer_test_bot rest"`).
    pub fn mentioning_bot(mut self) -> Incoming {
        self.mention = true;
        self
    }

    /// Marks a leading `/word` as a `bot_command` entity at offset 0; no effect if the
    /// text does not start with one.
    pub fn command(mut self) -> Incoming {
        self.command = true;
        self
    }

    /// A photo (two sizes, smallest first) with these bytes; the text becomes the caption.
    pub fn with_photo(mut self, bytes: Vec<u8>) -> Incoming {
        self.attachment = Some((MediaKind::Photo, String::new(), bytes));
        self
    }

    /// A document named `name` (`mime_type` guessed from the name: `application/pdf`,
    /// `text/csv`, `image/png` …); the text becomes the caption.
    pub fn with_document(mut self, name: &str, bytes: Vec<u8>) -> Incoming {
        self.attachment = Some((MediaKind::Document, name.to_string(), bytes));
        self
    }

    /// A voice note (OGG, 1 s); the text becomes the caption.
    pub fn with_voice(mut self, bytes: Vec<u8>) -> Incoming {
        self.attachment = Some((MediaKind::Voice, String::new(), bytes));
        self
    }

    /// An audio file named `name` (`audio` with `file_name`, `mime_type` from the name,
    /// 1 s), as a music app shares it; the text becomes the caption.
    pub fn with_audio(mut self, name: &str, bytes: Vec<u8>) -> Incoming {
        self.attachment = Some((MediaKind::Audio, name.to_string(), bytes));
        self
    }

    /// Another sender. In a DM the chat follows (its id is the sender's).
    pub fn from(mut self, user_id: i64, first_name: &str, username: Option<&str>) -> Incoming {
        self.user_id = user_id;
        self.first_name = first_name.to_string();
        self.username = username.map(str::to_string);
        self
    }

    /// The chat the message goes to.
    pub fn chat_id(&self) -> i64 {
        match &self.place {
            Place::Private => self.user_id,
            Place::Supergroup { id, .. } => *id,
        }
    }
}

/// Queues `msg` as an update; returns `(message_id, update_id)`.
pub(crate) fn inject(inner: &mut Inner, msg: Incoming) -> (i64, i64) {
    let chat_id = msg.chat_id();
    let store = &mut inner.store;
    let group = matches!(msg.place, Place::Supergroup { .. });
    let info = match msg.place {
        Place::Private => ChatInfo::Private {
            first_name: msg.first_name.clone(),
            username: msg.username.clone(),
        },
        Place::Supergroup { title, .. } => ChatInfo::Supergroup {
            title,
            forum: msg.thread_id.is_some(),
        },
    };
    let chat = store.remember_chat(chat_id, info).json(chat_id);
    let from = objects::user(msg.user_id, &msg.first_name, msg.username.as_deref());
    let thread = match (msg.thread_id, msg.reply_to) {
        (Some(topic), _) => Some((topic, true)),
        // In ordinary supergroups a reply belongs to the replied message's thread.
        (None, Some((replied, _))) if group => Some((replied, false)),
        _ => None,
    };
    let (text, entities) = entities::compose(&msg.text, msg.mention, msg.command);
    let content = match msg.attachment {
        None => Content::Text {
            text: text.clone(),
            entities,
        },
        Some((kind, name, bytes)) => Content::Media {
            field: kind.field(),
            value: kind.store(store, Bytes::from(bytes), &name),
            caption: (!text.is_empty()).then(|| text.clone()),
            entities,
        },
    };
    let id = store.next_message_id();
    let draft = Draft {
        id,
        chat: chat.clone(),
        from: from.clone(),
        thread,
        content,
    };
    let mut message = draft.json();
    let stored = Stored {
        json: message.clone(),
        from_bot: false,
        raw_text: text,
        parse_mode: None,
    };
    store.insert_message(chat_id, id, stored);

    let reply = match (msg.reply_to, msg.thread_id) {
        (Some((replied, from_bot)), _) => Some(
            store
                .message(chat_id, replied)
                .map(|s| s.json.clone())
                .unwrap_or_else(|| made_up(replied, &chat, from_bot, thread)),
        ),
        // Telegram: a topic message that is no explicit reply answers the topic's start.
        (None, Some(topic)) if group => Some(topic_created(topic, &chat, &from)),
        _ => None,
    };
    if let Some(reply) = reply {
        message["reply_to_message"] = reply;
    }
    let update_id = inner.updates.push_message(message);
    (id, update_id)
}

/// A message the fake never saw, for a reply to quote.
fn made_up(id: i64, chat: &Value, from_bot: bool, thread: Option<(i64, bool)>) -> Value {
    let from = if from_bot {
        objects::bot()
    } else {
        objects::user(4242, "Someone", Some("someone_else"))
    };
    Draft {
        id,
        chat: chat.clone(),
        from,
        thread: thread.filter(|(_, topic)| *topic),
        content: Content::Text {
            text: "(an earlier message)".into(),
            entities: Vec::new(),
        },
    }
    .json()
}

/// The service message that opened forum topic `topic` (its id is the topic's id).
fn topic_created(topic: i64, chat: &Value, from: &Value) -> Value {
    let created = json!({"name": format!("Topic {topic}"), "icon_color": 7_322_096});
    Draft {
        id: topic,
        chat: chat.clone(),
        from: from.clone(),
        thread: Some((topic, true)),
        content: Content::Service("forum_topic_created", created),
    }
    .json()
}
