//! Matrix through the official `matrix-sdk`: the bot logs in (a password, on the same
//! device every start, or an access token), keeps the SDK's state and crypto stores under
//! `$PINCER_HOME/matrix/`, and runs its own `/sync` loop. Inbound: rooms of two are
//! direct chats, larger rooms are groups (answered when the bot is mentioned by user id,
//! pill or `m.mentions`, or replied to), `m.thread` threads are their own sessions,
//! images, voice notes and files are fetched from the media repository once the core
//! admits the sender (decrypted in encrypted rooms). Outbound: markdown with an HTML
//! `formatted_body`, streaming by `m.replace` edits, typing notices, reactions, files,
//! and approvals as a question whose choices are reactions (Matrix has no buttons).
//!
//! Nothing is lost across a restart or a cut connection: the sync token that
//! acknowledges a batch of events is written only after every message in it was stored
//! by the core (`sync`), so a batch that was not is fetched again.
//!
//! ## Layout
//! - `login`     — the SDK client: stores, password or token login, the device kept
//! - `sync`      — the sync loop: the saved token, invites, hand-off, silence, health
//! - `convert`   — a room event as an `InboundMessage`: kinds, threads, mentions, media
//! - `send`      — text and edits (HTML), typing, reactions, files, a person's DM
//! - `questions` — approvals and questions answered by a reaction or a reply
//! - `files`     — the media fetcher (size cap, decryption)
//! - `errors`    — SDK failures as `ChannelError`s that name the fix

mod convert;
mod errors;
mod files;
mod login;
mod questions;
mod send;
mod sync;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use matrix_sdk::Client;
use matrix_sdk::ruma::OwnedUserId;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use crate::approval::PendingApprovals;
use crate::channel::{Channel, ChannelError, Health, HealthCell, HealthChecker, InboundSender};
use crate::direct::DirectChats;
use crate::message::Target;
use crate::pulse::Liveness;
use crate::registry::{ChannelHandle, ChannelInfo, Rate};

pub use convert::CHANNEL;
pub use login::{DeviceState, device_state};

/// How the bot proves who it is.
#[derive(Clone)]
pub enum Login {
    /// The account's password, with `MatrixSettings::user_id`.
    Password(String),
    /// An access token of the account.
    Token(String),
}

/// What the Matrix adapter needs from configuration.
#[derive(Clone)]
pub struct MatrixSettings {
    /// The client-server API base, e.g. "https://matrix.example.org".
    pub homeserver: String,
    /// The bot's user id; needed with a password.
    pub user_id: Option<String>,
    pub login: Login,
    /// `$PINCER_HOME/matrix`: the SDK's stores, the device id, the sync token.
    pub state_dir: PathBuf,
    /// Encrypts the SDK's stores.
    pub store_passphrase: Option<String>,
    /// The account's recovery key, to restore keys from secret storage.
    pub recovery_key: Option<String>,
    /// End-to-end encryption on (the default).
    pub encryption: bool,
    /// Which invites the bot accepts.
    pub joins: Joins,
    /// Where received files are saved (the workspace inbox).
    pub inbox: PathBuf,
    /// Larger attachments are not downloaded.
    pub media_max_bytes: u64,
    /// How long one sync may go unanswered; `None`: `SILENCE`.
    pub silence: Option<Duration>,
}

/// Which room invites the bot accepts; the rest are declined. Whether a sender in a
/// joined room is answered is still the core's decision.
#[derive(Debug, Clone, Default)]
pub struct Joins {
    /// Direct chats (`dm_policy` is not `disabled`).
    pub direct: bool,
    /// Group room ids (`groups`; `"*"` for any), empty when `group_policy` is `disabled`.
    pub groups: Vec<String>,
    /// Strangers' invites accepted in an hour on average, up to half of them at once
    /// (`invites_per_hour`); `0`: no limit.
    pub per_hour: u32,
    /// User ids whose invites never wait for that pace: the owners and `allow_from`.
    pub trusted: Vec<String>,
}

impl Joins {
    fn group(&self, room: &str) -> bool {
        self.groups.iter().any(|g| g == "*" || g == room)
    }

    /// An invite that does not count against `per_hour`: from someone trusted, or to
    /// a room `groups` names.
    fn exempt(&self, inviter: &str, room: &str) -> bool {
        self.trusted.iter().any(|t| t == inviter) || self.groups.iter().any(|g| g == room)
    }
}

/// `per_hour` invites an hour on average, up to half of them at once; `None` for no
/// limit.
fn join_pace(per_hour: u32) -> Option<crate::manager::Bucket> {
    (per_hour > 0).then(|| {
        crate::manager::Bucket::new(Rate {
            burst: (per_hour / 2).max(1),
            every: Duration::from_secs(3600) / per_hour,
        })
    })
}

/// How long a sync may stay unanswered by default: its 30 s long poll and 15 s more.
pub const SILENCE: Duration = Duration::from_secs(45);

impl MatrixSettings {
    /// How long a sync may stay unanswered.
    pub fn silence_limit(&self) -> Duration {
        self.silence.unwrap_or(SILENCE)
    }

    /// The sync's long-poll wait: two thirds of the silence limit, at most 30 s.
    fn poll(&self) -> Duration {
        (self.silence_limit() * 2 / 3).min(Duration::from_secs(30))
    }
}

impl std::fmt::Debug for MatrixSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The password, token, recovery key and passphrase never reach a log line.
        f.debug_struct("MatrixSettings")
            .field("homeserver", &self.homeserver)
            .field("user_id", &self.user_id)
            .field("state_dir", &self.state_dir)
            .field("encryption", &self.encryption)
            .field("joins", &self.joins)
            .field("inbox", &self.inbox)
            .field("media_max_bytes", &self.media_max_bytes)
            .field("silence", &self.silence)
            .finish_non_exhaustive()
    }
}

/// The bot itself, learned at login.
#[derive(Debug, Clone)]
pub(crate) struct Me {
    pub user_id: OwnedUserId,
    /// Its display name, for mentions written by hand.
    pub name: Option<String>,
}

/// How many of the bot's own recent event ids are remembered (a reply to one of them
/// addresses the bot in a group).
const REMEMBERED: usize = 512;

pub struct Matrix {
    settings: MatrixSettings,
    /// Built and logged in on first use (the sync loop, or a send before it).
    client: OnceCell<(Client, Me)>,
    health: HealthCell,
    /// Where approval answers go.
    approvals: Arc<PendingApprovals>,
    /// Questions waiting for a reaction or a reply, by the question's event id.
    questions: questions::Open,
    /// The bot's recent messages, newest last.
    sent: Mutex<VecDeque<String>>,
    /// People's direct rooms by user id, opened for targets that name a person.
    directs: DirectChats,
    /// Downloads media (built once: each client loads the system's TLS roots).
    http: reqwest::Client,
    /// When each room was last told a message could not be decrypted.
    unreadable_told: Mutex<std::collections::HashMap<String, std::time::Instant>>,
    /// How fast the bot joins rooms it is invited to (`Joins::per_hour`); `None`: as
    /// fast as it is invited.
    join_pace: Option<crate::manager::Bucket>,
}

impl Matrix {
    pub fn new(
        settings: MatrixSettings,
        approvals: Arc<PendingApprovals>,
    ) -> Result<Arc<Self>, ChannelError> {
        let homeserver = settings.homeserver.trim_end_matches('/').to_string();
        if reqwest::Url::parse(&homeserver).is_err() {
            return Err(ChannelError::permanent(format!(
                "channels.matrix.homeserver = \"{}\" is not a URL",
                settings.homeserver
            )));
        }
        if matches!(settings.login, Login::Password(_)) && settings.user_id.is_none() {
            return Err(ChannelError::permanent(
                "Matrix password login needs the bot's user id: set channels.matrix.user_id = \"@pincer:example.org\" in config.toml (or use an access token)",
            ));
        }
        let silence = settings.silence_limit();
        let join_pace = join_pace(settings.joins.per_hour);
        Ok(Arc::new(Self {
            settings: MatrixSettings {
                homeserver,
                ..settings
            },
            client: OnceCell::new(),
            health: HealthCell::new(CHANNEL, Some(silence)),
            approvals,
            questions: questions::Open::default(),
            sent: Mutex::new(VecDeque::new()),
            directs: DirectChats::default(),
            http: files::http(),
            unreadable_told: Mutex::default(),
            join_pace,
        }))
    }

    /// The channel with every capability Matrix has, for the registry.
    pub fn handle(self: &Arc<Self>) -> ChannelHandle {
        let mut handle = ChannelHandle::new(Arc::clone(self) as _, info());
        handle.typing = Some(Arc::clone(self) as _);
        handle.editor = Some(Arc::clone(self) as _);
        handle.media = Some(Arc::clone(self) as _);
        handle.reactions = Some(Arc::clone(self) as _);
        handle.approvals = Some(Arc::clone(self) as _);
        handle.health = Some(Arc::clone(self) as _);
        handle.direct = Some(Arc::clone(self) as _);
        handle
    }

    /// The logged-in client, logging in on first use.
    async fn client(&self) -> Result<&(Client, Me), ChannelError> {
        self.client
            .get_or_try_init(|| login::connect(&self.settings))
            .await
    }

    /// Remember one of the bot's own messages.
    fn remember(&self, event_id: &str) {
        if let Ok(mut sent) = self.sent.lock() {
            if sent.len() == REMEMBERED {
                sent.pop_front();
            }
            sent.push_back(event_id.to_string());
        }
    }

    fn is_ours(&self, event_id: &str) -> bool {
        self.sent
            .lock()
            .map(|sent| sent.iter().any(|id| id == event_id))
            .unwrap_or(false)
    }
}

/// Synapse's default pace for a user is 0.2 messages a second with bursts of 10
/// (`rc_message`); homeservers usually exempt or raise it for bots. One room is kept to
/// about one message a second after a burst of 5, the whole account to about 5 a second;
/// a 429's `retry_after_ms` is waited out.
const PER_ROOM: Rate = Rate {
    burst: 5,
    every: Duration::from_secs(1),
};
const ACCOUNT: Rate = Rate {
    burst: 10,
    every: Duration::from_millis(200),
};

/// Matrix's limits: the chunk size of `render::matrix`, the pace above, edits every
/// 1.5 s, and typing notices renewed every 3 s (the SDK sends each for 4 s).
pub fn info() -> ChannelInfo {
    ChannelInfo {
        split: crate::render::matrix_chunks,
        chat_rate: |_| PER_ROOM,
        channel_rate: ACCOUNT,
        edit_interval: Duration::from_millis(1500),
        typing_interval: Duration::from_secs(3),
    }
}

#[async_trait]
impl Channel for Matrix {
    fn name(&self) -> &str {
        CHANNEL
    }

    async fn listen(
        &self,
        bus: InboundSender,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        self.run(bus, shutdown).await
    }

    async fn send(&self, target: &Target, text: &str) -> Result<String, ChannelError> {
        self.send_text(target, text).await
    }
}

impl HealthChecker for Matrix {
    fn health(&self) -> Health {
        self.health.get()
    }

    fn liveness(&self) -> Liveness {
        self.health.liveness()
    }
}
