//! Bot API objects as JSON: the bot (`User` and `getMe`'s answer), users, chats and
//! `Message`. Shapes follow teloxide-core 0.13's types, which decide what must be present
//! (e.g. `date` as Unix seconds, `chat.type`, `from.is_bot`).

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::{BOT_ID, BOT_NAME, BOT_USERNAME};

/// A chat as the fake knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ChatInfo {
    /// A DM: the chat id is the user's id.
    Private {
        first_name: String,
        username: Option<String>,
    },
    Supergroup {
        title: String,
        /// Topics are on; stays `true` once any message came from a topic.
        forum: bool,
    },
}

impl ChatInfo {
    /// A made-up chat for an id the fake has not seen: positive ids are users' DMs,
    /// negative ones supergroups.
    pub(crate) fn guess(id: i64) -> ChatInfo {
        if id > 0 {
            ChatInfo::Private {
                first_name: format!("User{id}"),
                username: Some(format!("user{id}")),
            }
        } else {
            ChatInfo::Supergroup {
                title: "Group".into(),
                forum: false,
            }
        }
    }

    pub(crate) fn is_forum(&self) -> bool {
        matches!(self, ChatInfo::Supergroup { forum: true, .. })
    }

    pub(crate) fn json(&self, id: i64) -> Value {
        match self {
            ChatInfo::Private {
                first_name,
                username,
            } => {
                let mut chat = json!({"id": id, "type": "private", "first_name": first_name});
                if let Some(username) = username {
                    chat["username"] = json!(username);
                }
                chat
            }
            ChatInfo::Supergroup { title, forum } => {
                let mut chat = json!({"id": id, "type": "supergroup", "title": title});
                if *forum {
                    chat["is_forum"] = json!(true);
                }
                chat
            }
        }
    }
}

/// A (human) user.
pub(crate) fn user(id: i64, first_name: &str, username: Option<&str>) -> Value {
    let mut user = json!({"id": id, "is_bot": false, "first_name": first_name});
    if let Some(username) = username {
        user["username"] = json!(username);
    }
    user
}

/// The bot as a `User` (the `from` of what it sends).
pub(crate) fn bot() -> Value {
    json!({"id": BOT_ID, "is_bot": true, "first_name": BOT_NAME, "username": BOT_USERNAME})
}

/// `getMe`'s answer. With privacy mode on the bot only sees addressed group messages.
pub(crate) fn me(privacy_mode: bool) -> Value {
    let mut me = bot();
    me["can_join_groups"] = json!(true);
    me["can_read_all_group_messages"] = json!(!privacy_mode);
    me["supports_inline_queries"] = json!(false);
    me["can_connect_to_business"] = json!(false);
    me["has_main_web_app"] = json!(false);
    me
}

/// Unix seconds now.
pub(crate) fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// What a message holds.
#[derive(Debug, Clone)]
pub(crate) enum Content {
    Text {
        text: String,
        entities: Vec<Value>,
    },
    /// `field` is `photo`, `document` or `voice`; `value` its JSON.
    Media {
        field: &'static str,
        value: Value,
        caption: Option<String>,
        entities: Vec<Value>,
    },
    /// A service message: `forum_topic_created` and the like, as `(field, value)`.
    Service(&'static str, Value),
}

/// The parts of a `Message` object.
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    pub id: i64,
    pub chat: Value,
    pub from: Value,
    /// `message_thread_id`, and whether the message is in a forum topic.
    pub thread: Option<(i64, bool)>,
    pub content: Content,
}

impl Draft {
    /// The `Message` object, without `reply_to_message` (which never nests further).
    pub(crate) fn json(&self) -> Value {
        let mut message = json!({
            "message_id": self.id,
            "date": now(),
            "chat": self.chat,
            "from": self.from,
        });
        if let Some((thread, topic)) = self.thread {
            message["message_thread_id"] = json!(thread);
            if topic {
                message["is_topic_message"] = json!(true);
            }
        }
        match &self.content {
            Content::Text { text, entities } => {
                message["text"] = json!(text);
                if !entities.is_empty() {
                    message["entities"] = json!(entities);
                }
            }
            Content::Media {
                field,
                value,
                caption,
                entities,
            } => {
                message[*field] = value.clone();
                if let Some(caption) = caption {
                    message["caption"] = json!(caption);
                }
                if !entities.is_empty() {
                    message["caption_entities"] = json!(entities);
                }
            }
            Content::Service(field, value) => message[*field] = value.clone(),
        }
        message
    }
}
