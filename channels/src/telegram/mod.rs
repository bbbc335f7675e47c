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
use crate::registry::{ChannelHandle, ChannelInfo};
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
        let bot = Bot::new(settings.token.clone()).set_api_url(url);
        Ok(Arc::new(Self {
            bot,
            settings,
            me: OnceCell::new(),
            health: HealthCell::new(CHANNEL),
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

/// Telegram's limits: 4096 UTF-16 units a message, about one message a second per
/// chat, typing lasts 5 s.
pub fn info() -> ChannelInfo {
    ChannelInfo {
        split: |markdown| {
            telegram_chunks(markdown)
                .into_iter()
                .map(|c| c.plain)
                .collect()
        },
        min_interval: Duration::from_millis(1000),
        edit_interval: Duration::from_millis(1200),
        typing_interval: Duration::from_secs(4),
    }
}

impl HealthChecker for Telegram {
    fn health(&self) -> Health {
        self.health.get()
    }
}
