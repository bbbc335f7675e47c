//! Discord through serenity 0.12 over the gateway: DMs, guild text channels (the access
//! layer gates on `addressed`: an @mention of the bot or a reply to it), threads as
//! their own sessions, typing, streaming by editing a message in place, files both ways,
//! reactions, approval buttons, and a health state through reconnects and resumes.
//!
//! Two halves:
//! - **In** (`gateway`, `handler`, `order`, `convert`): a serenity `Client` with one
//!   shard heartbeats, resumes and re-identifies by itself; a gateway silent past the
//!   silence limit (no event, no heartbeat ACK) is dropped and connected again. Its handler tasks run in
//!   parallel, so messages pass through one ordered forwarder (`order`) that puts each
//!   channel's messages back in snowflake order before they reach the bus. After a
//!   re-identify (a resume that failed), missed messages are fetched over REST.
//! - **Out** (`rest`, `send`, `buttons`): our own small REST client on Discord's HTTP
//!   API. serenity's `Http` must run with its rate limiter off for `api_url` to apply
//!   (`HttpBuilder::proxy`), and then it drops a 429's `retry_after`; ours reports it so
//!   the channel manager waits exactly that long.
//!
//! Layout: `convert` (a Discord message → `InboundMessage`), `errors` (HTTP status and
//! gateway errors → `ChannelError`), `rest`, `gateway` (the listen loop), `handler`
//! (serenity's event handler), `order` (the per-channel sequencer), `send` (text, edits,
//! typing, files, reactions), `buttons` (`ApprovalPrompter` and button presses), `files`
//! (pending attachments and their fetcher, used once the core admits the sender).
//! `direct` opens a person's DM channel for a target that names them (`DirectOpener`).

mod buttons;
mod convert;
mod direct;
mod errors;
mod files;
mod gateway;
mod handler;
mod order;
mod rest;
mod send;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::approval::PendingApprovals;
use crate::channel::{ChannelError, Health, HealthCell, HealthChecker};
use crate::direct::DirectChats;
use crate::pulse::Liveness;
use crate::registry::{ChannelHandle, ChannelInfo, Rate};
use crate::render::discord_chunks;

use convert::Place;
pub use convert::{CHANNEL, Me};
use rest::Rest;

/// What the Discord adapter needs from configuration.
#[derive(Debug, Clone)]
pub struct DiscordSettings {
    pub token: String,
    /// Where Discord's API lives, e.g. "https://discord.com"; requests go to
    /// `{api_url}/api/v10/...` and the gateway URL is asked from there too.
    pub api_url: String,
    /// Where received files are saved (the workspace inbox).
    pub inbox: PathBuf,
    /// Larger attachments are not downloaded.
    pub media_max_bytes: u64,
    /// How long the gateway may stay silent (no event, no heartbeat ACK) before the
    /// connection is dropped and opened again; `None`: `SILENCE`.
    pub silence: Option<Duration>,
}

/// How long the gateway may stay silent by default: a little over twice the heartbeat
/// interval Discord asks for (41.25 s). serenity itself reconnects when a heartbeat is
/// still unacknowledged as the next one falls due (within two intervals), and 15 s after
/// a connection that says no HELLO; this is the backstop for what it does not notice.
pub const SILENCE: Duration = Duration::from_secs(90);

impl DiscordSettings {
    /// How long the gateway may stay silent.
    pub fn silence_limit(&self) -> Duration {
        self.silence.unwrap_or(SILENCE)
    }
}

pub struct Discord {
    settings: DiscordSettings,
    /// Shared with the gateway's event handler, which answers button presses itself.
    rest: Arc<Rest>,
    health: Arc<HealthCell>,
    /// Where approval button presses are answered.
    approvals: Arc<PendingApprovals>,
    /// What kind of place each channel id is (DM, text channel, thread), looked up once.
    places: Mutex<HashMap<u64, Place>>,
    /// People's DM channels by user id, opened for targets that name a person.
    directs: DirectChats,
}

impl Discord {
    pub fn new(
        settings: DiscordSettings,
        approvals: Arc<PendingApprovals>,
    ) -> Result<Arc<Self>, ChannelError> {
        let rest = Arc::new(Rest::new(&settings.api_url, &settings.token)?);
        let limit = settings.silence_limit();
        Ok(Arc::new(Self {
            settings,
            rest,
            health: Arc::new(HealthCell::new(CHANNEL, Some(limit))),
            approvals,
            places: Mutex::new(HashMap::new()),
            directs: DirectChats::default(),
        }))
    }

    /// The channel with every capability Discord has, for the registry.
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
}

/// Discord's pace (<https://discord.com/developers/docs/topics/rate-limits>): sending
/// messages is limited per channel — 5 per 5 s, as the API's `X-RateLimit-*` headers
/// report it for that route — and all of a bot's requests together to 50 a second (the
/// global limit). Past them Discord answers 429 with a `retry_after`, which is waited out.
const PER_CHANNEL: Rate = Rate {
    burst: 5,
    every: Duration::from_secs(1),
};
const GLOBAL: Rate = Rate {
    burst: 10,
    every: Duration::from_millis(20),
};

/// Discord's limits: 2000 characters a message, the pace above, typing lasts 10 s.
pub fn info() -> ChannelInfo {
    ChannelInfo {
        split: discord_chunks,
        chat_rate: |_| PER_CHANNEL,
        channel_rate: GLOBAL,
        edit_interval: Duration::from_millis(1200),
        typing_interval: Duration::from_secs(8),
    }
}

impl HealthChecker for Discord {
    fn health(&self) -> Health {
        self.health.get()
    }

    fn liveness(&self) -> Liveness {
        self.health.liveness()
    }
}
