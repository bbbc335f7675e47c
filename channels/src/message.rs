//! The typed messages that cross the bus: `InboundMessage` (a platform event turned
//! into something the core understands) and `OutboundMessage` (what the core wants
//! said). No metadata bags: every field a consumer reads is named here.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tokio::sync::oneshot;

use crate::channel::{ChannelError, OutboundMedia};
use crate::inbox::Remote;
use crate::key::SessionKey;

/// The channel of the scheduler's synthetic messages (a job's run, the heartbeat).
pub const SYSTEM: &str = "system";

/// The chat commands the core answers (see its /help). Where the client takes a typed
/// `/new` for itself (Slack, Element), `!new` is read as `/new`.
const COMMANDS: [&str; 11] = [
    "new", "reset", "stop", "status", "model", "usage", "compact", "approve", "help", "start",
    "trust",
];

/// `!name args` as `/name args` when `name` is one of the core's commands.
pub fn bang_command(text: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix('!')?;
    let word = rest.split_whitespace().next()?;
    COMMANDS
        .contains(&word.to_ascii_lowercase().as_str())
        .then(|| format!("/{rest}"))
}

/// What kind of conversation a message belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChatKind {
    Dm,
    Group,
    Thread,
}

/// Who sent a message, in the two forms the core needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sender {
    /// The platform's own id, as allow lists store it ("42").
    pub raw_id: String,
    /// `channel:raw_id` ("telegram:42"), the form `agent.owners` uses.
    pub canonical: String,
    pub display_name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    Photo,
    Document,
    Voice,
    Audio,
    Video,
}

/// An attachment the adapter received: pending (still on the platform) until the core
/// has admitted the message and called `inbox::fetch_all`, which downloads it.
#[derive(Debug, Clone)]
pub struct MediaRef {
    pub kind: MediaKind,
    /// Where `inbox::fetch_all` saved it inside the workspace inbox, if it did.
    pub path: Option<PathBuf>,
    pub mime: Option<String>,
    pub file_name: Option<String>,
    /// As the platform reported it, when it did.
    pub size_bytes: Option<u64>,
    /// A voice note's or audio file's length, when the platform says.
    pub duration_secs: Option<u32>,
    /// Where to fetch it from while it is pending; `None` once `fetch_all` has tried.
    pub remote: Option<Remote>,
}

impl MediaRef {
    /// An attachment still on the platform; nothing is downloaded yet.
    pub fn pending(
        kind: MediaKind,
        file_name: String,
        mime: Option<String>,
        size_bytes: Option<u64>,
        remote: Remote,
    ) -> MediaRef {
        MediaRef {
            kind,
            path: None,
            mime,
            file_name: Some(file_name),
            size_bytes,
            duration_secs: None,
            remote: Some(remote),
        }
    }
}

/// Fired by the core once a message is stored; only then may an adapter confirm the
/// message to its platform (a Telegram offset, a Slack envelope ack).
#[derive(Debug)]
pub struct Ack(oneshot::Sender<()>);

impl Ack {
    /// A handle for the core and the receiver the adapter waits on.
    pub fn pair() -> (Ack, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        (Ack(tx), rx)
    }

    pub fn fire(self) {
        // The adapter may have stopped waiting (shutdown); the message is stored
        // either way, so there is nobody left to tell.
        let _ = self.0.send(());
    }
}

/// Fired by the core when the turn that answered a message has ended, with its
/// error if it failed (the scheduler records a job's run with it).
#[derive(Debug)]
pub struct Done(oneshot::Sender<Result<(), TurnFailed>>);

/// Why the turn that answered a message did not finish: the notice its chat was shown
/// (the core's words; this crate knows nothing of how turns end).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TurnFailed(pub String);

impl Done {
    pub fn pair() -> (Done, oneshot::Receiver<Result<(), TurnFailed>>) {
        let (tx, rx) = oneshot::channel();
        (Done(tx), rx)
    }

    pub fn fire(self, outcome: Result<(), TurnFailed>) {
        // Whoever waited may be gone (shutdown); the outcome is in the store anyway.
        let _ = self.0.send(outcome);
    }
}

/// How much a sender is trusted, ordered `Guest < Member < Owner`. The core decides
/// tiers; this crate only carries one, on a scheduled run's message, and reads none of
/// the configuration behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    Guest,
    Member,
    Owner,
}

/// A scheduled run's own facts, for the synthetic message that starts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheduled {
    /// The job's name ("heartbeat" for the heartbeat).
    pub job: String,
    /// The tier the job was made at; the run gets no more (the sender is the job's
    /// creator, and the run gets less if the creator has lost their standing since).
    pub tier: Tier,
    /// The job was made in a group: its runs are treated as group turns.
    pub in_group: bool,
}

/// One message from a person (or a synthetic one from the scheduler, channel `SYSTEM`).
#[derive(Debug)]
pub struct InboundMessage {
    /// The channel's registry name: "telegram", "terminal", ...
    pub channel: String,
    /// Which bot account of that channel received it ("default" for one account).
    pub account: String,
    pub chat_id: String,
    pub chat_kind: ChatKind,
    /// Forum topic or thread inside the chat; each is its own session.
    pub thread_id: Option<String>,
    pub sender: Sender,
    /// The platform's id of this message; the store dedupes on it.
    pub message_id: String,
    pub text: String,
    pub media: Vec<MediaRef>,
    /// The platform id of the message this one replies to.
    pub reply_to: Option<String>,
    /// Whether the bot was addressed: a mention, a reply to it, or a command.
    pub addressed: bool,
    pub received_at: SystemTime,
    /// Where replies go when not back to this chat (a scheduled job's delivery target).
    pub deliver_to: Option<Target>,
    /// Set on the scheduler's synthetic messages only: which job runs, at which tier.
    pub scheduled: Option<Scheduled>,
}

/// What travels on the inbound bus: one message, and beside it the handles of its
/// delivery (they say when it is stored and answered; they are not its content).
#[derive(Debug)]
pub struct Inbound {
    pub message: InboundMessage,
    /// Fired once the message is stored: only then does its adapter confirm it to the
    /// platform (a Telegram offset, a Slack envelope ack).
    pub ack: Option<Ack>,
    /// Fired when the turn that answered the message ends (a scheduled run, the web
    /// chat's request wait on it).
    pub done: Option<Done>,
}

impl Inbound {
    /// The message and the handle its adapter waits on before confirming it.
    pub fn acked(message: InboundMessage, ack: Ack) -> Inbound {
        Inbound {
            message,
            ack: Some(ack),
            done: None,
        }
    }

    /// The message and the handle told when its turn ends.
    pub fn answered(message: InboundMessage, done: Done) -> Inbound {
        Inbound {
            message,
            ack: None,
            done: Some(done),
        }
    }
}

/// A message nobody waits on: no ack, no completion.
impl From<InboundMessage> for Inbound {
    fn from(message: InboundMessage) -> Inbound {
        Inbound {
            message,
            ack: None,
            done: None,
        }
    }
}

impl InboundMessage {
    /// Where a reply to this message goes.
    pub fn target(&self) -> Target {
        if let Some(target) = &self.deliver_to {
            return target.clone();
        }
        Target::chat(&self.channel, &self.chat_id, self.thread_id.as_deref())
    }

    /// The conversation this message belongs to (see `SessionKey`).
    pub fn session_key(&self) -> SessionKey {
        if self.scheduled.is_some() {
            // The scheduler names the run in `chat_id`: `<job>:<run>`, `shared:<name>`.
            return SessionKey::scheduled(self.chat_id.clone());
        }
        SessionKey::Chat {
            channel: self.channel.clone(),
            group: self.chat_kind != ChatKind::Dm,
            chat_id: self.chat_id.clone(),
            thread: self.thread_id.clone(),
        }
    }
}

/// A chat (and thread) to deliver to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    pub channel: String,
    pub chat_id: String,
    pub thread_id: Option<String>,
    /// `chat_id` is a person's user id, not a chat: the message goes to their direct chat
    /// with the bot, which the channel opens on demand (Discord's DM channel, Slack's IM;
    /// on Telegram a user's id is their private chat's id).
    pub user: bool,
}

impl Target {
    /// A chat (or a thread in it).
    pub fn chat(channel: &str, chat_id: &str, thread_id: Option<&str>) -> Target {
        Target {
            channel: channel.to_string(),
            chat_id: chat_id.to_string(),
            thread_id: thread_id.map(str::to_string),
            user: false,
        }
    }

    /// One string per chat and thread ("telegram:-5:" for a chat, "slack:C1:17.2" for a
    /// thread in it), to find what waits in a place.
    pub fn key(&self) -> String {
        format!(
            "{}:{}:{}",
            self.channel,
            self.chat_id,
            self.thread_id.as_deref().unwrap_or_default()
        )
    }

    /// The direct chat with the person whose canonical id is `canonical`
    /// ("discord:80351110224678912"); `None` if it is not `channel:id`.
    pub fn user(canonical: &str) -> Option<Target> {
        let (channel, id) = canonical.split_once(':')?;
        if channel.is_empty() || id.is_empty() {
            return None;
        }
        Some(Target {
            channel: channel.to_string(),
            chat_id: id.to_string(),
            thread_id: None,
            user: true,
        })
    }
}

/// What the core wants a channel to do.
#[derive(Debug, Clone, PartialEq)]
pub enum OutboundBody {
    /// One event of a turn (see `chunk`): it began ("typing…"), its text streaming and
    /// complete, its tool calls, its end.
    Chunk(crate::chunk::Chunk),
    /// A complete message outside a turn's stream: a command's answer, a proactive
    /// message, a scheduled run's report.
    Text(String),
    /// A message about the turn rather than part of the reply (a budget stop, "Stopped.").
    Notice(String),
    /// Something failed outside a turn's stream; the text says why and what to do.
    Error(String),
    /// The answer to a message that started no turn (a command) is complete.
    Done,
    /// A file to send as a photo or a document (the `send_file` tool); `sent` hears the
    /// platform's id of the message or why it could not go.
    File { media: OutboundMedia, sent: Receipt },
    /// Put `emoji` on the person's message `message_id` (the acknowledgement a turn
    /// starts with). A channel that cannot react does nothing.
    React { message_id: String, emoji: String },
}

impl OutboundBody {
    /// The answer to a message is over: a turn's `finish`, or a command's `Done`.
    pub fn is_end(&self) -> bool {
        matches!(
            self,
            OutboundBody::Done | OutboundBody::Chunk(crate::chunk::Chunk::Finish { .. })
        )
    }

    /// The text of a complete message: a turn's finished text block, or a message
    /// outside a turn.
    pub fn complete_text(&self) -> Option<&str> {
        match self {
            OutboundBody::Text(text)
            | OutboundBody::Chunk(crate::chunk::Chunk::TextEnd { text, .. }) => Some(text),
            _ => None,
        }
    }
}

/// Where the outcome of one delivery goes: the sender waits on the other half.
#[derive(Clone)]
pub struct Receipt(Arc<Mutex<Option<Delivered>>>);

/// The sending half a `Receipt` holds: the platform's message id, or why not.
type Delivered = oneshot::Sender<Result<String, ChannelError>>;

impl Receipt {
    pub fn pair() -> (Receipt, oneshot::Receiver<Result<String, ChannelError>>) {
        let (tx, rx) = oneshot::channel();
        (Receipt(Arc::new(Mutex::new(Some(tx)))), rx)
    }

    /// Report the outcome; only the first report counts.
    pub fn fire(&self, outcome: Result<String, ChannelError>) {
        if let Some(tx) = self.0.lock().ok().and_then(|mut tx| tx.take()) {
            // Whoever waited may have given up (a stopped turn); nothing to tell then.
            let _ = tx.send(outcome);
        }
    }
}

impl std::fmt::Debug for Receipt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Receipt")
    }
}

impl PartialEq for Receipt {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Receipt {}

#[derive(Debug, Clone, PartialEq)]
pub struct OutboundMessage {
    pub target: Target,
    pub body: OutboundBody,
    /// The platform message this answers, for channels that thread replies.
    pub reply_to: Option<String>,
    /// Its entry in the outbox, when the core keeps one for it (see `ledger`): the
    /// manager tells the `Ledger` when the platform has it.
    pub entry: Option<Entry>,
}

impl OutboundMessage {
    /// A message with no outbox entry.
    pub fn new(target: Target, body: OutboundBody, reply_to: Option<String>) -> OutboundMessage {
        OutboundMessage {
            target,
            body,
            reply_to,
            entry: None,
        }
    }
}

/// A message's place in the core's outbox: what a person is to see, stored before it
/// is sent, so a restart sends what a crash left unsent instead of making it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub id: i64,
    /// The parts of a long text the platform already has (it was cut into several
    /// messages, and a restart came between two): they are not sent again.
    pub parts_sent: usize,
}
