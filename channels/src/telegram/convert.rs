//! A Telegram message as an `InboundMessage`: who sent it, which chat and topic, the
//! text, attachments to fetch, and whether the bot was addressed (a private chat, an
//! @mention, a reply to the bot, or a command).

use std::time::SystemTime;

use teloxide::types::{Message, MessageEntityKind, UserId};

use crate::inbox::Attachment;
use crate::message::{ChatKind, InboundMessage, MediaKind, Sender};

pub const CHANNEL: &str = "telegram";

/// The bot itself, for telling whether it was addressed.
#[derive(Debug, Clone)]
pub struct Me {
    pub id: UserId,
    /// Without the leading @.
    pub username: String,
}

/// `None` for messages nobody should answer (from bots, service messages).
pub(super) fn inbound(message: &Message, me: &Me) -> Option<(InboundMessage, Vec<Attachment>)> {
    let from = message.from.as_ref()?;
    if from.is_bot {
        return None;
    }
    let chat_kind = if message.chat.is_private() {
        ChatKind::Dm
    } else if message.is_topic_message {
        ChatKind::Thread
    } else {
        ChatKind::Group
    };
    let thread_id = match chat_kind {
        ChatKind::Thread => message.thread_id.map(|t| t.0.0.to_string()),
        _ => None,
    };
    let text = message
        .text()
        .or(message.caption())
        .unwrap_or_default()
        .to_string();
    let attachments = attachments(message);
    if text.is_empty() && attachments.is_empty() {
        return None; // joins, pins, topic edits and the like
    }
    let display_name = match &from.last_name {
        Some(last) => format!("{} {last}", from.first_name),
        None => from.first_name.clone(),
    };
    let inbound = InboundMessage {
        channel: CHANNEL.into(),
        account: "default".into(),
        chat_id: message.chat.id.0.to_string(),
        chat_kind,
        thread_id,
        sender: Sender {
            raw_id: from.id.0.to_string(),
            canonical: format!("{CHANNEL}:{}", from.id.0),
            display_name,
        },
        // Telegram message ids are per chat; the store dedupes on this.
        message_id: format!("{}:{}", message.chat.id.0, message.id.0),
        addressed: chat_kind == ChatKind::Dm || addressed(message, me),
        text,
        media: Vec::new(),
        reply_to: message.reply_to_message().map(|m| m.id.0.to_string()),
        received_at: SystemTime::UNIX_EPOCH
            + std::time::Duration::from_secs(
                u64::try_from(message.date.timestamp()).unwrap_or_default(),
            ),
        deliver_to: None,
        scheduled: None,
    };
    Some((inbound, attachments))
}

fn addressed(message: &Message, me: &Me) -> bool {
    if message
        .reply_to_message()
        .and_then(|m| m.from.as_ref())
        .is_some_and(|u| u.id == me.id)
    {
        return true;
    }
    let Some(text) = message.text().or(message.caption()) else {
        return false;
    };
    let entities = message
        .entities()
        .or(message.caption_entities())
        .unwrap_or_default();
    entities.iter().any(|entity| match &entity.kind {
        MessageEntityKind::Mention => utf16_slice(text, entity.offset, entity.length)
            .is_some_and(|m| m.trim_start_matches('@').eq_ignore_ascii_case(&me.username)),
        MessageEntityKind::TextMention { user } => user.id == me.id,
        MessageEntityKind::BotCommand => {
            entity.offset == 0
                && utf16_slice(text, entity.offset, entity.length).is_some_and(|command| {
                    // "/new" in a group is for every bot; "/new@other_bot" is not for us.
                    command
                        .split_once('@')
                        .is_none_or(|(_, bot)| bot.eq_ignore_ascii_case(&me.username))
                })
        }
        _ => false,
    })
}

/// The part of `text` an entity covers (Telegram measures in UTF-16 units).
fn utf16_slice(text: &str, offset: usize, length: usize) -> Option<String> {
    let units: Vec<u16> = text.encode_utf16().collect();
    let part = units.get(offset..offset.checked_add(length)?)?;
    String::from_utf16(part).ok()
}

fn attachments(message: &Message) -> Vec<Attachment> {
    let id = message.id.0;
    let mut out = Vec::new();
    if let Some(largest) = message
        .photo()
        .and_then(|sizes| sizes.iter().max_by_key(|p| p.width * p.height))
    {
        out.push(Attachment {
            kind: MediaKind::Photo,
            file: largest.file.id.0.clone(),
            file_name: format!("photo-{id}.jpg"),
            mime: Some("image/jpeg".into()),
            size: Some(u64::from(largest.file.size)),
            duration_secs: None,
        });
    }
    if let Some(doc) = message.document() {
        out.push(Attachment {
            kind: MediaKind::Document,
            file: doc.file.id.0.clone(),
            file_name: doc
                .file_name
                .clone()
                .unwrap_or_else(|| format!("document-{id}")),
            mime: doc.mime_type.as_ref().map(ToString::to_string),
            size: Some(u64::from(doc.file.size)),
            duration_secs: None,
        });
    }
    if let Some(voice) = message.voice() {
        out.push(Attachment {
            kind: MediaKind::Voice,
            file: voice.file.id.0.clone(),
            file_name: format!("voice-{id}.ogg"),
            mime: voice.mime_type.as_ref().map(ToString::to_string),
            size: Some(u64::from(voice.file.size)),
            duration_secs: Some(voice.duration.seconds()),
        });
    }
    if let Some(audio) = message.audio() {
        out.push(Attachment {
            kind: MediaKind::Audio,
            file: audio.file.id.0.clone(),
            file_name: audio
                .file_name
                .clone()
                .unwrap_or_else(|| format!("audio-{id}")),
            mime: audio.mime_type.as_ref().map(ToString::to_string),
            size: Some(u64::from(audio.file.size)),
            duration_secs: Some(audio.duration.seconds()),
        });
    }
    if let Some(video) = message.video() {
        out.push(Attachment {
            kind: MediaKind::Video,
            file: video.file.id.0.clone(),
            file_name: video
                .file_name
                .clone()
                .unwrap_or_else(|| format!("video-{id}.mp4")),
            mime: video.mime_type.as_ref().map(ToString::to_string),
            size: Some(u64::from(video.file.size)),
            duration_secs: Some(video.duration.seconds()),
        });
    }
    out
}
