//! `Incoming`, what a user sends, and the Slack event payloads it becomes.

use serde_json::{Value, json};

use super::BOT_USER;
use super::record::Posted;
use super::state::{Inner, StoredFile};

/// A message a user writes; `FakeSlack::inject` delivers it.
#[derive(Debug, Clone)]
pub struct Incoming {
    pub user: String,
    pub channel: String,
    pub text: String,
    pub thread_ts: Option<String>,
    /// The thread's parent was written by this user (Slack's `parent_user_id`).
    pub parent_user: Option<String>,
    /// Mention the bot: `<@UBOT>` starts the text, and (outside DMs) an `app_mention`
    /// envelope follows the `message` one.
    pub mention: bool,
    /// Files attached: (name, mimetype, bytes); each becomes a file object with `id`,
    /// `name`, `mimetype`, `filetype`, `size` and `url_private` served by the fake.
    pub files: Vec<(String, String, Vec<u8>)>,
    /// Files shared from outside Slack (`is_external`, e.g. Google Drive): (name, url).
    pub external_files: Vec<(String, String)>,
    /// Sent by a bot (carries `bot_id`).
    pub bot: bool,
    /// A `message_changed` event instead of a new message.
    pub edit: bool,
}

/// `U{n}`.
pub(super) fn user_id(user: u64) -> String {
    format!("U{user}")
}

impl Incoming {
    /// `user` writes in their DM with the bot (`D{user}`).
    pub fn dm(user: u64, text: &str) -> Incoming {
        Incoming::channel(&format!("D{user}"), user, text)
    }

    /// `user` writes in `channel` ("C1", or "D7" for a DM).
    pub fn channel(channel: &str, user: u64, text: &str) -> Incoming {
        Incoming {
            user: user_id(user),
            channel: channel.to_string(),
            text: text.to_string(),
            thread_ts: None,
            parent_user: None,
            mention: false,
            files: Vec::new(),
            external_files: Vec::new(),
            bot: false,
            edit: false,
        }
    }

    pub fn mentioning_bot(mut self) -> Incoming {
        self.mention = true;
        self
    }

    /// A reply in the thread under the message `thread_ts`.
    pub fn in_thread(mut self, thread_ts: &str) -> Incoming {
        self.thread_ts = Some(thread_ts.to_string());
        self
    }

    /// The thread's parent message was the bot's.
    pub fn under_bot_message(mut self) -> Incoming {
        self.parent_user = Some(BOT_USER.to_string());
        self
    }

    pub fn with_file(mut self, name: &str, mimetype: &str, bytes: Vec<u8>) -> Incoming {
        self.files.push((name.into(), mimetype.into(), bytes));
        self
    }

    /// A file stored outside Slack, whose `url_private` is `url`.
    pub fn with_external_file(mut self, name: &str, url: &str) -> Incoming {
        self.external_files.push((name.into(), url.into()));
        self
    }

    pub fn from_bot(mut self) -> Incoming {
        self.bot = true;
        self
    }

    pub fn edited(mut self) -> Incoming {
        self.edit = true;
        self
    }

    fn is_dm(&self) -> bool {
        self.channel.starts_with('D')
    }
}

/// Records the message and queues its envelopes; returns its ts.
pub(crate) fn inject(inner: &mut Inner, msg: Incoming, base: &str) -> String {
    let (ts, payloads) = events(inner, msg, base);
    for payload in payloads {
        inner.envelope("events_api", payload);
    }
    ts
}

/// Records the message; returns its ts and the `event_callback` payloads Slack sends
/// for it (`message`, then `app_mention` for a mention outside a DM).
pub(crate) fn events(inner: &mut Inner, msg: Incoming, base: &str) -> (String, Vec<Value>) {
    let ts = inner.ts();
    let text = if msg.mention {
        format!("<@{BOT_USER}> {}", msg.text)
    } else {
        msg.text.clone()
    };
    let mut event = json!({
        "type": "message",
        "channel": msg.channel,
        "channel_type": if msg.is_dm() { "im" } else { "channel" },
        "user": msg.user,
        "text": text,
        "ts": ts,
        "event_ts": ts,
        "team": "TFAKE",
    });
    if let Some(thread) = &msg.thread_ts {
        event["thread_ts"] = json!(thread);
        if let Some(parent) = &msg.parent_user {
            event["parent_user_id"] = json!(parent);
        }
    }
    if msg.bot {
        event["bot_id"] = json!("BOTHER");
        event["subtype"] = json!("bot_message");
    }
    if !msg.files.is_empty() || !msg.external_files.is_empty() {
        let mut files = Vec::new();
        for (name, mime, bytes) in &msg.files {
            let id = inner.id("F");
            let url = format!("{base}/files/{id}/{name}");
            files.push(json!({
                "id": id, "name": name, "title": name, "mimetype": mime,
                "filetype": filetype(name),
                "size": bytes.len(), "url_private": url, "url_private_download": url,
            }));
            inner.files.insert(
                id,
                StoredFile {
                    name: name.clone(),
                    bytes: bytes.clone(),
                },
            );
        }
        for (name, url) in &msg.external_files {
            files.push(json!({
                "id": inner.id("F"), "name": name, "title": name,
                "mimetype": "application/octet-stream", "is_external": true,
                "external_type": "gdrive", "url_private": url,
            }));
        }
        event["files"] = Value::Array(files);
        event["subtype"] = json!("file_share");
    }
    if msg.edit {
        event = json!({
            "type": "message", "subtype": "message_changed", "channel": msg.channel,
            "channel_type": if msg.is_dm() { "im" } else { "channel" },
            "ts": ts, "event_ts": ts, "hidden": true,
            "message": { "type": "message", "user": msg.user, "text": text, "ts": ts },
        });
    }
    inner.messages.push(Posted {
        channel: msg.channel.clone(),
        ts: ts.clone(),
        text: text.clone(),
        thread_ts: msg.thread_ts.clone(),
        blocks: None,
        edits: 0,
        history: vec![text.clone()],
        user: msg.user.clone(),
        ephemeral: false,
        at: std::time::Instant::now(),
    });
    let mut payloads = vec![callback(inner, event.clone())];
    if msg.mention && !msg.is_dm() && !msg.edit && !msg.bot {
        let mut mention = json!({
            "type": "app_mention", "channel": msg.channel, "user": msg.user, "text": text,
            "ts": ts, "event_ts": ts, "team": "TFAKE",
        });
        if let Some(thread) = &msg.thread_ts {
            mention["thread_ts"] = json!(thread);
        }
        if let Some(files) = event.get("files") {
            mention["files"] = files.clone();
        }
        payloads.push(callback(inner, mention));
    }
    (ts, payloads)
}

/// Slack's `filetype` for a file called `name`: mostly its extension, with Slack's own
/// names for a few (`text`, `markdown`, `jpg`) and `binary` for none.
fn filetype(name: &str) -> String {
    let extension = crate::mime::extension(name);
    match extension.as_str() {
        "" => "binary".into(),
        "txt" => "text".into(),
        "md" => "markdown".into(),
        "jpeg" => "jpg".into(),
        _ => extension,
    }
}

/// An `event_callback` around `event`.
pub(crate) fn callback(inner: &mut Inner, event: Value) -> Value {
    json!({
        "token": "fake-verification-token",
        "team_id": "TFAKE",
        "api_app_id": "AFAKE",
        "event": event,
        "type": "event_callback",
        "event_id": inner.id("Ev"),
        "event_time": 1_700_000_000,
        "authorizations": [{ "team_id": "TFAKE", "user_id": BOT_USER, "is_bot": true }],
    })
}

/// A `block_actions` payload: `user` pressed the button with `value` on `message`.
pub(crate) fn button_press(
    user: &str,
    message: &Posted,
    value: &Value,
    action_id: &Value,
    base: &str,
) -> Value {
    json!({
        "type": "block_actions",
        "team": { "id": "TFAKE", "domain": "fake" },
        "user": { "id": user, "username": user, "name": user, "team_id": "TFAKE" },
        "api_app_id": "AFAKE",
        "token": "fake-verification-token",
        "container": {
            "type": "message", "message_ts": message.ts, "channel_id": message.channel,
            "is_ephemeral": false,
        },
        "trigger_id": "1.2.fake",
        "channel": { "id": message.channel, "name": "fake" },
        "message": {
            "type": "message", "user": message.user, "ts": message.ts, "text": message.text,
            "thread_ts": message.thread_ts, "blocks": message.blocks,
        },
        "response_url": format!("{base}/response/{}", message.ts),
        "actions": [{
            "type": "button", "action_id": action_id, "block_id": "pincer-approval",
            "value": value, "text": { "type": "plain_text", "text": "button" },
            "action_ts": "1700000001.000001",
        }],
    })
}
