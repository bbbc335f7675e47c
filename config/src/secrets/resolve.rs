//! Choosing each secret: `.security.yml` first, else the well-known environment variable
//! (`OPENAI_API_KEY`, `TELEGRAM_BOT_TOKEN`, ...), and checking that every enabled channel
//! has what it needs. The environment is passed in, never read here. The table of channel
//! secrets and their variables lives here and nowhere else.

use std::path::Path;

use secrecy::{ExposeSecret, SecretString};

use super::Secrets;
use crate::{Config, ConfigError, Platform, ProviderKind, SlackMode};

/// The environment variable that can carry a channel secret (`channels.<channel>.<key>`).
pub(crate) fn channel_secret_env(channel: &str, key: &str) -> Option<&'static str> {
    match (channel, key) {
        (name, "bot_token") => Platform::from_name(name).map(Platform::token_env),
        ("slack", "app_token") => Some("SLACK_APP_TOKEN"),
        ("slack", "signing_secret") => Some("SLACK_SIGNING_SECRET"),
        ("matrix", "access_token") => Some("MATRIX_ACCESS_TOKEN"),
        ("matrix", "password") => Some("MATRIX_PASSWORD"),
        ("matrix", "recovery_key") => Some("MATRIX_RECOVERY_KEY"),
        ("matrix", "store_passphrase") => Some("MATRIX_STORE_PASSPHRASE"),
        _ => None,
    }
}

/// The last non-empty value of `name` in `env`.
fn env_get(env: &[(String, String)], name: &str) -> Option<SecretString> {
    env.iter()
        .rev()
        .find(|(k, v)| k == name && !v.is_empty())
        .map(|(_, v)| SecretString::from(v.as_str()))
}

fn non_empty(secret: Option<&SecretString>) -> Option<SecretString> {
    secret.filter(|s| !s.expose_secret().is_empty()).cloned()
}

impl Secrets {
    /// The keys to use for provider `provider_name`, in rotation order: `api_key` then
    /// `api_keys` from the file; if the file has none, the variable of `kind`
    /// (`OPENAI_API_KEY` / `ANTHROPIC_API_KEY`). Empty means "send no auth header".
    pub fn provider_keys(
        &self,
        provider_name: &str,
        kind: ProviderKind,
        env: &[(String, String)],
    ) -> Vec<SecretString> {
        let mut keys = Vec::new();
        if let Some(p) = self.providers.get(provider_name) {
            keys.extend(non_empty(p.api_key.as_ref()));
            keys.extend(p.api_keys.iter().filter_map(|k| non_empty(Some(k))));
        }
        if keys.is_empty() {
            keys.extend(env_get(env, kind.env_var()));
        }
        keys
    }

    /// A channel's bot token (`telegram`, `discord`, `slack`): the file, else
    /// `TELEGRAM_BOT_TOKEN` / `DISCORD_BOT_TOKEN` / `SLACK_BOT_TOKEN`.
    pub fn channel_token(&self, channel: &str, env: &[(String, String)]) -> Option<SecretString> {
        let from_file = match Platform::from_name(channel) {
            Some(Platform::Telegram) => self.channels.telegram.as_ref().map(|t| &t.bot_token),
            Some(Platform::Discord) => self.channels.discord.as_ref().map(|t| &t.bot_token),
            Some(Platform::Slack) => self
                .channels
                .slack
                .as_ref()
                .and_then(|s| s.bot_token.as_ref()),
            Some(Platform::Matrix) => return self.matrix_secret("access_token", env),
            None => None,
        };
        non_empty(from_file)
            .or_else(|| channel_secret_env(channel, "bot_token").and_then(|v| env_get(env, v)))
    }

    /// Slack's app token for Socket Mode: the file, else `SLACK_APP_TOKEN`.
    pub fn slack_app_token(&self, env: &[(String, String)]) -> Option<SecretString> {
        let from_file = self
            .channels
            .slack
            .as_ref()
            .and_then(|s| s.app_token.as_ref());
        non_empty(from_file).or_else(|| env_get(env, "SLACK_APP_TOKEN"))
    }

    /// Slack's signing secret for the Events API: the file, else `SLACK_SIGNING_SECRET`.
    pub fn slack_signing_secret(&self, env: &[(String, String)]) -> Option<SecretString> {
        let from_file = self
            .channels
            .slack
            .as_ref()
            .and_then(|s| s.signing_secret.as_ref());
        non_empty(from_file).or_else(|| env_get(env, "SLACK_SIGNING_SECRET"))
    }
}

impl Secrets {
    /// One of Matrix's secrets (`access_token`, `password`, `recovery_key`,
    /// `store_passphrase`): the file, else `MATRIX_<KEY>`.
    pub fn matrix_secret(&self, key: &str, env: &[(String, String)]) -> Option<SecretString> {
        let file = self.channels.matrix.as_ref();
        let from_file = file.and_then(|m| match key {
            "access_token" => m.access_token.as_ref(),
            "password" => m.password.as_ref(),
            "recovery_key" => m.recovery_key.as_ref(),
            "store_passphrase" => m.store_passphrase.as_ref(),
            _ => None,
        });
        non_empty(from_file)
            .or_else(|| channel_secret_env("matrix", key).and_then(|v| env_get(env, v)))
    }
}

/// Every enabled channel has its token(s): a bot token for each, plus Slack's app token in
/// socket mode or signing secret in events mode. The error names `security_file` and the
/// environment variable.
pub fn check_channels(
    config: &Config,
    secrets: &Secrets,
    security_file: &Path,
    env: &[(String, String)],
) -> Result<(), ConfigError> {
    let missing = |channel: &str, what: &str, key: &str, reason: Option<&str>| {
        ConfigError::MissingChannelSecret {
            channel: channel.to_owned(),
            what: what.to_owned(),
            key: key.to_owned(),
            security_file: security_file.to_path_buf(),
            env_var: channel_secret_env(channel, key)
                .unwrap_or_default()
                .to_owned(),
            reason: reason.map(str::to_owned),
        }
    };
    let matrix = &config.channels.matrix;
    if matrix.enabled
        && secrets.matrix_secret("access_token", env).is_none()
        && secrets.matrix_secret("password", env).is_none()
    {
        return Err(ConfigError::MissingChannelSecret {
            channel: "matrix".to_owned(),
            what: "access token or password".to_owned(),
            key: "access_token (or .password, with channels.matrix.user_id)".to_owned(),
            security_file: security_file.to_path_buf(),
            env_var: "MATRIX_ACCESS_TOKEN (or MATRIX_PASSWORD)".to_owned(),
            reason: None,
        });
    }
    for access in config.channels.all() {
        if access.platform == Platform::Matrix {
            continue;
        }
        if access.enabled && secrets.channel_token(access.name, env).is_none() {
            return Err(missing(access.name, "bot token", "bot_token", None));
        }
    }
    let slack = &config.channels.slack;
    if slack.enabled {
        match slack.mode {
            SlackMode::Socket if secrets.slack_app_token(env).is_none() => {
                return Err(missing(
                    "slack",
                    "app token",
                    "app_token",
                    Some("in socket mode"),
                ));
            }
            SlackMode::Events if secrets.slack_signing_secret(env).is_none() => {
                return Err(missing(
                    "slack",
                    "signing secret",
                    "signing_secret",
                    Some("in events mode"),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}
