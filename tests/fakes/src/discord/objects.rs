//! Discord's objects as JSON, shaped as the API and gateway send them (enough fields for
//! serenity 0.12 to deserialize): users, channels, messages, READY, interactions. Also
//! the map from the small numbers tests use onto snowflakes.

use serde_json::{Value, json};

use super::{BOT_ID, BOT_NAME, GUILD_ID};

/// The snowflake of test user `n`.
pub fn user_id(n: u64) -> u64 {
    1_000_000_000_000 + n
}

/// The DM channel between the bot and test user `n`.
pub fn dm_channel(n: u64) -> u64 {
    2_000_000_000_000 + n
}

/// The DM channel with the user whose snowflake is `user`, if they are a test user.
pub fn dm_channel_with(user: u64) -> Option<u64> {
    (user / 1_000_000_000_000 == 1).then(|| dm_channel(user % 1_000_000_000_000))
}

/// Guild text channel `g`.
pub fn text_channel(g: u64) -> u64 {
    3_000_000_000_000 + g
}

/// The thread under guild text channel `g`.
pub fn thread_channel(g: u64) -> u64 {
    4_000_000_000_000 + g
}

/// What kind of channel an id is, and its parent for a thread.
pub(crate) fn channel_json(id: u64) -> Option<Value> {
    let base = id / 1_000_000_000_000;
    let n = id % 1_000_000_000_000;
    let channel = match base {
        2 => {
            json!({"id": id.to_string(), "type": 1, "recipients": [user(user_id(n), false)], "last_message_id": null})
        }
        3 => {
            json!({"id": id.to_string(), "type": 0, "guild_id": GUILD_ID.to_string(), "name": format!("channel-{n}"), "position": n, "parent_id": null, "nsfw": false, "permission_overwrites": []})
        }
        4 => {
            json!({"id": id.to_string(), "type": 11, "guild_id": GUILD_ID.to_string(), "name": format!("thread-{n}"), "parent_id": text_channel(n).to_string(), "owner_id": user_id(n).to_string(), "thread_metadata": {"archived": false, "auto_archive_duration": 1440, "archive_timestamp": TIMESTAMP, "locked": false}})
        }
        _ => return None,
    };
    Some(channel)
}

/// Whether messages in `channel` belong to the guild (text channels and threads).
pub(crate) fn in_guild(channel: u64) -> bool {
    matches!(channel / 1_000_000_000_000, 3 | 4)
}

pub(crate) const TIMESTAMP: &str = "2026-11-20T10:00:00.000000+00:00";

pub(crate) fn user(id: u64, bot: bool) -> Value {
    let name = if id == BOT_ID {
        BOT_NAME.to_string()
    } else {
        format!("user{}", id % 1_000_000_000_000)
    };
    json!({
        "id": id.to_string(), "username": name, "discriminator": "0",
        "global_name": if bot { Value::Null } else { json!(format!("User {}", id % 1_000_000_000_000)) },
        "avatar": null, "bot": bot, "public_flags": 0,
    })
}

/// What a new message holds besides its ids.
pub(crate) struct Draft {
    pub author: u64,
    pub content: String,
    pub mentions: Vec<u64>,
    pub attachments: Vec<Value>,
    pub components: Value,
    /// The message replied to, as its full JSON.
    pub replied: Option<Value>,
}

pub(crate) fn message(id: u64, channel: u64, draft: &Draft) -> Value {
    let from_bot = draft.author == BOT_ID;
    let mut msg = json!({
        "id": id.to_string(),
        "channel_id": channel.to_string(),
        "author": user(draft.author, from_bot),
        "content": draft.content,
        "timestamp": TIMESTAMP,
        "edited_timestamp": null,
        "tts": false,
        "mention_everyone": false,
        "mentions": draft.mentions.iter().map(|m| user(*m, *m == BOT_ID)).collect::<Vec<_>>(),
        "mention_roles": [],
        "attachments": draft.attachments,
        "embeds": [],
        "pinned": false,
        "type": if draft.replied.is_some() { 19 } else { 0 },
        "flags": 0,
        "components": draft.components,
    });
    if let Some(replied) = &draft.replied {
        msg["message_reference"] =
            json!({"message_id": replied["id"], "channel_id": channel.to_string(), "type": 0});
        msg["referenced_message"] = replied.clone();
    }
    msg
}

/// A gateway MESSAGE_CREATE's `d`: the message plus `guild_id` and `member` in a guild.
pub(crate) fn gateway_message(msg: &Value) -> Value {
    let mut d = msg.clone();
    let channel = msg["channel_id"]
        .as_str()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    if in_guild(channel) {
        d["guild_id"] = json!(GUILD_ID.to_string());
        d["member"] = json!({"roles": [], "joined_at": TIMESTAMP, "deaf": false, "mute": false, "flags": 0, "nick": null});
    }
    d
}

pub(crate) fn ready(session_id: &str, resume_url: &str) -> Value {
    json!({
        "v": 10,
        "user": user(BOT_ID, true),
        "guilds": [{"id": GUILD_ID.to_string(), "unavailable": true}],
        "session_id": session_id,
        "resume_gateway_url": resume_url,
        "shard": [0, 1],
        "application": {"id": BOT_ID.to_string(), "flags": 0},
        "private_channels": [],
    })
}

/// INTERACTION_CREATE's `d` for a press of the button `custom_id` on `message`.
pub(crate) fn button_press(id: u64, message: &Value, presser: u64, custom_id: &str) -> Value {
    let channel = message["channel_id"]
        .as_str()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut d = json!({
        "id": id.to_string(),
        "application_id": BOT_ID.to_string(),
        "type": 3,
        "data": {"custom_id": custom_id, "component_type": 2},
        "channel_id": channel.to_string(),
        "channel": channel_json(channel).unwrap_or(Value::Null),
        "token": format!("interaction-token-{id}"),
        "version": 1,
        "message": message,
        "app_permissions": "0",
        "locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {},
        "context": if in_guild(channel) { 0 } else { 1 },
        "attachment_size_limit": 10_485_760,
    });
    if in_guild(channel) {
        d["guild_id"] = json!(GUILD_ID.to_string());
        d["guild_locale"] = json!("en-US");
        d["member"] = json!({"user": user(presser, false), "roles": [], "joined_at": TIMESTAMP, "deaf": false, "mute": false, "flags": 0, "permissions": "0", "nick": null});
    } else {
        d["user"] = user(presser, false);
    }
    d
}

/// An attachment object served by the fake at `url`.
pub(crate) fn attachment(id: u64, name: &str, mime: &str, size: usize, url: &str) -> Value {
    json!({"id": id.to_string(), "filename": name, "size": size, "url": url, "proxy_url": url, "content_type": mime})
}
