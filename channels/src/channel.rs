//! The one trait every channel implements — listen (push inbound messages onto the
//! bus until shut down) and send one text chunk — and the capability traits a
//! platform may add (typing, edits, media, reactions, approvals, opening a person's
//! direct chat, health). A channel's capabilities are known at start-up (see
//! `registry`); none has a no-op default for a platform that lacks it.

use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::message::{Ack, Inbound, InboundMessage, Target};
use crate::pulse::{Liveness, Pulse};

/// The sending half of the inbound bus (bounded: a full bus makes adapters wait).
pub type InboundSender = mpsc::Sender<Inbound>;

/// Put `message` on the bus and wait until the core has stored it, for a platform that
/// redelivers what was not confirmed (Telegram's offset, Matrix's sync token): `false`
/// when the core is gone; a transient error when it could not be stored, so the caller
/// leaves it unconfirmed and the platform sends it again.
pub async fn store(bus: &InboundSender, message: InboundMessage) -> Result<bool, ChannelError> {
    let (ack, stored) = Ack::pair();
    if bus.send(Inbound::acked(message, ack)).await.is_err() {
        return Ok(false);
    }
    if stored.await.is_err() {
        return Err(ChannelError::transient(
            "a message could not be stored; it will be fetched again",
        ));
    }
    Ok(true)
}

/// A channel failure. `retryable` tells the manager whether trying again can help;
/// `retry_after` is the platform's own word on when.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ChannelError {
    pub message: String,
    pub retryable: bool,
    pub retry_after: Option<Duration>,
}

impl ChannelError {
    pub fn permanent(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retryable: false,
            retry_after: None,
        }
    }

    pub fn transient(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retryable: true,
            retry_after: None,
        }
    }

    pub fn rate_limited(message: impl Into<String>, retry_after: Duration) -> Self {
        Self {
            message: message.into(),
            retryable: true,
            retry_after: Some(retry_after),
        }
    }
}

#[async_trait]
pub trait Channel: Send + Sync {
    /// The registry name ("telegram", "terminal"): the first part of session keys.
    fn name(&self) -> &str;

    /// Push inbound messages into `bus` until `shutdown` fires or the source ends.
    async fn listen(
        &self,
        bus: InboundSender,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError>;

    /// Deliver one chunk of markdown, already split to the platform's limit (see
    /// `ChannelInfo::split`). Returns the platform's id of the message it created.
    async fn send(&self, target: &Target, text: &str) -> Result<String, ChannelError>;
}

/// Shows "typing…"; one call lasts a few seconds, the manager refreshes it.
#[async_trait]
pub trait TypingCapable: Send + Sync {
    async fn typing(&self, target: &Target) -> Result<(), ChannelError>;
}

/// Replaces the text of a message the bot sent (edit-in-place streaming).
#[async_trait]
pub trait MessageEditor: Send + Sync {
    async fn edit(&self, target: &Target, message_id: &str, text: &str)
    -> Result<(), ChannelError>;
}

/// A file to send and how to present it. It carries its bytes, read by whoever made it
/// (the `send_file` tool reads through the workspace confinement): an adapter never
/// opens a path a command could have swapped for a link since.
#[derive(Clone, PartialEq, Eq)]
pub struct OutboundMedia {
    /// The name the platform shows.
    pub file_name: String,
    pub bytes: Vec<u8>,
    /// Where the bytes came from, for a channel that shows the file's place instead of
    /// sending it (the terminal).
    pub source: Option<std::path::PathBuf>,
    pub caption: Option<String>,
    /// Show as a picture rather than a file, where the platform distinguishes.
    pub as_photo: bool,
    /// OGG/Opus audio to play as a voice message where the platform has them (Telegram's
    /// `sendVoice`); elsewhere it goes as an audio file.
    pub as_voice: bool,
}

impl std::fmt::Debug for OutboundMedia {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundMedia")
            .field("file_name", &self.file_name)
            .field("bytes", &self.bytes.len())
            .field("caption", &self.caption)
            .field("as_photo", &self.as_photo)
            .field("as_voice", &self.as_voice)
            .finish()
    }
}

/// Sends files. Each platform refuses, with a permanent error that says the limit,
/// a file over what its bots may upload.
#[async_trait]
pub trait MediaSender: Send + Sync {
    async fn send_media(
        &self,
        target: &Target,
        media: &OutboundMedia,
    ) -> Result<String, ChannelError>;
}

/// Puts an emoji reaction on a message.
#[async_trait]
pub trait ReactionCapable: Send + Sync {
    async fn react(
        &self,
        target: &Target,
        message_id: &str,
        emoji: &str,
    ) -> Result<(), ChannelError>;
}

/// Asks a question with buttons: an approval (Allow once / Always / Deny) or the
/// `question` tool's choices, each button carrying `approval::button_data(request_id,
/// choice)`. The adapter hands a press to the shared `approval::PendingApprovals` it was
/// built with, which decides whether the presser may answer; the adapter shows them
/// `Answered::toast`.
#[async_trait]
pub trait ApprovalPrompter: Send + Sync {
    /// Send the question with `buttons`; returns the platform's id of the message.
    async fn ask_with(
        &self,
        target: &Target,
        question: &str,
        request_id: &str,
        buttons: &[crate::approval::Button],
    ) -> Result<String, ChannelError>;

    /// Send an approval question (Allow once / Always / Deny).
    async fn ask(
        &self,
        target: &Target,
        question: &str,
        request_id: &str,
    ) -> Result<String, ChannelError> {
        let buttons = crate::approval::approval_buttons();
        self.ask_with(target, question, request_id, &buttons).await
    }

    /// Replace an answered (or expired) question with `text` and remove its buttons.
    async fn settle(
        &self,
        target: &Target,
        message_id: &str,
        text: &str,
    ) -> Result<(), ChannelError>;
}

/// Opens the bot's direct chat with a person, for a target that names a person rather
/// than a chat (`Target::user`). Only platforms whose user ids are not chat ids have one
/// (a Discord DM channel, a Slack IM); on Telegram a user's id is their private chat's
/// id, so it needs none. An adapter remembers what it opened (`direct::DirectChats`).
#[async_trait]
pub trait DirectOpener: Send + Sync {
    /// The chat id of the direct chat with `user_id` (the platform's own id, without the
    /// `channel:` prefix), opened if it is not open yet.
    async fn open_direct(&self, user_id: &str) -> Result<String, ChannelError>;
}

/// How a channel's connection is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Not connected yet.
    Starting,
    Up,
    /// Working through errors (retrying); the text says what is wrong.
    Degraded(String),
    /// Not working until someone acts (e.g. a revoked token); the text says what to do.
    Down(String),
}

impl std::fmt::Display for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Health::Starting => f.write_str("starting"),
            Health::Up => f.write_str("up"),
            Health::Degraded(why) => write!(f, "degraded: {why}"),
            Health::Down(why) => write!(f, "down: {why}"),
        }
    }
}

pub trait HealthChecker: Send + Sync {
    fn health(&self) -> Health;

    /// When the adapter last heard from its platform, its silence limit, and whether
    /// it is stuck (see `pulse`).
    fn liveness(&self) -> Liveness;
}

/// A channel's health as its adapter sets it, logged when it changes ("connected",
/// "reconnecting: …", what to fix), so a channel that drops and comes back says so;
/// and its pulse (what it last heard, and when).
pub struct HealthCell {
    channel: &'static str,
    state: std::sync::Mutex<Health>,
    pulse: Pulse,
}

impl HealthCell {
    /// `silence_limit`: how long the platform may stay silent before the adapter
    /// reconnects (`None` where silence is normal).
    pub fn new(channel: &'static str, silence_limit: Option<Duration>) -> Self {
        Self {
            channel,
            state: std::sync::Mutex::new(Health::Starting),
            pulse: Pulse::new(silence_limit),
        }
    }

    /// The adapter's pulse: `heard`, `attempt`, `waiting`.
    pub fn pulse(&self) -> &Pulse {
        &self.pulse
    }

    /// What the pulse says now.
    pub fn liveness(&self) -> Liveness {
        self.pulse.liveness()
    }

    pub fn get(&self) -> Health {
        self.state
            .lock()
            .map(|h| h.clone())
            .unwrap_or(Health::Starting)
    }

    pub fn set(&self, health: Health) {
        let Ok(mut current) = self.state.lock() else {
            return;
        };
        if *current != health {
            let channel = self.channel;
            match &health {
                Health::Up => tracing::info!(channel, "connected"),
                Health::Degraded(why) => tracing::warn!(channel, "{why}"),
                Health::Down(why) => tracing::error!(channel, "{why}"),
                Health::Starting => {}
            }
            *current = health;
        }
    }
}
