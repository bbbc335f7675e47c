//! A Matrix room event (as JSON, decrypted where it was encrypted) as what the adapter
//! does with it: a message for the bus, a reaction or reply that may answer a question,
//! or nothing. Edits (`m.replace`), notices (other bots), the bot's own events, state
//! and redactions are nothing.
//!
//! A room of at most two members is a direct chat; any larger room is a group, answered
//! when the bot is addressed: named in `m.mentions`, linked as a pill
//! (`https://matrix.to/#/@bot:server`), written as its user id, or replied to. An
//! `m.thread` relation makes the message part of that thread's own session. A reply's
//! quoted fallback (`> <@someone> …` lines) is dropped from the text.

use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::Me;
use crate::inbox::Attachment;
use crate::message::{ChatKind, InboundMessage, MediaKind, Sender, bang_command};

pub const CHANNEL: &str = "matrix";

/// What one room event means to the adapter.
#[derive(Debug)]
pub(super) enum Event {
    Message(Box<Incoming>),
    /// A reaction `key` on event `on`.
    Reaction {
        on: String,
        key: String,
        sender: String,
    },
    /// An encrypted event the bot has no key for.
    Unreadable {
        sender: String,
    },
}

/// A message worth handing to the core, with its files still on the homeserver.
#[derive(Debug)]
pub(super) struct Incoming {
    pub inbound: InboundMessage,
    pub attachments: Vec<Attachment>,
}

/// What the adapter knows of the room an event came from.
pub(super) struct RoomFacts<'a> {
    pub id: &'a str,
    pub direct: bool,
}

/// What `event` means; `ours` tells whether an event id is one of the bot's messages.
pub(super) fn classify(
    event: &Value,
    room: &RoomFacts<'_>,
    me: &Me,
    ours: &dyn Fn(&str) -> bool,
) -> Option<Event> {
    let sender = event["sender"].as_str()?;
    if sender == me.user_id.as_str() {
        return None;
    }
    let content = &event["content"];
    match event["type"].as_str()? {
        "m.reaction" => {
            let relates = &content["m.relates_to"];
            (relates["rel_type"] == "m.annotation").then(|| Event::Reaction {
                on: relates["event_id"].as_str().unwrap_or_default().to_string(),
                key: relates["key"].as_str().unwrap_or_default().to_string(),
                sender: sender.to_string(),
            })
        }
        "m.room.encrypted" => Some(Event::Unreadable {
            sender: sender.to_string(),
        }),
        "m.room.message" => message(event, room, me, ours).map(|m| Event::Message(Box::new(m))),
        _ => None,
    }
}

fn message(
    event: &Value,
    room: &RoomFacts<'_>,
    me: &Me,
    ours: &dyn Fn(&str) -> bool,
) -> Option<Incoming> {
    let content = &event["content"];
    let relates = &content["m.relates_to"];
    if relates["rel_type"] == "m.replace" {
        return None; // an edit: the original was answered
    }
    let sender = event["sender"].as_str()?;
    let event_id = event["event_id"].as_str()?;
    let msgtype = content["msgtype"].as_str()?;
    let body = content["body"].as_str().unwrap_or_default();
    let thread_id = (relates["rel_type"] == "m.thread")
        .then(|| relates["event_id"].as_str().map(str::to_string))
        .flatten();
    // In a thread, `m.in_reply_to` is only a fallback for clients without threads
    // unless `is_falling_back` is false.
    let reply_to = relates["m.in_reply_to"]["event_id"]
        .as_str()
        .filter(|_| thread_id.is_none() || relates["is_falling_back"] == false)
        .map(str::to_string);
    let (text, attachments) = match msgtype {
        "m.text" | "m.emote" => (strip_fallback(body, reply_to.is_some()), Vec::new()),
        "m.image" | "m.audio" | "m.file" | "m.video" => {
            let attachment = attachment(content, msgtype)?;
            // A body other than the file's name is its caption.
            let caption = match content["filename"].as_str() {
                Some(name) if name != body => body.to_string(),
                _ => String::new(),
            };
            (caption, vec![attachment])
        }
        _ => return None, // m.notice (other bots), m.location, …
    };
    if text.trim().is_empty() && attachments.is_empty() {
        return None;
    }
    let replied_to_us =
        reply_to.as_deref().is_some_and(ours) || thread_id.as_deref().is_some_and(ours);
    let addressed = room.direct || mentions(content, me) || replied_to_us;
    let chat_kind = match (room.direct, &thread_id) {
        (true, _) => ChatKind::Dm,
        (false, Some(_)) => ChatKind::Thread,
        (false, None) => ChatKind::Group,
    };
    let text = readable(&text, me);
    let text = bang_command(&text).unwrap_or(text);
    let received_at = event["origin_server_ts"]
        .as_u64()
        .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms))
        .unwrap_or_else(crate::clock::now);
    Some(Incoming {
        inbound: InboundMessage {
            channel: CHANNEL.into(),
            account: "default".into(),
            chat_id: room.id.to_string(),
            chat_kind,
            thread_id,
            sender: Sender {
                raw_id: sender.to_string(),
                canonical: format!("{CHANNEL}:{sender}"),
                // Filled in from the room's member list before it goes on the bus.
                display_name: sender.to_string(),
            },
            message_id: event_id.to_string(),
            text,
            media: Vec::new(),
            reply_to,
            addressed,
            received_at,
            deliver_to: None,
            scheduled: None,
        },
        attachments,
    })
}

/// Whether the message names the bot: `m.mentions`, a pill, or its user id.
fn mentions(content: &Value, me: &Me) -> bool {
    let id = me.user_id.as_str();
    let listed = content["m.mentions"]["user_ids"]
        .as_array()
        .is_some_and(|ids| ids.iter().any(|u| u == id));
    let pill = content["formatted_body"]
        .as_str()
        .is_some_and(|html| html.contains(&format!("matrix.to/#/{id}")));
    let body = content["body"].as_str().unwrap_or_default();
    listed || pill || body.contains(id)
}

/// The text without a leading address of the bot ("pincer: ", "@pincer:server ").
fn readable(text: &str, me: &Me) -> String {
    let trimmed = text.trim_start();
    let names = [Some(me.user_id.as_str()), me.name.as_deref()];
    for name in names.into_iter().flatten() {
        if let Some(rest) = trimmed.strip_prefix(name) {
            let rest = rest.trim_start_matches([':', ',']).trim_start();
            if !rest.is_empty() {
                return rest.to_string();
            }
        }
    }
    text.to_string()
}

/// A reply's body starts with the quoted message (`> ` lines, then a blank line).
fn strip_fallback(body: &str, is_reply: bool) -> String {
    if !is_reply || !body.starts_with("> ") {
        return body.to_string();
    }
    let mut lines = body.lines();
    for line in lines.by_ref() {
        if !line.starts_with('>') {
            break;
        }
    }
    lines.collect::<Vec<_>>().join("\n")
}

/// A file message's attachment: `Remote::file` is the JSON of its `url` (plain) or
/// `file` (encrypted: the key travels with it to the fetcher, never to the model).
fn attachment(content: &Value, msgtype: &str) -> Option<Attachment> {
    let source = match (&content["file"], &content["url"]) {
        (file @ Value::Object(_), _) => serde_json::json!({ "file": file }),
        (_, Value::String(url)) => serde_json::json!({ "url": url }),
        _ => return None,
    };
    let info = &content["info"];
    let voice = content.get("org.matrix.msc3245.voice").is_some();
    let kind = match msgtype {
        "m.image" => MediaKind::Photo,
        "m.audio" if voice => MediaKind::Voice,
        "m.audio" => MediaKind::Audio,
        "m.video" => MediaKind::Video,
        _ => MediaKind::Document,
    };
    let mime = info["mimetype"].as_str().map(str::to_string);
    let file_name = content["filename"]
        .as_str()
        .or(content["body"].as_str())
        .filter(|n| !n.trim().is_empty())
        .map(|name| with_extension(name, mime.as_deref()))
        .unwrap_or_else(|| default_name(kind, mime.as_deref()));
    let duration_ms = info["duration"]
        .as_u64()
        .or(content["org.matrix.msc1767.audio"]["duration"].as_u64());
    Some(Attachment {
        kind,
        file: source.to_string(),
        file_name,
        mime,
        size: info["size"].as_u64(),
        duration_secs: duration_ms.map(|ms| u32::try_from(ms.div_ceil(1000)).unwrap_or(u32::MAX)),
    })
}

/// A body such as "Voice message" names no file: give it the type's extension, which
/// transcription and the inbox go by.
fn with_extension(name: &str, mime: Option<&str>) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() && !ext.contains(' ') => {
            name.to_string()
        }
        _ => format!("{}.{}", name.trim().replace(' ', "-"), extension(mime)),
    }
}

fn extension(mime: Option<&str>) -> String {
    mime.and_then(|m| m.split('/').nth(1))
        .map(|e| e.split([';', '+']).next().unwrap_or(e).trim().to_string())
        .filter(|e| !e.is_empty() && e.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or_else(|| "bin".into())
}

fn default_name(kind: MediaKind, mime: Option<&str>) -> String {
    let ext = extension(mime);
    let stem = match kind {
        MediaKind::Photo => "image",
        MediaKind::Voice => "voice",
        MediaKind::Audio => "audio",
        MediaKind::Video => "video",
        MediaKind::Document => "file",
    };
    format!("{stem}.{ext}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn me() -> Me {
        Me {
            user_id: "@pincer:example.org".try_into().unwrap(),
            name: Some("Pincer".into()),
        }
    }

    fn room(direct: bool) -> RoomFacts<'static> {
        RoomFacts {
            id: "!room:example.org",
            direct,
        }
    }

    fn text_event(content: Value) -> Value {
        json!({
            "type": "m.room.message", "sender": "@ann:example.org", "event_id": "$e1",
            "origin_server_ts": 1_700_000_000_000u64, "content": content,
        })
    }

    fn incoming(event: &Value, direct: bool) -> Option<Incoming> {
        match classify(event, &room(direct), &me(), &|id| id == "$ours") {
            Some(Event::Message(m)) => Some(*m),
            _ => None,
        }
    }

    #[test]
    fn a_group_message_is_addressed_only_by_a_mention_or_a_reply_to_the_bot() {
        let plain = text_event(json!({"msgtype": "m.text", "body": "hello all"}));
        assert!(!incoming(&plain, false).unwrap().inbound.addressed);
        assert!(incoming(&plain, true).unwrap().inbound.addressed);
        let listed = text_event(json!({"msgtype": "m.text", "body": "Pincer: hi",
            "m.mentions": {"user_ids": ["@pincer:example.org"]}}));
        let m = incoming(&listed, false).unwrap().inbound;
        assert!(m.addressed);
        assert_eq!(m.text, "hi");
        let pill = text_event(json!({"msgtype": "m.text", "body": "Pincer hi",
            "formatted_body": "<a href=\"https://matrix.to/#/@pincer:example.org\">Pincer</a> hi"}));
        assert!(incoming(&pill, false).unwrap().inbound.addressed);
        let reply = text_event(
            json!({"msgtype": "m.text", "body": "> <@pincer:example.org> old\n\nnew words",
            "m.relates_to": {"m.in_reply_to": {"event_id": "$ours"}}}),
        );
        let m = incoming(&reply, false).unwrap().inbound;
        assert!(m.addressed);
        assert_eq!(m.text, "new words");
        assert_eq!(m.reply_to.as_deref(), Some("$ours"));
    }

    #[test]
    fn a_thread_message_belongs_to_its_thread_and_edits_and_notices_are_skipped() {
        let threaded = text_event(json!({"msgtype": "m.text", "body": "in thread",
            "m.relates_to": {"rel_type": "m.thread", "event_id": "$root", "is_falling_back": true,
                "m.in_reply_to": {"event_id": "$prev"}}}));
        let m = incoming(&threaded, false).unwrap().inbound;
        assert_eq!(m.thread_id.as_deref(), Some("$root"));
        assert_eq!(m.chat_kind, ChatKind::Thread);
        assert_eq!(m.reply_to, None);
        let edit = text_event(json!({"msgtype": "m.text", "body": "* fixed",
            "m.relates_to": {"rel_type": "m.replace", "event_id": "$e0"}}));
        assert!(incoming(&edit, true).is_none());
        let notice = text_event(json!({"msgtype": "m.notice", "body": "a bot"}));
        assert!(incoming(&notice, true).is_none());
        let command = text_event(json!({"msgtype": "m.text", "body": "!new"}));
        assert_eq!(incoming(&command, true).unwrap().inbound.text, "/new");
    }

    #[test]
    fn files_keep_their_source_and_voice_notes_are_voice() {
        let voice = text_event(json!({"msgtype": "m.audio", "body": "Voice message",
            "url": "mxc://example.org/abc", "info": {"mimetype": "audio/ogg", "size": 1200, "duration": 2500},
            "org.matrix.msc3245.voice": {}}));
        let m = incoming(&voice, true).unwrap();
        let a = &m.attachments[0];
        assert_eq!(a.kind, MediaKind::Voice);
        assert_eq!(a.duration_secs, Some(3));
        assert_eq!(a.file, r#"{"url":"mxc://example.org/abc"}"#);
        assert_eq!(a.file_name, "Voice-message.ogg");
        let encrypted = text_event(
            json!({"msgtype": "m.image", "body": "cat.png", "filename": "cat.png",
            "file": {"url": "mxc://example.org/enc", "key": {"k": "x"}, "iv": "y", "hashes": {}, "v": "v2"},
            "info": {"mimetype": "image/png"}}),
        );
        let m = incoming(&encrypted, true).unwrap();
        assert_eq!(m.attachments[0].kind, MediaKind::Photo);
        assert!(m.attachments[0].file.contains("\"file\""));
        assert_eq!(m.inbound.text, "");
    }

    #[test]
    fn the_bots_own_events_and_reactions() {
        let mut own = text_event(json!({"msgtype": "m.text", "body": "me"}));
        own["sender"] = json!("@pincer:example.org");
        assert!(classify(&own, &room(true), &me(), &|_| false).is_none());
        let reaction = json!({"type": "m.reaction", "sender": "@ann:example.org", "event_id": "$r",
            "content": {"m.relates_to": {"rel_type": "m.annotation", "event_id": "$q", "key": "👍"}}});
        match classify(&reaction, &room(true), &me(), &|_| false) {
            Some(Event::Reaction { on, key, .. }) => {
                assert_eq!((on.as_str(), key.as_str()), ("$q", "👍"))
            }
            other => panic!("{other:?}"),
        }
    }
}
