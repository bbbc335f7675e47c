//! `Incoming`: what a user sends the bot, built up in a test, and its injection as a
//! MESSAGE_CREATE dispatch (stored too, so REST listings and replies can find it).
//! Attached files become attachment objects with `content_type`; a voice message is
//! Discord's: one `voice-message.ogg` (`audio/ogg`, `duration_secs`, `waveform`) on a
//! message flagged `IS_VOICE_MESSAGE`.

use base64::Engine;
use serde_json::{Value, json};

use super::BOT_ID;
use super::objects::{self, Draft};
use super::state::{Inner, Stored};

/// Where a message is posted.
#[derive(Debug, Clone, Copy)]
enum Place {
    Dm,
    Channel(u64),
    Thread(u64),
}

/// A message from test user `user` (a small number, see `objects::user_id`).
#[derive(Debug, Clone)]
pub struct Incoming {
    place: Place,
    user: u64,
    text: String,
    mention: bool,
    reply_to: Option<u64>,
    /// (name, content type, bytes), in order.
    files: Vec<(String, String, Vec<u8>)>,
    /// A voice message's bytes and length.
    voice: Option<(Vec<u8>, f64)>,
}

/// The message flag Discord sets on a voice message.
const IS_VOICE_MESSAGE: u64 = 1 << 13;

impl Incoming {
    /// A direct message to the bot.
    pub fn dm(user: u64, text: &str) -> Incoming {
        Incoming::new(Place::Dm, user, text)
    }

    /// A message in guild text channel `group`.
    pub fn channel(group: u64, user: u64, text: &str) -> Incoming {
        Incoming::new(Place::Channel(group), user, text)
    }

    /// A message in the thread under guild text channel `group`.
    pub fn thread(group: u64, user: u64, text: &str) -> Incoming {
        Incoming::new(Place::Thread(group), user, text)
    }

    fn new(place: Place, user: u64, text: &str) -> Incoming {
        Incoming {
            place,
            user,
            text: text.to_string(),
            mention: false,
            reply_to: None,
            files: Vec::new(),
            voice: None,
        }
    }

    /// Starts the text with `<@BOT>` and lists the bot in `mentions`, as Discord does.
    pub fn mentioning_bot(mut self) -> Incoming {
        self.mention = true;
        self
    }

    /// A reply to message `id` of the same channel.
    pub fn replying_to(mut self, id: u64) -> Incoming {
        self.reply_to = Some(id);
        self
    }

    /// With an attached file whose `content_type` is `mime`; call again for more.
    pub fn with_file(mut self, name: &str, mime: &str, bytes: Vec<u8>) -> Incoming {
        self.files.push((name.to_string(), mime.to_string(), bytes));
        self
    }

    /// A voice message (recorded in the Discord app): the attachment
    /// `voice-message.ogg`, `audio/ogg`, with `duration_secs` and a `waveform`, and the
    /// message's `IS_VOICE_MESSAGE` flag. The text should be empty, as Discord has it.
    pub fn with_voice(mut self, bytes: Vec<u8>, duration_secs: f64) -> Incoming {
        self.voice = Some((bytes, duration_secs));
        self
    }

    /// The channel the message goes to.
    pub fn channel_id(&self) -> u64 {
        match self.place {
            Place::Dm => objects::dm_channel(self.user),
            Place::Channel(g) => objects::text_channel(g),
            Place::Thread(g) => objects::thread_channel(g),
        }
    }
}

/// Stores and dispatches `msg`; returns its message id.
pub(crate) fn inject(inner: &mut Inner, base_url: &str, msg: Incoming) -> u64 {
    let channel = msg.channel_id();
    let id = inner.snowflake();
    let author = objects::user_id(msg.user);
    let mut attachments = Vec::new();
    let voice = msg.voice.map(|(bytes, secs)| {
        let name = "voice-message.ogg".to_string();
        (name, "audio/ogg".to_string(), bytes, Some(secs))
    });
    let files = msg.files.into_iter().map(|(n, m, b)| (n, m, b, None));
    for (name, mime, bytes, duration) in files.chain(voice.clone()) {
        let file_id = inner.snowflake();
        let path = format!("/attachments/{channel}/{file_id}/{name}");
        let mut attachment = objects::attachment(
            file_id,
            &name,
            &mime,
            bytes.len(),
            &format!("{base_url}{path}"),
        );
        if let Some(secs) = duration {
            attachment["duration_secs"] = json!(secs);
            // 256 one-byte samples, base64, as Discord sends them.
            let waveform = base64::engine::general_purpose::STANDARD.encode([128u8; 256]);
            attachment["waveform"] = json!(waveform);
        }
        attachments.push(attachment);
        inner.files.insert(path, (bytes, mime));
    }
    let replied: Option<Value> = msg.reply_to.and_then(|r| {
        inner
            .messages
            .iter()
            .find(|m| m.id == r && m.channel == channel)
            .map(|m| m.json.clone())
    });
    let content = if msg.mention {
        format!("<@{BOT_ID}> {}", msg.text)
    } else {
        msg.text
    };
    let draft = Draft {
        author,
        content,
        mentions: if msg.mention {
            vec![BOT_ID]
        } else {
            Vec::new()
        },
        attachments,
        components: json!([]),
        replied,
    };
    let mut json = objects::message(id, channel, &draft);
    if voice.is_some() {
        json["flags"] = json!(IS_VOICE_MESSAGE);
    }
    inner.messages.push(Stored {
        id,
        channel,
        author,
        from_bot: false,
        json: json.clone(),
        edits: 0,
        at: std::time::Instant::now(),
    });
    inner
        .gateway
        .dispatch("MESSAGE_CREATE", objects::gateway_message(&json));
    id
}
