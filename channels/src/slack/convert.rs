//! A Slack event as an `InboundMessage`: who sent it, which conversation and thread,
//! the text made readable, attached files to fetch, and whether the bot was addressed
//! (a DM, an @mention, or a reply in a thread the bot started).
//!
//! Text: a leading mention of the bot is only addressing and is dropped; other mentions
//! of it read `@name` (as Telegram keeps `@bot` in the text); Slack's `<…>` markup
//! becomes plain text and `&amp;` `&lt;` `&gt;` are unescaped. A typed `/new` never
//! reaches a bot (the Slack client takes it unless it is a registered slash command), so
//! a message starting `!new` (or any of our commands) is read as `/new`.

use std::time::{Duration, SystemTime};

use slack_morphism::prelude::*;

use super::Me;
use crate::inbox::Attachment;
use crate::message::{ChatKind, InboundMessage, MediaKind, Sender};

pub const CHANNEL: &str = "slack";

/// An event worth answering, before the adapter fills in the sender's name and files.
#[derive(Debug)]
pub(super) struct Incoming {
    pub inbound: InboundMessage,
    pub attachments: Vec<Attachment>,
    /// (channel, ts): a mention arrives as `app_mention` and as `message` with this key.
    pub key: (String, String),
}

/// The message facts both event kinds share.
struct Facts<'a> {
    channel: &'a str,
    channel_type: Option<&'a str>,
    ts: &'a str,
    thread_ts: Option<&'a str>,
    user: &'a str,
    text: &'a str,
    files: &'a [SlackFile],
    mention_event: bool,
}

/// `None` for events nobody should answer: other event types, bots (ourselves
/// included), edits, deletions and other service messages. `parent_user_id` is the
/// raw event's field of that name (who started the thread), which slack-morphism does
/// not model.
pub(super) fn inbound(
    event: &SlackEventCallbackBody,
    parent_user_id: Option<&str>,
    me: &Me,
) -> Option<Incoming> {
    let no_files: &[SlackFile] = &[];
    let facts = match event {
        SlackEventCallbackBody::Message(message) => {
            let plain = match &message.subtype {
                None => true,
                Some(SlackMessageEventType::FileShare | SlackMessageEventType::ThreadBroadcast) => {
                    true
                }
                Some(_) => false, // message_changed, bot_message, joins, ...
            };
            if !plain || message.sender.bot_id.is_some() {
                return None;
            }
            let content = message.content.as_ref();
            Facts {
                channel: message.origin.channel.as_ref()?.0.as_str(),
                channel_type: message.origin.channel_type.as_ref().map(|t| t.0.as_str()),
                ts: message.origin.ts.0.as_str(),
                thread_ts: message.origin.thread_ts.as_ref().map(|t| t.0.as_str()),
                user: message.sender.user.as_ref()?.0.as_str(),
                text: content.and_then(|c| c.text.as_deref()).unwrap_or_default(),
                files: content.and_then(|c| c.files.as_deref()).unwrap_or(no_files),
                mention_event: false,
            }
        }
        SlackEventCallbackBody::AppMention(mention) => Facts {
            channel: mention.channel.0.as_str(),
            channel_type: None,
            ts: mention.origin.ts.0.as_str(),
            thread_ts: mention.origin.thread_ts.as_ref().map(|t| t.0.as_str()),
            user: mention.user.0.as_str(),
            text: mention.content.text.as_deref().unwrap_or_default(),
            files: mention.content.files.as_deref().unwrap_or(no_files),
            mention_event: true,
        },
        _ => return None,
    };
    if facts.user == me.user_id {
        return None;
    }
    let attachments: Vec<Attachment> = facts.files.iter().filter_map(attachment).collect();
    let text = readable(facts.text, me);
    if text.trim().is_empty() && attachments.is_empty() {
        return None;
    }
    let is_dm = match facts.channel_type {
        Some(kind) => kind == "im",
        None => facts.channel.starts_with('D'),
    };
    // A thread is its own session; a reply's thread_ts is its parent's ts.
    let thread_id = facts
        .thread_ts
        .filter(|thread| *thread != facts.ts)
        .map(str::to_string);
    let chat_kind = match (is_dm, &thread_id) {
        (true, _) => ChatKind::Dm,
        (false, Some(_)) => ChatKind::Thread,
        (false, None) => ChatKind::Group,
    };
    let addressed = is_dm
        || facts.mention_event
        || mentions(facts.text, &me.user_id)
        || (thread_id.is_some() && parent_user_id == Some(me.user_id.as_str()));
    let inbound = InboundMessage {
        channel: CHANNEL.into(),
        account: "default".into(),
        chat_id: facts.channel.to_string(),
        chat_kind,
        thread_id,
        sender: Sender {
            raw_id: facts.user.to_string(),
            canonical: format!("{CHANNEL}:{}", facts.user),
            // Filled in from users.info before it goes on the bus.
            display_name: facts.user.to_string(),
        },
        message_id: format!("{}:{}", facts.channel, facts.ts),
        text,
        media: Vec::new(),
        reply_to: None,
        addressed,
        received_at: received_at(facts.ts),
        deliver_to: None,
        scheduled: None,
    };
    Some(Incoming {
        inbound,
        attachments,
        key: (facts.channel.to_string(), facts.ts.to_string()),
    })
}

/// A registered slash command (`/new`, typed in Slack) as a message: its text is the
/// command and its arguments, and it always addresses the bot.
pub(super) fn slash_command(payload: &serde_json::Value, me: &Me) -> Option<Incoming> {
    let field = |name: &str| payload[name].as_str().filter(|v| !v.is_empty());
    let command = field("command")?;
    let channel = field("channel_id")?;
    let user = field("user_id")?;
    if user == me.user_id {
        return None;
    }
    let trigger = field("trigger_id").unwrap_or(command);
    let text = match field("text") {
        Some(args) => format!("{command} {}", unescape(args)),
        None => command.to_string(),
    };
    let inbound = InboundMessage {
        channel: CHANNEL.into(),
        account: "default".into(),
        chat_id: channel.to_string(),
        chat_kind: if channel.starts_with('D') {
            ChatKind::Dm
        } else {
            ChatKind::Group
        },
        thread_id: None,
        sender: Sender {
            raw_id: user.to_string(),
            canonical: format!("{CHANNEL}:{user}"),
            display_name: field("user_name").unwrap_or(user).to_string(),
        },
        message_id: format!("{channel}:command:{trigger}"),
        text,
        media: Vec::new(),
        reply_to: None,
        addressed: true,
        received_at: crate::clock::now(),
        deliver_to: None,
        scheduled: None,
    };
    Some(Incoming {
        inbound,
        attachments: Vec::new(),
        key: (channel.to_string(), trigger.to_string()),
    })
}

/// Whether `text` mentions `user` (`<@U123>` or `<@U123|name>`).
fn mentions(text: &str, user: &str) -> bool {
    text.contains(&format!("<@{user}>")) || text.contains(&format!("<@{user}|"))
}

/// Slack's ts is "seconds.micros" since the epoch.
fn received_at(ts: &str) -> SystemTime {
    let secs = ts
        .split('.')
        .next()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_default();
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

fn attachment(file: &SlackFile) -> Option<Attachment> {
    let url = file
        .url_private_download
        .as_ref()
        .or(file.url_private.as_ref())?
        .to_string();
    let mime = file.mimetype.as_ref().map(|m| m.0.clone());
    let kind = match mime.as_deref().and_then(|m| m.split('/').next()) {
        Some("image") => MediaKind::Photo,
        Some("audio") => MediaKind::Audio,
        Some("video") => MediaKind::Video,
        _ => MediaKind::Document,
    };
    Some(Attachment {
        kind,
        file: url,
        file_name: file
            .name
            .clone()
            .unwrap_or_else(|| format!("file-{}", file.id.0)),
        mime,
        size: None, // Slack's file objects carry no size slack-morphism reads
        duration_secs: None,
    })
}

/// Slack's text as a person would read it (see the module doc).
pub(super) fn readable(text: &str, me: &Me) -> String {
    let trimmed = text.trim_start();
    let rest = [format!("<@{}>", me.user_id), format!("<@{}|", me.user_id)]
        .iter()
        .find_map(|prefix| {
            let after = trimmed.strip_prefix(prefix.as_str())?;
            // `<@U1|name>`: skip to the closing `>`.
            Some(match prefix.ends_with('|') {
                true => after.split_once('>').map_or("", |(_, r)| r),
                false => after,
            })
        })
        .map(|rest| {
            rest.trim_start()
                .trim_start_matches([',', ':'])
                .trim_start()
        })
        .unwrap_or(trimmed);
    let mut out = String::with_capacity(rest.len());
    let mut remaining = rest;
    while let Some(open) = remaining.find('<') {
        out.push_str(&remaining[..open]);
        let after = &remaining[open + 1..];
        let Some(close) = after.find('>') else {
            out.push_str(&remaining[open..]);
            remaining = "";
            break;
        };
        out.push_str(&link_text(&after[..close], me));
        remaining = &after[close + 1..];
    }
    out.push_str(remaining);
    let text = unescape(&out);
    command(&text).unwrap_or(text)
}

/// The readable form of one `<…>` span.
fn link_text(inner: &str, me: &Me) -> String {
    let (target, label) = match inner.split_once('|') {
        Some((target, label)) => (target, Some(label)),
        None => (inner, None),
    };
    if let Some(user) = target.strip_prefix('@') {
        if user == me.user_id {
            return format!("@{}", me.name);
        }
        return format!("@{}", label.unwrap_or(user));
    }
    if let Some(channel) = target.strip_prefix('#') {
        return format!("#{}", label.unwrap_or(channel));
    }
    if let Some(special) = target.strip_prefix('!') {
        // <!here>, <!channel>, <!subteam^ID|@team>
        return label.map_or_else(|| format!("@{special}"), str::to_string);
    }
    match label {
        Some(label) if label != target => format!("{label} ({target})"),
        _ => target.to_string(),
    }
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// `!new args` → `/new args`, for our commands only.
fn command(text: &str) -> Option<String> {
    crate::message::bang_command(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Me {
        Me {
            user_id: "UBOT".into(),
            name: "pincer".into(),
        }
    }

    fn event(json: serde_json::Value) -> SlackEventCallbackBody {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn text_is_made_readable_and_bang_commands_become_commands() {
        let me = me();
        assert_eq!(
            readable(
                "<@UBOT> see <https://e.com|the site> &amp; ask <@U7|ann> in <#C1|general>",
                &me
            ),
            "see the site (https://e.com) & ask @ann in #general"
        );
        assert_eq!(readable("hey <@UBOT>, 1 &lt; 2", &me), "hey @pincer, 1 < 2");
        assert_eq!(readable("<@UBOT> !new", &me), "/new");
        assert_eq!(readable("!model heavy", &me), "/model heavy");
        assert_eq!(readable("!important news", &me), "!important news");
    }

    #[test]
    fn dms_channels_and_threads() {
        let me = me();
        let dm = event(
            serde_json::json!({"type":"message","channel":"D1","channel_type":"im","user":"U1","text":"hi","ts":"1700000000.000100"}),
        );
        let dm = inbound(&dm, None, &me).unwrap().inbound;
        assert_eq!((dm.chat_kind, dm.addressed), (ChatKind::Dm, true));
        assert_eq!(dm.sender.canonical, "slack:U1");
        assert_eq!(dm.session_key().to_string(), "slack:dm:D1");

        let plain = event(
            serde_json::json!({"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"lunch?","ts":"1.2"}),
        );
        let plain = inbound(&plain, None, &me).unwrap().inbound;
        assert_eq!((plain.chat_kind, plain.addressed), (ChatKind::Group, false));

        let reply = event(
            serde_json::json!({"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"and?","ts":"1.5","thread_ts":"1.2"}),
        );
        let reply = inbound(&reply, Some("UBOT"), &me).unwrap().inbound;
        assert_eq!(reply.chat_kind, ChatKind::Thread);
        assert_eq!(reply.thread_id.as_deref(), Some("1.2"));
        assert!(
            reply.addressed,
            "a reply in the bot's own thread addresses it"
        );
        assert_eq!(reply.session_key().to_string(), "slack:group:C1:thread:1.2");

        let mention = event(
            serde_json::json!({"type":"app_mention","channel":"C1","user":"U1","text":"<@UBOT> hi","ts":"1.6"}),
        );
        let mention = inbound(&mention, None, &me).unwrap();
        assert!(mention.inbound.addressed);
        assert_eq!(mention.key, ("C1".to_string(), "1.6".to_string()));
    }

    #[test]
    fn a_registered_slash_command_is_a_command_message() {
        let payload = serde_json::json!({"command":"/model","text":"heavy","channel_id":"D1","user_id":"U1","user_name":"ann","trigger_id":"t1"});
        let incoming = slash_command(&payload, &me()).unwrap();
        assert_eq!(incoming.inbound.text, "/model heavy");
        assert_eq!(incoming.inbound.chat_kind, ChatKind::Dm);
        assert!(incoming.inbound.addressed);
    }

    #[test]
    fn bots_edits_and_our_own_messages_are_ignored() {
        let me = me();
        for json in [
            serde_json::json!({"type":"message","channel":"C1","user":"UBOT","text":"mine","ts":"1.1"}),
            serde_json::json!({"type":"message","channel":"C1","bot_id":"B1","user":"U9","text":"bot","ts":"1.1"}),
            serde_json::json!({"type":"message","subtype":"message_changed","channel":"C1","ts":"1.1","message":{"ts":"1.0","text":"x","user":"U1"}}),
            serde_json::json!({"type":"message","subtype":"channel_join","channel":"C1","user":"U1","text":"joined","ts":"1.1"}),
        ] {
            assert!(inbound(&event(json.clone()), None, &me).is_none(), "{json}");
        }
    }
}
