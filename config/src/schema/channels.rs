//! `[channels.telegram|discord|slack|matrix]`: whether each platform runs, where its API lives,
//! and who may talk to the bot there (DM policy, allowlist, group policy). Tokens live in
//! `.security.yml`; the policy rules themselves are enforced by the core's gate.

use serde::{Deserialize, Serialize};

use super::ids::string_or_int_list;

/// The four platform sections. Each is disabled until `enabled = true`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChannelsConfig {
    /// `[channels.telegram]`.
    pub telegram: ChannelConfig,
    /// `[channels.discord]`.
    pub discord: ChannelConfig,
    /// `[channels.slack]` (adds `mode` and `listen`).
    pub slack: SlackConfig,
    /// `[channels.matrix]` (adds `homeserver`, `user_id`, `encryption` and
    /// `invites_per_hour`).
    pub matrix: MatrixConfig,
}

/// The chat platforms Pincer speaks: the one list that config validation, secrets,
/// `doctor` and the gateway's channel builder all read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    /// Telegram (teloxide, long polling).
    Telegram,
    /// Discord (serenity, the gateway).
    Discord,
    /// Slack (slack-morphism, Socket Mode or the Events API).
    Slack,
    /// Matrix (matrix-sdk, the client-server API's sync loop).
    Matrix,
}

impl Platform {
    /// Every platform, in the order they are reported.
    pub const ALL: [Platform; 4] = [
        Platform::Telegram,
        Platform::Discord,
        Platform::Slack,
        Platform::Matrix,
    ];

    /// The channel's name: its config section, its sender ids' prefix, its key prefix.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Telegram => "telegram",
            Platform::Discord => "discord",
            Platform::Slack => "slack",
            Platform::Matrix => "matrix",
        }
    }

    /// The platform named `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Platform> {
        Platform::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The public API (`api_url` overrides it).
    pub fn default_api_url(self) -> &'static str {
        match self {
            Platform::Telegram => "https://api.telegram.org",
            Platform::Discord => "https://discord.com",
            Platform::Slack => "https://slack.com/api",
            Platform::Matrix => "https://matrix.org",
        }
    }

    /// The environment variable that can carry the bot token.
    pub fn token_env(self) -> &'static str {
        match self {
            Platform::Telegram => "TELEGRAM_BOT_TOKEN",
            Platform::Discord => "DISCORD_BOT_TOKEN",
            Platform::Slack => "SLACK_BOT_TOKEN",
            Platform::Matrix => "MATRIX_ACCESS_TOKEN",
        }
    }
}

impl ChannelsConfig {
    /// The access settings of every channel, in [`Platform::ALL`] order.
    pub fn all(&self) -> [Access<'_>; 4] {
        [
            self.telegram.access(Platform::Telegram),
            self.discord.access(Platform::Discord),
            self.slack.access(),
            self.matrix.access(),
        ]
    }

    /// The access settings of one channel by name.
    pub fn access(&self, name: &str) -> Option<Access<'_>> {
        self.all().into_iter().find(|a| a.name == name)
    }
}

/// Default API base URL of a channel (`api_url` overrides it).
pub fn default_api_url(channel: &str) -> Option<&'static str> {
    Platform::from_name(channel).map(Platform::default_api_url)
}

/// Settings of Telegram and Discord (and the common part of Slack).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChannelConfig {
    /// Off until the user turns it on.
    pub enabled: bool,
    /// API base URL (self-hosted Bot API servers, proxies, test fakes); `None` = public API.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_url: Option<String>,
    /// Who may talk to the bot in a DM.
    pub dm_policy: DmPolicy,
    /// Raw platform sender ids admitted in DMs; `["*"]` only with `dm_policy = "open"`.
    #[serde(deserialize_with = "string_or_int_list")]
    pub allow_from: Vec<String>,
    /// When the bot answers in an allowed group.
    pub group_policy: GroupPolicy,
    /// Allowed group/channel ids; `["*"]` = all.
    #[serde(deserialize_with = "string_or_int_list")]
    pub groups: Vec<String>,
    /// Largest attachment downloaded, MB.
    pub media_max_mb: u64,
    /// An emoji put on a person's message when its turn starts (`"👀"`); unset: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_reaction: Option<String>,
    /// Seconds the platform connection may stay silent before it is taken for dead and
    /// opened again; unset: the platform's own (Telegram: the long poll plus 5 s,
    /// Discord: 90, Slack: 60).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub silence_secs: Option<u64>,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            api_url: None,
            dm_policy: DmPolicy::default(),
            allow_from: Vec::new(),
            group_policy: GroupPolicy::default(),
            groups: Vec::new(),
            media_max_mb: 20,
            ack_reaction: None,
            silence_secs: None,
        }
    }
}

impl ChannelConfig {
    /// The access settings, with the API URL defaulted for `platform`.
    pub fn access(&self, platform: Platform) -> Access<'_> {
        Access {
            name: platform.name(),
            platform,
            enabled: self.enabled,
            api_url: api_url_or_default(self.api_url.as_deref(), platform),
            dm_policy: self.dm_policy,
            allow_from: &self.allow_from,
            group_policy: self.group_policy,
            groups: &self.groups,
            media_max_mb: self.media_max_mb,
            ack_reaction: self.ack_reaction.as_deref(),
            silence_secs: self.silence_secs,
        }
    }
}

/// `[channels.slack]`: the common fields written out (no `flatten`, which would switch off
/// unknown-key errors) plus the connection mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SlackConfig {
    /// See [`ChannelConfig::enabled`].
    pub enabled: bool,
    /// See [`ChannelConfig::api_url`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_url: Option<String>,
    /// See [`ChannelConfig::dm_policy`].
    pub dm_policy: DmPolicy,
    /// See [`ChannelConfig::allow_from`].
    #[serde(deserialize_with = "string_or_int_list")]
    pub allow_from: Vec<String>,
    /// See [`ChannelConfig::group_policy`].
    pub group_policy: GroupPolicy,
    /// See [`ChannelConfig::groups`].
    #[serde(deserialize_with = "string_or_int_list")]
    pub groups: Vec<String>,
    /// See [`ChannelConfig::media_max_mb`].
    pub media_max_mb: u64,
    /// See [`ChannelConfig::ack_reaction`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_reaction: Option<String>,
    /// See [`ChannelConfig::silence_secs`] (Socket Mode only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub silence_secs: Option<u64>,
    /// Socket Mode (outbound WebSocket, needs an app token) or the Events API (inbound HTTP).
    pub mode: SlackMode,
    /// Address the Events API listener binds, e.g. `127.0.0.1:8787` (events mode only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
}

impl Default for SlackConfig {
    fn default() -> Self {
        let common = ChannelConfig::default();
        Self {
            enabled: common.enabled,
            api_url: common.api_url,
            dm_policy: common.dm_policy,
            allow_from: common.allow_from,
            group_policy: common.group_policy,
            groups: common.groups,
            media_max_mb: common.media_max_mb,
            ack_reaction: None,
            silence_secs: None,
            mode: SlackMode::default(),
            listen: None,
        }
    }
}

impl SlackConfig {
    /// The access settings, with the API URL defaulted.
    pub fn access(&self) -> Access<'_> {
        Access {
            name: Platform::Slack.name(),
            platform: Platform::Slack,
            enabled: self.enabled,
            api_url: api_url_or_default(self.api_url.as_deref(), Platform::Slack),
            dm_policy: self.dm_policy,
            allow_from: &self.allow_from,
            group_policy: self.group_policy,
            groups: &self.groups,
            media_max_mb: self.media_max_mb,
            ack_reaction: self.ack_reaction.as_deref(),
            silence_secs: self.silence_secs,
        }
    }
}

/// `[channels.matrix]`: the common fields written out, plus the homeserver, the bot's
/// user id and whether end-to-end encryption is on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MatrixConfig {
    /// See [`ChannelConfig::enabled`].
    pub enabled: bool,
    /// The homeserver's client-server API base, e.g. `https://matrix.example.org`;
    /// unset: `https://matrix.org`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub homeserver: Option<String>,
    /// The bot's user id (`@pincer:example.org`); needed to log in with a password, and
    /// checked against the access token's owner when one is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// End-to-end encryption: the bot keeps its device keys under
    /// `$PINCER_HOME/matrix/` and reads and writes encrypted rooms. On by default.
    pub encryption: bool,
    /// See [`ChannelConfig::dm_policy`].
    pub dm_policy: DmPolicy,
    /// See [`ChannelConfig::allow_from`].
    #[serde(deserialize_with = "string_or_int_list")]
    pub allow_from: Vec<String>,
    /// See [`ChannelConfig::group_policy`].
    pub group_policy: GroupPolicy,
    /// See [`ChannelConfig::groups`] (room ids, `!abc:example.org`).
    #[serde(deserialize_with = "string_or_int_list")]
    pub groups: Vec<String>,
    /// See [`ChannelConfig::media_max_mb`].
    pub media_max_mb: u64,
    /// See [`ChannelConfig::ack_reaction`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_reaction: Option<String>,
    /// See [`ChannelConfig::silence_secs`]: how long one sync may go unanswered (it
    /// long-polls for 30 s) before the connection is taken for dead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub silence_secs: Option<u64>,
    /// How many room invites from strangers the bot accepts in an hour on average (up
    /// to half of them at once); the rest are declined. Anyone on any homeserver can
    /// invite the bot to a direct chat, and every room it joins is synced and stored
    /// for good. Invites from owners and `allow_from`, and to rooms `groups` names, do
    /// not count. `0`: no limit.
    pub invites_per_hour: u32,
}

impl Default for MatrixConfig {
    fn default() -> Self {
        let common = ChannelConfig::default();
        Self {
            enabled: common.enabled,
            homeserver: None,
            user_id: None,
            encryption: true,
            dm_policy: common.dm_policy,
            allow_from: common.allow_from,
            group_policy: common.group_policy,
            groups: common.groups,
            media_max_mb: common.media_max_mb,
            ack_reaction: None,
            silence_secs: None,
            invites_per_hour: 20,
        }
    }
}

impl MatrixConfig {
    /// The access settings, with the homeserver defaulted.
    pub fn access(&self) -> Access<'_> {
        Access {
            name: Platform::Matrix.name(),
            platform: Platform::Matrix,
            enabled: self.enabled,
            api_url: api_url_or_default(self.homeserver.as_deref(), Platform::Matrix),
            dm_policy: self.dm_policy,
            allow_from: &self.allow_from,
            group_policy: self.group_policy,
            groups: &self.groups,
            media_max_mb: self.media_max_mb,
            ack_reaction: self.ack_reaction.as_deref(),
            silence_secs: self.silence_secs,
        }
    }
}

fn api_url_or_default(configured: Option<&str>, platform: Platform) -> &str {
    configured
        .unwrap_or(platform.default_api_url())
        .trim_end_matches('/')
}

/// The settings every channel shares, borrowed from its section.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Access<'a> {
    /// `telegram`, `discord` or `slack` (`platform.name()`).
    pub name: &'static str,
    /// Which platform this is.
    pub platform: Platform,
    /// Whether `pincer run` starts it.
    pub enabled: bool,
    /// API base URL with the platform default applied, no trailing `/`.
    pub api_url: &'a str,
    /// DM admission.
    pub dm_policy: DmPolicy,
    /// DM allowlist.
    pub allow_from: &'a [String],
    /// Group answering.
    pub group_policy: GroupPolicy,
    /// Allowed groups.
    pub groups: &'a [String],
    /// Attachment size cap, MB.
    pub media_max_mb: u64,
    /// The reaction put on a message when its turn starts, if any.
    pub ack_reaction: Option<&'a str>,
    /// How long the connection may stay silent, seconds; `None`: the platform's own.
    pub silence_secs: Option<u64>,
}

/// Who may talk to the bot in a DM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DmPolicy {
    /// Owners, `allow_from`, and senders approved with a pairing code.
    #[default]
    Pairing,
    /// Owners, `allow_from` and already-approved senders; no codes issued.
    Allowlist,
    /// Everyone (requires `allow_from = ["*"]`).
    Open,
    /// No DMs at all.
    Disabled,
}

impl DmPolicy {
    /// The name used in `config.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pairing => "pairing",
            Self::Allowlist => "allowlist",
            Self::Open => "open",
            Self::Disabled => "disabled",
        }
    }
}

/// When the bot answers in an allowed group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupPolicy {
    /// Only when mentioned, replied to, or sent a command.
    #[default]
    Mention,
    /// Every message.
    Always,
    /// Never in groups.
    Disabled,
}

/// How the Slack adapter connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlackMode {
    /// Socket Mode: an outbound WebSocket; needs the app token.
    #[default]
    Socket,
    /// Events API: Slack calls `listen`; needs the signing secret.
    Events,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_applies_default_api_urls() {
        let channels = ChannelsConfig::default();
        let urls: Vec<_> = channels.all().iter().map(|a| a.api_url).collect();
        assert_eq!(
            urls,
            [
                "https://api.telegram.org",
                "https://discord.com",
                "https://slack.com/api",
                "https://matrix.org"
            ]
        );
        let telegram = ChannelConfig {
            api_url: Some("http://127.0.0.1:9000/".into()),
            ..ChannelConfig::default()
        };
        assert_eq!(
            telegram.access(Platform::Telegram).api_url,
            "http://127.0.0.1:9000"
        );
        assert!(channels.access("irc").is_none());
        assert!(!channels.access("slack").unwrap().enabled);
    }
}
