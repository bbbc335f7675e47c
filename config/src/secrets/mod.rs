//! `.security.yml`: the secrets pincer reads (provider keys, channel tokens, tool and MCP
//! credentials), held as `SecretString` so `Debug` and errors never show them. Loading
//! refuses a file others can read; a missing file is simply "no secrets". How a secret is
//! chosen between this file and the environment lives in `resolve`.

mod resolve;
mod value;

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use secrecy::SecretString;
use serde::Deserialize;

use crate::ConfigError;

pub(crate) use resolve::channel_secret_env;
pub use resolve::check_channels;

/// Everything in `.security.yml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Secrets {
    /// Keys by provider name (the names of `[providers.<name>]`).
    #[serde(deserialize_with = "value::or_default")]
    pub providers: BTreeMap<String, ProviderSecrets>,
    /// Channel tokens.
    #[serde(deserialize_with = "value::or_default")]
    pub channels: ChannelSecrets,
    /// Tool credentials.
    #[serde(deserialize_with = "value::or_default")]
    pub tools: ToolSecrets,
    /// MCP server credentials by server name (the names of `[mcp.servers.<name>]`).
    #[serde(deserialize_with = "value::or_default")]
    pub mcp: BTreeMap<String, McpSecrets>,
    /// The web panel's login token and the optional bearer token for `/metrics`.
    #[serde(deserialize_with = "value::or_default")]
    pub web: WebSecrets,
}

/// `web:` in `.security.yml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSecrets {
    /// Logs a browser in (`pincer web url` prints the link); `pincer web token` makes one.
    #[serde(deserialize_with = "value::optional")]
    pub token: Option<SecretString>,
    /// When set, `/metrics` needs `Authorization: Bearer <metrics_token>`.
    #[serde(deserialize_with = "value::optional")]
    pub metrics_token: Option<SecretString>,
}

/// One provider's keys; several rotate on rate limits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderSecrets {
    /// A single key (tried first).
    #[serde(deserialize_with = "value::optional")]
    pub api_key: Option<SecretString>,
    /// More keys, in order.
    #[serde(deserialize_with = "value::list")]
    pub api_keys: Vec<SecretString>,
}

/// `channels:` in `.security.yml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChannelSecrets {
    /// `telegram: { bot_token }`.
    pub telegram: Option<TokenSecret>,
    /// `discord: { bot_token }`.
    pub discord: Option<TokenSecret>,
    /// `slack: { bot_token, app_token, signing_secret }`.
    pub slack: Option<SlackSecrets>,
    /// `matrix: { access_token | password, recovery_key, store_passphrase }`.
    pub matrix: Option<MatrixSecrets>,
}

/// A channel that needs only a bot token.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenSecret {
    /// The bot's token.
    #[serde(deserialize_with = "value::one")]
    pub bot_token: SecretString,
}

/// Slack's credentials; which are needed depends on `channels.slack.mode`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SlackSecrets {
    /// `xoxb-...`, for the Web API.
    #[serde(deserialize_with = "value::optional")]
    pub bot_token: Option<SecretString>,
    /// `xapp-...`, for Socket Mode.
    #[serde(deserialize_with = "value::optional")]
    pub app_token: Option<SecretString>,
    /// Verifies Events API requests.
    #[serde(deserialize_with = "value::optional")]
    pub signing_secret: Option<SecretString>,
}

/// Matrix's credentials: an access token or the bot account's password (with
/// `channels.matrix.user_id`), and for end-to-end encryption the recovery key and the
/// passphrase that encrypts the keys kept on disk.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MatrixSecrets {
    /// An access token of the bot's account (`syt_…` on Synapse).
    #[serde(deserialize_with = "value::optional")]
    pub access_token: Option<SecretString>,
    /// The bot account's password: Pincer logs in at start, on the same device each time.
    #[serde(deserialize_with = "value::optional")]
    pub password: Option<SecretString>,
    /// The account's recovery key (secret storage): lets the bot's device restore the
    /// room keys and cross-signing keys kept on the server.
    #[serde(deserialize_with = "value::optional")]
    pub recovery_key: Option<SecretString>,
    /// Encrypts the SDK's stores under `$PINCER_HOME/matrix/` (device keys, room keys).
    #[serde(deserialize_with = "value::optional")]
    pub store_passphrase: Option<SecretString>,
}

/// `tools:` in `.security.yml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolSecrets {
    /// The web-search backend's key.
    pub web_search: Option<ApiKeySecret>,
}

/// A section holding one API key.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeySecret {
    /// The key.
    #[serde(deserialize_with = "value::one")]
    pub api_key: SecretString,
}

/// One MCP server's secret environment variables and HTTP headers.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSecrets {
    /// Set in a stdio server's environment.
    #[serde(deserialize_with = "value::map")]
    pub env: BTreeMap<String, SecretString>,
    /// Sent with every request to an HTTP server.
    #[serde(deserialize_with = "value::map")]
    pub headers: BTreeMap<String, SecretString>,
}

/// Reads `.security.yml`. A missing file is empty [`Secrets`]; a file group or others can
/// read is refused with the `chmod` that fixes it.
pub fn load_secrets(path: &Path) -> Result<Secrets, ConfigError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Secrets::default()),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    check_private(path, &meta)?;
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_secrets(&text, path)
}

#[cfg(unix)]
fn check_private(path: &Path, meta: &std::fs::Metadata) -> Result<(), ConfigError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(ConfigError::SecretsPermissions {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_path: &Path, _meta: &std::fs::Metadata) -> Result<(), ConfigError> {
    Ok(()) // no portable mode bits; the file's ACL is the user's business
}

/// Parses `.security.yml` text; `path` names the file in messages.
pub fn parse_secrets(text: &str, path: &Path) -> Result<Secrets, ConfigError> {
    let has_content = text
        .lines()
        .map(str::trim)
        .any(|l| !l.is_empty() && !l.starts_with('#') && l != "---");
    if !has_content {
        return Ok(Secrets::default());
    }
    serde_yaml_ng::from_str(text).map_err(|e| {
        let location = e.location();
        ConfigError::SecretsFormat {
            path: path.to_path_buf(),
            line: location.as_ref().map(|l| l.line()),
            column: location.as_ref().map(|l| l.column()),
            message: strip_position(&e.to_string()),
        }
    })
}

/// serde_yaml_ng appends " at line L column C"; the error shows the position itself.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}
