//! Telegram through teloxide: long polling with our own loop (an update is confirmed
//! to Telegram only after the core has stored its message), replies rendered as
//! Telegram HTML with a plain-text retry, typing, edit-in-place streaming, media both
//! ways, reactions, approval buttons and a health state. The API base URL is configurable (self-hosted
//! Bot API servers, proxies, tests).

mod convert;
mod errors;
mod files;
mod poll;
mod send;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use teloxide::Bot;
use tokio::sync::OnceCell;

use crate::approval::PendingApprovals;
use crate::channel::{ChannelError, Health, HealthCell, HealthChecker};
use crate::pulse::Liveness;
use crate::registry::{ChannelHandle, ChannelInfo, Rate};
use crate::render::telegram::telegram_chunks;

pub use convert::{CHANNEL, Me};
pub use errors::redact_token;

/// What the Telegram adapter needs from configuration.
#[derive(Debug, Clone)]
pub struct TelegramSettings {
    pub token: String,
    /// Without a trailing slash, e.g. "https://api.telegram.org".
    pub api_url: String,
    /// Where received files are saved (the workspace inbox).
    pub inbox: PathBuf,
    /// Larger attachments are not downloaded.
    pub media_max_bytes: u64,
    /// Seconds a getUpdates long poll waits (teloxide's client gives up at 17 s).
    pub poll_timeout_secs: u32,
    /// How long a getUpdates (or the start-up calls) may go unanswered before it is
    /// abandoned and asked again; `None`: the long poll plus `POLL_MARGIN`. A shorter
    /// limit shortens the long poll to half of it.
    pub silence: Option<Duration>,
}

/// How much longer than its long-poll timeout a getUpdates may take before Telegram
/// counts as silent.
pub const POLL_MARGIN: Duration = Duration::from_secs(5);

impl TelegramSettings {
    /// How long Telegram may stay silent.
    pub fn silence_limit(&self) -> Duration {
        self.silence
            .unwrap_or_else(|| Duration::from_secs(self.poll_timeout_secs.into()) + POLL_MARGIN)
    }

    /// The long-poll timeout asked for: `poll_timeout_secs`, and with a silence limit
    /// set, at most half of it (at least a second), so a poll ends well before it
    /// counts as silent.
    pub fn poll_secs(&self) -> u32 {
        let Some(limit) = self.silence else {
            return self.poll_timeout_secs;
        };
        let half = u32::try_from(limit.as_secs() / 2).unwrap_or(u32::MAX);
        self.poll_timeout_secs.min(half.max(1))
    }
}

pub struct Telegram {
    bot: Bot,
    settings: TelegramSettings,
    /// Learned from getMe at start-up.
    me: OnceCell<Me>,
    health: HealthCell,
    /// Where approval button presses are answered.
    approvals: Arc<PendingApprovals>,
}

/// Pincer's HTTP client (`pincer_net::http`) with teloxide's own limits for the Bot API
/// (a 5 s connect, 17 s for a call: long polls ask for 10); `None` leaves the client to
/// teloxide, as when `TELOXIDE_PROXY` asks it for a proxy.
fn http_client() -> Option<reqwest::Client> {
    if std::env::var_os("TELOXIDE_PROXY").is_some() {
        return None;
    }
    pincer_net::http::client()
        .connect_timeout(std::time::Duration::from_secs(5))
        .timeout(std::time::Duration::from_secs(17))
        .tcp_nodelay(true)
        .build()
        .ok()
}

impl Telegram {
    pub fn new(
        settings: TelegramSettings,
        approvals: Arc<PendingApprovals>,
    ) -> Result<Arc<Self>, ChannelError> {
        let url = reqwest::Url::parse(settings.api_url.trim_end_matches('/')).map_err(|err| {
            ChannelError::permanent(format!(
                "channels.telegram.api_url = \"{}\" is not a URL: {err}",
                settings.api_url
            ))
        })?;
        let bot = match http_client() {
            Some(client) => Bot::with_client(settings.token.clone(), client),
            None => Bot::new(settings.token.clone()),
        }
        .set_api_url(url);
        Ok(Arc::new(Self {
            bot,
            me: OnceCell::new(),
            health: HealthCell::new(CHANNEL, Some(settings.silence_limit())),
            settings,
            approvals,
        }))
    }

    /// The channel with every capability Telegram has, for the registry.
    pub fn handle(self: &Arc<Self>) -> ChannelHandle {
        let mut handle = ChannelHandle::new(Arc::clone(self) as _, info());
        handle.typing = Some(Arc::clone(self) as _);
        handle.editor = Some(Arc::clone(self) as _);
        handle.media = Some(Arc::clone(self) as _);
        handle.reactions = Some(Arc::clone(self) as _);
        handle.approvals = Some(Arc::clone(self) as _);
        handle.health = Some(Arc::clone(self) as _);
        handle
    }

    fn set_health(&self, health: Health) {
        self.health.set(health);
    }
}

/// Telegram's pace, from its Bot FAQ ("My bot is hitting limits, how do I avoid this?",
/// <https://core.telegram.org/bots/faq>): in one chat "avoid sending more than one
/// message per second", with short bursts allowed; no more than 20 messages a minute to
/// one group; "not more than 30 messages per second or so" in all. A burst past what
/// Telegram tolerates is answered with a 429, whose `retry_after` is waited out.
const PRIVATE_CHAT: Rate = Rate {
    burst: 3,
    every: Duration::from_secs(1),
};
const GROUP_CHAT: Rate = Rate {
    burst: 3,
    every: Duration::from_secs(3),
};
const BOT: Rate = Rate {
    burst: 5,
    every: Duration::from_millis(34),
};

/// Telegram's limits: 4096 UTF-16 units a message, the pace above (groups and channels
/// have negative chat ids), typing lasts 5 s.
pub fn info() -> ChannelInfo {
    ChannelInfo {
        split: |markdown| {
            telegram_chunks(markdown)
                .into_iter()
                .map(|c| c.plain)
                .collect()
        },
        chat_rate: |target| {
            if target.chat_id.starts_with('-') {
                GROUP_CHAT
            } else {
                PRIVATE_CHAT
            }
        },
        channel_rate: BOT,
        edit_interval: Duration::from_millis(1200),
        typing_interval: Duration::from_secs(4),
    }
}

impl HealthChecker for Telegram {
    fn health(&self) -> Health {
        self.health.get()
    }

    fn liveness(&self) -> Liveness {
        self.health.liveness()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(silence: Option<u64>) -> TelegramSettings {
        TelegramSettings {
            token: "1:x".into(),
            api_url: "http://127.0.0.1:1".into(),
            inbox: PathBuf::new(),
            media_max_bytes: 1,
            poll_timeout_secs: 10,
            silence: silence.map(Duration::from_secs),
        }
    }

    #[test]
    fn the_long_poll_ends_well_within_the_silence_limit() {
        let natural = settings(None);
        assert_eq!(natural.silence_limit(), Duration::from_secs(15));
        assert_eq!(natural.poll_secs(), 10);
        assert_eq!(settings(Some(60)).poll_secs(), 10);
        let short = settings(Some(4));
        assert_eq!((short.silence_limit().as_secs(), short.poll_secs()), (4, 2));
        assert_eq!(settings(Some(2)).poll_secs(), 1);
    }
}
