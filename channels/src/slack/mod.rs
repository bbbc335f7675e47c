//! Slack through slack-morphism's Web API client, in Socket Mode (an outbound WebSocket,
//! no public URL) or, with `mode = "events"`, the Events API (Slack posts signed requests
//! to `listen`). Inbound: DMs, channel messages with mention gating (a mention arrives as
//! both `app_mention` and `message`; deduped on channel and ts), threads as their own
//! sessions, files fetched into the inbox once the core admits the sender (the bot token
//! goes only to Slack), Block Kit approval buttons. Outbound:
//! mrkdwn, streaming by `chat.update`, file uploads, reactions. Every envelope
//! is acknowledged within Slack's 3 s: as soon as the core has stored its message, and
//! after 2 s at the latest — the model is never waited for.
//!
//! The Socket Mode loop is our own (on slack-morphism's models and client) rather than
//! slack-morphism's listener, because that listener hides what health needs: a failing
//! `apps.connections.open` (a revoked app token) is only logged and retried forever,
//! `disconnect` envelopes reconnect without a word, and its `serve()` installs its own
//! signal handlers.
//!
//! ## Layout
//! - `convert` — a Slack event as an `InboundMessage`: kinds, threads, mentions, `!cmd`
//! - `inbound` — dedupe, the in-order hand-off to the bus, display names
//! - `files`   — pending attachments and their fetcher; where the bot token may go
//! - `socket`  — the Socket Mode connection: hello, envelopes, acks, reconnects, health
//! - `events`  — the Events API listener: signature check, url_verification
//! - `send`    — text and edits, files, reactions
//! - `buttons` — approval questions with Block Kit buttons, and button presses
//! - `direct`  — a person's IM (`conversations.open`) for a target that names them
//! - `errors`  — Slack failures as `ChannelError`s that name the fix

mod buttons;
mod convert;
mod direct;
mod errors;
mod events;
mod files;
mod inbound;
mod send;
mod socket;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use slack_morphism::prelude::*;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use crate::approval::PendingApprovals;
use crate::channel::{Channel, ChannelError, Health, HealthCell, HealthChecker, InboundSender};
use crate::direct::DirectChats;
use crate::message::Target;
use crate::pulse::Liveness;
use crate::registry::{ChannelHandle, ChannelInfo, Rate};
use crate::render::slack_chunks;

pub use convert::CHANNEL;

type Client = SlackClient<SlackClientHyperConnector<HttpsConnector<HttpConnector>>>;

/// How the adapter receives events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlackMode {
    /// Socket Mode: an outbound WebSocket opened with the app token.
    Socket,
    /// Events API: an HTTP listener Slack posts to, checked with the signing secret.
    Events,
}

/// What the Slack adapter needs from configuration.
#[derive(Clone)]
pub struct SlackSettings {
    /// The bot token (`xoxb-…`) for the Web API.
    pub bot_token: String,
    /// The app-level token (`xapp-…`, scope `connections:write`), Socket Mode only.
    pub app_token: Option<String>,
    /// The app's signing secret, Events API only.
    pub signing_secret: Option<String>,
    /// The Web API base, without a trailing slash, e.g. "https://slack.com/api".
    pub api_url: String,
    pub mode: SlackMode,
    /// Where the Events API listener binds (events mode).
    pub listen: Option<SocketAddr>,
    /// Where received files are saved (the workspace inbox).
    pub inbox: PathBuf,
    /// Larger attachments are not downloaded.
    pub media_max_bytes: u64,
    /// How long a Socket Mode connection may stay silent (no frame, not even a pong to
    /// the pings sent every third of it) before it is dropped and opened again;
    /// `None`: `SILENCE`. The Events API has no connection to watch.
    pub silence: Option<Duration>,
}

/// How long a Socket Mode connection may stay silent by default: three of the pings
/// sent every 20 s unanswered.
pub const SILENCE: Duration = Duration::from_secs(60);

impl SlackSettings {
    /// How long the socket may stay silent; `None` in events mode, where silence is
    /// normal.
    pub fn silence_limit(&self) -> Option<Duration> {
        (self.mode == SlackMode::Socket).then(|| self.silence.unwrap_or(SILENCE))
    }
}

impl std::fmt::Debug for SlackSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Tokens never reach a log line.
        f.debug_struct("SlackSettings")
            .field("api_url", &self.api_url)
            .field("mode", &self.mode)
            .field("listen", &self.listen)
            .field("inbox", &self.inbox)
            .field("media_max_bytes", &self.media_max_bytes)
            .field("silence", &self.silence)
            .finish_non_exhaustive()
    }
}

/// The bot itself, learned from `auth.test`.
#[derive(Debug, Clone)]
pub struct Me {
    pub user_id: String,
    pub name: String,
}

pub struct Slack {
    client: Arc<Client>,
    settings: SlackSettings,
    bot_token: SlackApiToken,
    /// Learned from auth.test at start-up.
    me: OnceCell<Me>,
    health: HealthCell,
    /// Where approval button presses are answered.
    approvals: Arc<PendingApprovals>,
    /// Recently seen messages (a mention arrives twice) and display names.
    seen: Mutex<inbound::Recent>,
    names: Mutex<inbound::Names>,
    /// People's IMs by member id, opened for targets that name a person.
    directs: DirectChats,
    /// Downloads files with the bot token (Slack's file URLs need it); see `files`.
    http: reqwest::Client,
}

impl Slack {
    pub fn new(
        settings: SlackSettings,
        approvals: Arc<PendingApprovals>,
    ) -> Result<Arc<Self>, ChannelError> {
        // slack-morphism's rustls needs a process-wide provider; installing twice is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let api_url = settings.api_url.trim_end_matches('/').to_string();
        if reqwest::Url::parse(&api_url).is_err() {
            return Err(ChannelError::permanent(format!(
                "channels.slack.api_url = \"{}\" is not a URL",
                settings.api_url
            )));
        }
        match settings.mode {
            SlackMode::Socket if settings.app_token.is_none() => {
                return Err(ChannelError::permanent(
                    "Slack Socket Mode needs an app token: set channels.slack.app_token in .security.yml or SLACK_APP_TOKEN",
                ));
            }
            SlackMode::Events if settings.signing_secret.is_none() => {
                return Err(ChannelError::permanent(
                    "the Slack Events API needs the signing secret: set channels.slack.signing_secret in .security.yml or SLACK_SIGNING_SECRET",
                ));
            }
            SlackMode::Events if settings.listen.is_none() => {
                return Err(ChannelError::permanent(
                    "channels.slack.mode = \"events\" needs channels.slack.listen, e.g. \"127.0.0.1:8787\"",
                ));
            }
            _ => {}
        }
        let connector = SlackClientHyperConnector::with_connector(https_connector())
            .with_slack_api_url(&api_url);
        let bot_token = SlackApiToken::new(settings.bot_token.clone().into());
        let http = files::client(&api_url)?;
        let limit = settings.silence_limit();
        Ok(Arc::new(Self {
            client: Arc::new(SlackClient::new(connector)),
            settings,
            bot_token,
            me: OnceCell::new(),
            health: HealthCell::new(CHANNEL, limit),
            approvals,
            seen: Mutex::new(inbound::Recent::default()),
            names: Mutex::new(Default::default()),
            directs: DirectChats::default(),
            http,
        }))
    }

    /// The channel with every capability Slack has, for the registry. (Bots cannot
    /// show "typing…" on Slack, so there is no typing capability.)
    pub fn handle(self: &Arc<Self>) -> ChannelHandle {
        let mut handle = ChannelHandle::new(Arc::clone(self) as _, info());
        handle.editor = Some(Arc::clone(self) as _);
        handle.media = Some(Arc::clone(self) as _);
        handle.reactions = Some(Arc::clone(self) as _);
        handle.approvals = Some(Arc::clone(self) as _);
        handle.health = Some(Arc::clone(self) as _);
        handle.direct = Some(Arc::clone(self) as _);
        handle
    }

    fn session(
        &self,
    ) -> SlackClientSession<'_, SlackClientHyperConnector<HttpsConnector<HttpConnector>>> {
        self.client.open_session(&self.bot_token)
    }

    fn set_health(&self, health: Health) {
        self.health.set(health);
    }

    /// Learn who we are (auth.test); this also proves the bot token works.
    async fn setup(&self) -> Result<&Me, ChannelError> {
        if let Some(me) = self.me.get() {
            return Ok(me);
        }
        let auth = self
            .session()
            .auth_test()
            .await
            .map_err(|e| errors::channel_error(&e, errors::Token::Bot))?;
        let me = Me {
            user_id: auth.user_id.to_string(),
            name: auth.user.clone().unwrap_or_else(|| "pincer".into()),
        };
        tracing::info!(channel = CHANNEL, bot = %me.name, team = %auth.team, "logged in");
        // Losing a race to set it is harmless: both values come from auth.test.
        let _ = self.me.set(me);
        self.me
            .get()
            .ok_or_else(|| ChannelError::transient("auth.test answered nothing"))
    }
}

/// An HTTP(S) connector for the Web API: HTTPS with the system's roots, and plain HTTP
/// too (self-hosted proxies, tests).
fn https_connector() -> HttpsConnector<HttpConnector> {
    // The process's config with the system's roots (parsed once, shared with the socket).
    let builder = match pincer_net::tls::native() {
        Some(config) => {
            hyper_rustls::HttpsConnectorBuilder::new().with_tls_config((*config).clone())
        }
        None => {
            tracing::warn!(
                channel = CHANNEL,
                "no system TLS roots; only plain-HTTP api_url values will work"
            );
            let config = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map(|b| {
                b.with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth()
            });
            match config {
                Ok(config) => hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config),
                Err(_) => hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(
                    rustls::ClientConfig::builder()
                        .with_root_certificates(rustls::RootCertStore::empty())
                        .with_no_client_auth(),
                ),
            }
        }
    };
    builder
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .build()
}

/// Slack's pace (<https://api.slack.com/apis/rate-limits>, "Posting messages"):
/// chat.postMessage allows about one message a second per channel, "short bursts >1
/// allowed". Its workspace-wide limit has no published figure: the whole workspace is
/// kept to about 30 a second, as before. A 429's `Retry-After` is waited out.
const PER_CHANNEL: Rate = Rate {
    burst: 3,
    every: Duration::from_secs(1),
};
const WORKSPACE: Rate = Rate {
    burst: 5,
    every: Duration::from_millis(35),
};

/// Slack's limits: 4,000 characters a message (see `render::slack`), the pace above,
/// chat.update a little slower.
pub fn info() -> ChannelInfo {
    ChannelInfo {
        split: slack_chunks,
        chat_rate: |_| PER_CHANNEL,
        channel_rate: WORKSPACE,
        edit_interval: Duration::from_millis(1500),
        typing_interval: Duration::from_secs(5),
    }
}

#[async_trait]
impl Channel for Slack {
    fn name(&self) -> &str {
        CHANNEL
    }

    async fn listen(
        &self,
        bus: InboundSender,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        match self.settings.mode {
            SlackMode::Socket => self.listen_socket(bus, shutdown).await,
            SlackMode::Events => self.listen_events(bus, shutdown).await,
        }
    }

    async fn send(&self, target: &Target, text: &str) -> Result<String, ChannelError> {
        self.send_text(target, text).await
    }
}

impl HealthChecker for Slack {
    fn health(&self) -> Health {
        self.health.get()
    }

    fn liveness(&self) -> Liveness {
        self.health.liveness()
    }
}
