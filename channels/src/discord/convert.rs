//! A Discord message as an `InboundMessage`: who sent it, which place (a DM, a guild
//! text channel, or a thread under one — its own session, `chat_id` = the parent
//! channel, `thread_id` = the thread), the text with mentions written as `@name` (the
//! bot's own mention is kept, like Telegram's), attachments to fetch, and whether the
//! bot was addressed (a DM, an @mention of the bot, or a reply to one of its messages).

use std::time::{Duration, SystemTime};

use serenity::model::channel::{Message, MessageType};

use crate::inbox::Attachment;
use crate::message::{ChatKind, InboundMessage, MediaKind, Sender};

pub const CHANNEL: &str = "discord";

/// The bot itself, for telling whether it was addressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Me {
    pub id: u64,
    pub username: String,
}

/// What kind of channel a message was posted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    Dm,
    Channel,
    Thread { parent: u64 },
}

impl Place {
    /// From a channel object's `type` and `parent_id` (Discord's channel types).
    pub(super) fn from_type(kind: u64, parent: Option<u64>) -> Place {
        match (kind, parent) {
            (1 | 3, _) => Place::Dm,
            // Announcement, public and private threads.
            (10..=12, Some(parent)) => Place::Thread { parent },
            _ => Place::Channel,
        }
    }
}

/// `None` for messages nobody should answer (from bots, ourselves, system messages).
pub(super) fn inbound(
    message: &Message,
    me: &Me,
    place: Place,
) -> Option<(InboundMessage, Vec<Attachment>)> {
    if message.author.bot || message.author.id.get() == me.id {
        return None;
    }
    if !matches!(
        message.kind,
        MessageType::Regular | MessageType::InlineReply
    ) {
        return None; // joins, pins, thread-created notices and the like
    }
    let text = readable(message, me);
    let attachments = attachments(message);
    if text.trim().is_empty() && attachments.is_empty() {
        return None;
    }
    let channel = message.channel_id.get().to_string();
    let (chat_kind, chat_id, thread_id) = match place {
        Place::Dm => (ChatKind::Dm, channel, None),
        Place::Channel => (ChatKind::Group, channel, None),
        Place::Thread { parent } => (ChatKind::Thread, parent.to_string(), Some(channel)),
    };
    let author = &message.author;
    let display_name = message
        .member
        .as_ref()
        .and_then(|m| m.nick.clone())
        .or_else(|| author.global_name.clone())
        .unwrap_or_else(|| author.name.clone());
    let addressed = chat_kind == ChatKind::Dm
        || message.mentions.iter().any(|u| u.id.get() == me.id)
        || message
            .referenced_message
            .as_ref()
            .is_some_and(|m| m.author.id.get() == me.id);
    let seconds = u64::try_from(message.timestamp.unix_timestamp()).unwrap_or_default();
    let inbound = InboundMessage {
        channel: CHANNEL.into(),
        account: "default".into(),
        chat_id,
        chat_kind,
        thread_id,
        sender: Sender {
            raw_id: author.id.get().to_string(),
            canonical: format!("{CHANNEL}:{}", author.id.get()),
            display_name,
        },
        // Snowflakes are unique across Discord; the store dedupes on this.
        message_id: message.id.get().to_string(),
        addressed,
        text,
        media: Vec::new(),
        reply_to: message
            .message_reference
            .as_ref()
            .and_then(|r| r.message_id)
            .map(|id| id.get().to_string()),
        received_at: SystemTime::UNIX_EPOCH + Duration::from_secs(seconds),
        deliver_to: None,
        scheduled: None,
    };
    Some((inbound, attachments))
}

/// The text with user mentions (`<@123>`, `<@!123>`) written as `@name`.
fn readable(message: &Message, me: &Me) -> String {
    let mut text = message.content.clone();
    for user in &message.mentions {
        let name = if user.id.get() == me.id {
            me.username.clone()
        } else {
            user.global_name
                .clone()
                .unwrap_or_else(|| user.name.clone())
        };
        for form in [
            format!("<@{}>", user.id.get()),
            format!("<@!{}>", user.id.get()),
        ] {
            text = text.replace(&form, &format!("@{name}"));
        }
    }
    text
}

fn attachments(message: &Message) -> Vec<Attachment> {
    let voice = message
        .flags
        .is_some_and(|f| f.contains(serenity::model::channel::MessageFlags::IS_VOICE_MESSAGE));
    message
        .attachments
        .iter()
        .map(|a| {
            let mime = a.content_type.clone();
            let major = mime
                .as_deref()
                .and_then(|m| m.split('/').next())
                .unwrap_or("");
            let kind = match major {
                _ if voice => MediaKind::Voice,
                "image" => MediaKind::Photo,
                "audio" => MediaKind::Audio,
                "video" => MediaKind::Video,
                _ => MediaKind::Document,
            };
            Attachment {
                kind,
                file: a.url.clone(),
                file_name: a.filename.clone(),
                mime,
                size: Some(u64::from(a.size)),
                duration_secs: a.duration_secs.map(|d| d.round() as u32),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(id: u64, name: &str, bot: bool) -> serde_json::Value {
        json!({"id": id.to_string(), "username": name, "discriminator": "0", "global_name": null, "avatar": null, "bot": bot})
    }

    fn message(extra: serde_json::Value) -> Message {
        let mut base = json!({
            "id": "1100", "channel_id": "500", "author": user(42, "ann", false),
            "content": "hello <@999> there", "timestamp": "2026-11-20T10:00:00.000000+00:00",
            "edited_timestamp": null, "tts": false, "mention_everyone": false,
            "mentions": [], "mention_roles": [], "attachments": [], "embeds": [],
            "pinned": false, "type": 0
        });
        if let (Some(base), Some(extra)) = (base.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                base.insert(k.clone(), v.clone());
            }
        }
        serde_json::from_value(base).expect("a message")
    }

    fn me() -> Me {
        Me {
            id: 999,
            username: "pincer".into(),
        }
    }

    #[test]
    fn a_mention_addresses_the_bot_and_reads_as_its_name() {
        let msg = message(json!({"guild_id": "7", "mentions": [user(999, "pincer", true)]}));
        let (inbound, _) = inbound(&msg, &me(), Place::Channel).unwrap();
        assert!(inbound.addressed);
        assert_eq!(inbound.text, "hello @pincer there");
        assert_eq!(inbound.chat_kind, ChatKind::Group);
        assert_eq!(inbound.sender.canonical, "discord:42");
        let plain = message(json!({"guild_id": "7", "content": "just chatting"}));
        assert!(!inbound_of(&plain, Place::Channel).addressed);
    }

    fn inbound_of(msg: &Message, place: Place) -> InboundMessage {
        inbound(msg, &me(), place).unwrap().0
    }

    #[test]
    fn a_reply_to_the_bot_addresses_it_and_threads_are_sessions() {
        let replied = message(
            json!({"id": "1000", "author": user(999, "pincer", true), "content": "earlier"}),
        );
        let msg = message(json!({
            "guild_id": "7", "content": "and then?", "type": 19,
            "message_reference": {"message_id": "1000", "channel_id": "600"},
            "referenced_message": serde_json::to_value(&replied).unwrap(),
            "channel_id": "600"
        }));
        let got = inbound_of(&msg, Place::Thread { parent: 500 });
        assert!(got.addressed);
        assert_eq!(got.chat_kind, ChatKind::Thread);
        assert_eq!(got.chat_id, "500");
        assert_eq!(got.thread_id.as_deref(), Some("600"));
        assert_eq!(got.reply_to.as_deref(), Some("1000"));
        assert_eq!(
            got.session_key().to_string(),
            "discord:group:500:thread:600"
        );
    }

    #[test]
    fn bots_and_system_messages_are_ignored() {
        let from_bot = message(json!({"author": user(5, "other", true)}));
        assert!(inbound(&from_bot, &me(), Place::Dm).is_none());
        let pinned = message(json!({"type": 6}));
        assert!(inbound(&pinned, &me(), Place::Dm).is_none());
    }

    #[test]
    fn attachments_are_listed_by_kind() {
        let msg = message(json!({"content": "", "attachments": [
            {"id": "1", "filename": "cat.png", "size": 10, "url": "http://x/cat.png", "proxy_url": "http://x/cat.png", "content_type": "image/png"},
            {"id": "2", "filename": "notes.txt", "size": 5, "url": "http://x/notes.txt", "proxy_url": "http://x/notes.txt"}
        ]}));
        let (got, files) = inbound(&msg, &me(), Place::Dm).unwrap();
        assert!(got.addressed, "a DM is always addressed");
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].kind, MediaKind::Photo);
        assert_eq!(files[1].kind, MediaKind::Document);
    }
}
