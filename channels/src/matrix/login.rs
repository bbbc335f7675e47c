//! The SDK client: its SQLite state and crypto stores under `$PINCER_HOME/matrix/sdk`
//! (encrypted with `store_passphrase` when one is set), then a login. A password logs in
//! on the device id saved in `device-id` after the first login, so the bot stays one
//! device with one set of keys across restarts and no access token is written anywhere;
//! an access token is restored with the device whoami names. With the recovery key, the
//! bot restores its account's cross-signing keys from secret storage and signs its own
//! device, so people see it verified.

use std::path::Path;

use matrix_sdk::authentication::matrix::MatrixSession;
use matrix_sdk::ruma::{OwnedDeviceId, OwnedUserId, UserId};
use matrix_sdk::{Client, SessionMeta, SessionTokens, SqliteStoreConfig};

use super::errors::{channel_error, http_error};
use super::{Login, MatrixSettings, Me};
use crate::channel::ChannelError;

/// The file that keeps the bot's device id between starts.
const DEVICE_FILE: &str = "device-id";
/// The SDK's stores.
const STORE_DIR: &str = "sdk";
/// The device's name as people see it in their session lists.
const DEVICE_NAME: &str = "Pincer";

/// Build the client and log in.
pub(super) async fn connect(settings: &MatrixSettings) -> Result<(Client, Me), ChannelError> {
    let dir = &settings.state_dir;
    private_dir(dir)?;
    let mut builder = Client::builder().homeserver_url(&settings.homeserver);
    if settings.encryption {
        // The low-memory settings: a pool of one connection per core (not four) and a
        // 500 KB page cache per connection (not 2 MB); a personal bot's stores are small.
        let stores = SqliteStoreConfig::with_low_memory_config(dir.join(STORE_DIR))
            .passphrase(settings.store_passphrase.as_deref());
        builder = builder.sqlite_store_with_config_and_cache_path(stores, None::<&Path>);
    }
    let client = builder.build().await.map_err(|e| {
        ChannelError::permanent(format!(
            "cannot open the Matrix stores in {}: {e}; if the store passphrase changed, move that folder away (the bot becomes a new device)",
            dir.join(STORE_DIR).display()
        ))
    })?;
    match &settings.login {
        Login::Password(password) => {
            // `MatrixSettings::new` made sure a password comes with a user id.
            let user = settings.user_id.as_deref().unwrap_or_default();
            let saved = std::fs::read_to_string(dir.join(DEVICE_FILE)).ok();
            let mut login = client
                .matrix_auth()
                .login_username(user, password)
                .initial_device_display_name(DEVICE_NAME);
            if let Some(device) = saved.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
                login = login.device_id(device);
            }
            let response = login.send().await.map_err(|e| login_error(&e, user))?;
            write_private(&dir.join(DEVICE_FILE), response.device_id.as_str())?;
        }
        Login::Token(token) => {
            let (user_id, device_id) = whoami(&settings.homeserver, token).await?;
            if let Some(expected) = &settings.user_id
                && expected != user_id.as_str()
            {
                return Err(ChannelError::permanent(format!(
                    "the Matrix access token belongs to {user_id}, not channels.matrix.user_id = \"{expected}\"; fix one of them"
                )));
            }
            let session = MatrixSession {
                meta: SessionMeta { user_id, device_id },
                tokens: SessionTokens {
                    access_token: token.clone(),
                    refresh_token: None,
                },
            };
            client
                .restore_session(session)
                .await
                .map_err(|e| channel_error(&e))?;
        }
    }
    let Some(user_id) = client.user_id().map(UserId::to_owned) else {
        return Err(ChannelError::transient("the Matrix login named no user"));
    };
    let name = client.account().get_display_name().await.ok().flatten();
    if settings.encryption {
        verify_own_device(&client, settings.recovery_key.as_deref()).await;
    }
    tracing::info!(
        channel = super::CHANNEL,
        user = %user_id,
        device = client.device_id().map(|d| d.as_str()).unwrap_or_default(),
        "logged in"
    );
    Ok((client, Me { user_id, name }))
}

/// With the recovery key: restore the cross-signing keys from secret storage; the SDK
/// then signs this device with them. Failures are logged; the bot works unverified.
async fn verify_own_device(client: &Client, recovery_key: Option<&str>) {
    let encryption = client.encryption();
    encryption.wait_for_e2ee_initialization_tasks().await;
    let Some(key) = recovery_key else {
        return;
    };
    if let Err(e) = encryption.recovery().recover(key).await {
        tracing::warn!(
            channel = super::CHANNEL,
            "could not restore keys with channels.matrix.recovery_key ({e}); check the key (Element: Settings → Encryption → Recovery)"
        );
        return;
    }
    // `recover` signs the device only when secret storage held the self-signing key.
    let signing = encryption.cross_signing_status().await;
    if !signing.is_some_and(|status| status.has_self_signing) {
        tracing::warn!(
            channel = super::CHANNEL,
            "the recovery key opened the account's secret storage, but it holds no cross-signing keys, so this device stays unverified; set up cross-signing for the account (Element: Settings → Encryption) and restart"
        );
    }
}

/// Whose token this is, and on which device: `GET /account/whoami`.
async fn whoami(
    homeserver: &str,
    token: &str,
) -> Result<(OwnedUserId, OwnedDeviceId), ChannelError> {
    #[derive(serde::Deserialize)]
    struct WhoAmI {
        user_id: OwnedUserId,
        device_id: Option<OwnedDeviceId>,
    }
    let response = reqwest::Client::new()
        .get(format!("{homeserver}/_matrix/client/v3/account/whoami"))
        .timeout(std::time::Duration::from_secs(30))
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| {
            ChannelError::transient(format!(
                "cannot reach the Matrix homeserver: {}",
                e.without_url()
            ))
        })?;
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
        return Err(ChannelError::permanent(
            "the homeserver refused the Matrix access token (M_UNKNOWN_TOKEN): make a new one and put it in channels.matrix.access_token in .security.yml or MATRIX_ACCESS_TOKEN",
        ));
    }
    let me: WhoAmI = response
        .error_for_status()
        .map_err(|e| ChannelError::transient(format!("Matrix whoami failed: {}", e.without_url())))?
        .json()
        .await
        .map_err(|e| ChannelError::transient(format!("Matrix whoami answered garbage: {e}")))?;
    let Some(device_id) = me.device_id else {
        return Err(ChannelError::permanent(
            "the Matrix access token has no device (an appservice token?); use a token from a login, or the password",
        ));
    };
    Ok((me.user_id, device_id))
}

fn login_error(err: &matrix_sdk::Error, user: &str) -> ChannelError {
    use matrix_sdk::ruma::api::error::ErrorKind;
    match err.client_api_error_kind() {
        Some(ErrorKind::Forbidden) => ChannelError::permanent(format!(
            "the homeserver refused the password of {user}: fix channels.matrix.password in .security.yml (or MATRIX_PASSWORD)"
        )),
        Some(ErrorKind::UserDeactivated) => ChannelError::permanent(format!(
            "the Matrix account {user} is deactivated: make a new bot account"
        )),
        _ => match err {
            matrix_sdk::Error::Http(http) => http_error(http),
            other => channel_error(other),
        },
    }
}

/// What `pincer doctor` reads of the bot's device from disk (whether it is verified it
/// asks the homeserver).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceState {
    /// The device id the bot logs in with, once it has logged in.
    pub device_id: Option<String>,
}

/// What is kept under `state_dir` (no network, no store opened).
pub fn device_state(state_dir: &Path) -> DeviceState {
    let device_id = std::fs::read_to_string(state_dir.join(DEVICE_FILE))
        .ok()
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty());
    DeviceState { device_id }
}

/// Make `dir` (0700 on Unix: it holds the device's keys).
fn private_dir(dir: &Path) -> Result<(), ChannelError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| ChannelError::permanent(format!("cannot create {}: {e}", dir.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    Ok(())
}

/// Write a small file whole (a temporary file renamed over it), readable by the owner.
pub(super) fn write_private(path: &Path, text: &str) -> Result<(), ChannelError> {
    let failed = |e: std::io::Error| {
        ChannelError::transient(format!("cannot write {}: {e}", path.display()))
    };
    let temp = path.with_extension("new");
    std::fs::write(&temp, text).map_err(failed)?;
    std::fs::rename(&temp, path).map_err(failed)
}
