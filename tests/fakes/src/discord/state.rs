//! Everything one fake Discord knows, behind one lock, plus a change counter so waiters
//! (gateway sockets, `wait_*` helpers) wake on change. Locks are short and never held
//! across `.await`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::watch;

use super::fault::Fault;

/// One REST request as received.
#[derive(Debug, Clone)]
pub struct Call {
    /// The route's name: `create_message`, `edit_message`, `typing`, `get_me`,
    /// `create_dm`, `get_gateway`, `get_gateway_bot`, `get_channel`, `list_messages`,
    /// `react`, `interaction_callback`, `download`, or `unknown`.
    pub route: String,
    pub method: String,
    pub path: String,
    /// The JSON body; for multipart, `payload_json` parsed plus `files` as
    /// `[{"field","file_name","content_type","size"}]`.
    pub body: Value,
    pub at: Instant,
}

/// A message in a channel, the users' and the bot's.
#[derive(Debug, Clone)]
pub struct Stored {
    pub id: u64,
    pub channel: u64,
    pub author: u64,
    pub from_bot: bool,
    /// Its JSON as the API returns it now (edits applied).
    pub json: Value,
    pub edits: usize,
    /// When it was sent, or edited last.
    pub at: Instant,
}

impl Stored {
    pub fn content(&self) -> &str {
        self.json["content"].as_str().unwrap_or_default()
    }

    /// Whether it carries message components (buttons) now.
    pub fn has_buttons(&self) -> bool {
        self.json["components"]
            .as_array()
            .is_some_and(|rows| !rows.is_empty())
    }
}

/// A file the bot attached to a message it sent (multipart `files[n]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentFile {
    pub channel: u64,
    /// The message it is attached to.
    pub message: u64,
    pub file_name: String,
    /// The part's `Content-Type`, or one guessed from the file name as Discord does.
    pub content_type: String,
    pub bytes: Vec<u8>,
    /// The message's text as sent (`""` if none).
    pub content: String,
}

/// An answer the bot gave to an interaction (a button press).
#[derive(Debug, Clone)]
pub struct Answer {
    pub interaction_id: u64,
    pub body: Value,
}

/// How the next kick ends the open gateway socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kick {
    /// Drop the TCP connection without a close frame.
    Drop,
    /// Send op 7 RECONNECT, then close.
    Reconnect,
}

/// The gateway's side: one session at a time, its events numbered by `s`.
#[derive(Debug, Default)]
pub(crate) struct Gateway {
    pub session: Option<Session>,
    /// Dispatches made before any session existed, sent after the first READY.
    pub backlog: Vec<(String, Value)>,
    pub sessions: u64,
    pub identifies: usize,
    pub resumes: usize,
    pub heartbeats: usize,
    /// Bumped to end the open socket; sockets remember the value they started with.
    pub kick: u64,
    pub kick_kind: Option<Kick>,
    /// New sockets are refused (503) until then.
    pub down_until: Option<Instant>,
    /// Sockets open and past IDENTIFY or RESUME.
    pub live: usize,
    /// IDENTIFY is closed with 4014, as when the Message Content intent is not enabled
    /// in the developer portal.
    pub refuse_intents: bool,
    /// `stall()`: the open socket (or, if none is open, the next one) goes silent.
    pub stall: bool,
    /// How many sockets went silent so far.
    pub stalled: usize,
}

#[derive(Debug)]
pub(crate) struct Session {
    pub id: String,
    /// Dispatch payloads (`{"op":0,"t","s","d"}`); event `s` is at index `s - 1`.
    pub events: Vec<Value>,
}

impl Gateway {
    /// Queues a dispatch: into the session (sent now or replayed on resume), or the
    /// backlog while there is none.
    pub(crate) fn dispatch(&mut self, t: &str, d: Value) {
        match &mut self.session {
            Some(session) => {
                let s = session.events.len() + 1;
                session
                    .events
                    .push(serde_json::json!({"op": 0, "t": t, "s": s, "d": d}));
            }
            None => self.backlog.push((t.to_string(), d)),
        }
    }

    pub(crate) fn is_down(&self) -> bool {
        self.down_until.is_some_and(|until| Instant::now() < until)
    }

    /// Whether the socket asking is the one to go silent (counted as such if so).
    pub(crate) fn take_stall(&mut self) -> bool {
        if !self.stall {
            return false;
        }
        self.stall = false;
        self.stalled += 1;
        true
    }
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub calls: Vec<Call>,
    pub messages: Vec<Stored>,
    /// Attachment bytes by URL path (`/attachments/...`), with their content type.
    pub files: HashMap<String, (Vec<u8>, String)>,
    /// Scripted failures by route name, each queue FIFO.
    pub faults: HashMap<String, VecDeque<Fault>>,
    /// Scripted delays by route name, each queue FIFO: answered as usual, but late.
    pub delays: HashMap<String, VecDeque<std::time::Duration>>,
    /// Every request and IDENTIFY is refused as with a revoked token.
    pub revoked: bool,
    next_id: u64,
    pub gateway: Gateway,
    /// Button presses sent, by interaction id: the (channel, message) pressed.
    pub pressed: HashMap<u64, (u64, u64)>,
    pub answers: Vec<Answer>,
    /// Every file the bot sent, oldest first.
    pub sent_files: Vec<SentFile>,
    /// Reactions the bot added: (channel, message, emoji as text, percent-decoded).
    pub reactions: Vec<(u64, u64, String)>,
    /// DM channels opened through `POST /users/@me/channels`, by recipient.
    pub dms: BTreeMap<u64, u64>,
}

impl Default for Inner {
    fn default() -> Self {
        Self {
            calls: Vec::new(),
            messages: Vec::new(),
            files: HashMap::new(),
            faults: HashMap::new(),
            delays: HashMap::new(),
            revoked: false,
            next_id: super::FIRST_SNOWFLAKE,
            gateway: Gateway::default(),
            pressed: HashMap::new(),
            answers: Vec::new(),
            sent_files: Vec::new(),
            reactions: Vec::new(),
            dms: BTreeMap::new(),
        }
    }
}

impl Inner {
    /// A fresh snowflake, larger than every one before.
    pub(crate) fn snowflake(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub(crate) fn take_delay(&mut self, route: &str) -> Option<std::time::Duration> {
        self.delays.get_mut(route).and_then(VecDeque::pop_front)
    }

    pub(crate) fn take_fault(&mut self, route: &str) -> Option<Fault> {
        self.faults.get_mut(route).and_then(VecDeque::pop_front)
    }

    pub(crate) fn message_mut(&mut self, channel: u64, id: u64) -> Option<&mut Stored> {
        self.messages
            .iter_mut()
            .find(|m| m.id == id && m.channel == channel)
    }
}

pub(crate) struct Shared {
    inner: Mutex<Inner>,
    changed: watch::Sender<u64>,
}

impl Shared {
    pub(crate) fn new() -> Shared {
        Shared {
            inner: Mutex::new(Inner::default()),
            changed: watch::Sender::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn read<R>(&self, f: impl FnOnce(&Inner) -> R) -> R {
        f(&self.lock())
    }

    /// Changes the state, then wakes every waiter.
    pub(crate) fn update<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let result = f(&mut self.lock());
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
        result
    }

    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Waits until `done` holds (checked now and after each change), or `timeout`;
    /// returns whether it holds.
    pub(crate) async fn wait_until(
        &self,
        timeout: Duration,
        mut done: impl FnMut(&Inner) -> bool,
    ) -> bool {
        let mut changes = self.changes();
        let wait = async {
            loop {
                if self.read(&mut done) {
                    return;
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        };
        // Timing out is an answer too: the caller reads whatever is there.
        let _ = tokio::time::timeout(timeout, wait).await;
        self.read(done)
    }
}
