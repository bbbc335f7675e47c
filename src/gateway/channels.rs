//! The chat channels `pincer run` starts: each enabled one built from config and
//! secrets (`check_channels` has made sure its tokens are there). Each platform is a
//! cargo feature (`telegram`, `discord`, `slack`, `matrix`, all on by default); a channel enabled
//! in config but left out of the build is an error that says so.

use std::sync::Arc;

use pincer_channels::Registry;
use pincer_channels::approval::PendingApprovals;
use pincer_config::{Config, Platform, Secrets};

use crate::home::Home;

/// Long-poll wait of a Telegram getUpdates call.
#[cfg(feature = "telegram")]
const TELEGRAM_POLL_SECS: u32 = 10;

/// Every enabled channel, built from config and secrets.
// A build with no chat platform at all uses none of its inputs.
#[cfg_attr(
    not(any(
        feature = "telegram",
        feature = "discord",
        feature = "slack",
        feature = "matrix"
    )),
    allow(unused_variables, unused_mut)
)]
pub fn build(
    home: &Home,
    config: &Config,
    secrets: &Secrets,
    env: &[(String, String)],
    approvals: &Arc<PendingApprovals>,
) -> anyhow::Result<Registry> {
    let mut registry = Registry::default();
    for access in config.channels.all() {
        if !access.enabled {
            continue;
        }
        match access.platform {
            #[cfg(feature = "telegram")]
            Platform::Telegram => {
                registry.insert(telegram(home, config, secrets, env, access, approvals)?)
            }
            #[cfg(feature = "discord")]
            Platform::Discord => {
                registry.insert(discord(home, config, secrets, env, access, approvals)?)
            }
            #[cfg(feature = "slack")]
            Platform::Slack => registry.insert(slack(home, config, secrets, env, approvals)?),
            #[cfg(feature = "matrix")]
            Platform::Matrix => registry.insert(matrix(home, config, secrets, env, approvals)?),
            #[cfg(not(all(
                feature = "telegram",
                feature = "discord",
                feature = "slack",
                feature = "matrix"
            )))]
            platform => anyhow::bail!(
                "channels.{name} is enabled, but this pincer was built without {name}; rebuild with `cargo build --release --features {name}`, or set channels.{name}.enabled = false in {}",
                home.config_file.display(),
                name = platform.name(),
            ),
        }
    }
    Ok(registry)
}

/// `silence_secs` as the adapters take it (`None`: the platform's own limit).
#[cfg(any(
    feature = "telegram",
    feature = "discord",
    feature = "slack",
    feature = "matrix"
))]
fn silence(secs: Option<u64>) -> Option<std::time::Duration> {
    secs.map(std::time::Duration::from_secs)
}

#[cfg(feature = "telegram")]
fn telegram(
    home: &Home,
    config: &Config,
    secrets: &Secrets,
    env: &[(String, String)],
    access: pincer_config::Access<'_>,
    approvals: &Arc<PendingApprovals>,
) -> anyhow::Result<pincer_channels::ChannelHandle> {
    use pincer_channels::telegram::{Telegram, TelegramSettings};
    use secrecy::ExposeSecret;
    let Some(token) = secrets.channel_token("telegram", env) else {
        anyhow::bail!("channels.telegram is enabled but has no bot token");
    };
    let telegram = Telegram::new(
        TelegramSettings {
            token: token.expose_secret().to_string(),
            api_url: access.api_url.to_string(),
            inbox: home.workspace(config).join("inbox"),
            media_max_bytes: access.media_max_mb.saturating_mul(1024 * 1024),
            poll_timeout_secs: TELEGRAM_POLL_SECS,
            silence: silence(access.silence_secs),
        },
        Arc::clone(approvals),
    )?;
    Ok(telegram.handle())
}

#[cfg(feature = "discord")]
fn discord(
    home: &Home,
    config: &Config,
    secrets: &Secrets,
    env: &[(String, String)],
    access: pincer_config::Access<'_>,
    approvals: &Arc<PendingApprovals>,
) -> anyhow::Result<pincer_channels::ChannelHandle> {
    use pincer_channels::discord::{Discord, DiscordSettings};
    use secrecy::ExposeSecret;
    let Some(token) = secrets.channel_token("discord", env) else {
        anyhow::bail!("channels.discord is enabled but has no bot token");
    };
    let discord = Discord::new(
        DiscordSettings {
            token: token.expose_secret().to_string(),
            api_url: access.api_url.to_string(),
            inbox: home.workspace(config).join("inbox"),
            media_max_bytes: access.media_max_mb.saturating_mul(1024 * 1024),
            silence: silence(access.silence_secs),
        },
        Arc::clone(approvals),
    )?;
    Ok(discord.handle())
}

/// The Slack adapter from `[channels.slack]` and its secrets (check_channels has made
/// sure the mode's token or secret is there).
#[cfg(feature = "slack")]
fn slack(
    home: &Home,
    config: &Config,
    secrets: &Secrets,
    env: &[(String, String)],
    approvals: &Arc<PendingApprovals>,
) -> anyhow::Result<pincer_channels::ChannelHandle> {
    use pincer_channels::slack::{Slack, SlackMode, SlackSettings};
    use secrecy::ExposeSecret;
    let section = &config.channels.slack;
    let access = section.access();
    let reveal = |s: Option<secrecy::SecretString>| s.map(|s| s.expose_secret().to_string());
    let Some(bot_token) = reveal(secrets.channel_token("slack", env)) else {
        anyhow::bail!("channels.slack is enabled but has no bot token"); // check_channels said more
    };
    let listen = match &section.listen {
        Some(addr) => Some(addr.parse().map_err(|e| {
            anyhow::anyhow!("channels.slack.listen = \"{addr}\" is not an address: {e}")
        })?),
        None => None,
    };
    let mode = match section.mode {
        pincer_config::SlackMode::Socket => SlackMode::Socket,
        pincer_config::SlackMode::Events => SlackMode::Events,
    };
    let slack = Slack::new(
        SlackSettings {
            bot_token,
            app_token: reveal(secrets.slack_app_token(env)),
            signing_secret: reveal(secrets.slack_signing_secret(env)),
            api_url: access.api_url.to_string(),
            mode,
            listen: listen.or_else(|| {
                (mode == SlackMode::Events)
                    .then(|| std::net::SocketAddr::from(([127, 0, 0, 1], 8787)))
            }),
            inbox: home.workspace(config).join("inbox"),
            media_max_bytes: access.media_max_mb.saturating_mul(1024 * 1024),
            silence: silence(access.silence_secs),
        },
        Arc::clone(approvals),
    )?;
    Ok(slack.handle())
}

/// The Matrix adapter from `[channels.matrix]` and its secrets: a password or an access
/// token (check_channels has made sure one is there), the recovery key and the store's
/// passphrase when set. Its stores live in `$PINCER_HOME/matrix`.
#[cfg(feature = "matrix")]
fn matrix(
    home: &Home,
    config: &Config,
    secrets: &Secrets,
    env: &[(String, String)],
    approvals: &Arc<PendingApprovals>,
) -> anyhow::Result<pincer_channels::ChannelHandle> {
    use pincer_channels::matrix::{Joins, Login, Matrix, MatrixSettings};
    use pincer_config::{DmPolicy, GroupPolicy};
    use secrecy::ExposeSecret;
    let section = &config.channels.matrix;
    let access = section.access();
    let reveal = |key: &str| {
        secrets
            .matrix_secret(key, env)
            .map(|s| s.expose_secret().to_string())
    };
    let login = match (reveal("access_token"), reveal("password")) {
        (Some(token), _) => Login::Token(token),
        (None, Some(password)) => Login::Password(password),
        (None, None) => {
            anyhow::bail!("channels.matrix is enabled but has no access token or password")
        }
    };
    let matrix = Matrix::new(
        MatrixSettings {
            homeserver: access.api_url.to_string(),
            user_id: section.user_id.clone(),
            login,
            state_dir: home.dir.join("matrix"),
            store_passphrase: reveal("store_passphrase"),
            recovery_key: reveal("recovery_key"),
            encryption: section.encryption,
            joins: Joins {
                direct: section.dm_policy != DmPolicy::Disabled,
                groups: match section.group_policy {
                    GroupPolicy::Disabled => Vec::new(),
                    _ => section.groups.clone(),
                },
                per_hour: section.invites_per_hour,
                trusted: pincer_core::access::owners_of(&config.agent.owners, "matrix")
                    .iter()
                    .filter_map(|o| o.strip_prefix("matrix:"))
                    .chain(section.allow_from.iter().map(String::as_str))
                    .filter(|id| *id != "*")
                    .map(str::to_string)
                    .collect(),
            },
            inbox: home.workspace(config).join("inbox"),
            media_max_bytes: access.media_max_mb.saturating_mul(1024 * 1024),
            silence: silence(access.silence_secs),
        },
        Arc::clone(approvals),
    )?;
    Ok(matrix.handle())
}
