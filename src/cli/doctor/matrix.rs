//! `pincer doctor` for Matrix: the homeserver answers, the credentials work (whoami with
//! the access token, or a password login on a throwaway device that is logged out
//! again, so the gateway's own device keeps its login), the bot is in rooms, and its
//! device is verified (cross-signed by the account) or how to make it so.

use pincer_config::{Config, Secrets};
use secrecy::ExposeSecret;
use serde_json::{Value, json};

use super::Report;
use crate::home::Home;

const NAME: &str = "matrix";

pub(super) async fn check(
    home: &Home,
    config: &Config,
    secrets: &Secrets,
    env: &[(String, String)],
    http: &reqwest::Client,
    report: &mut Report,
) {
    let section = &config.channels.matrix;
    let hs = section.access().api_url.to_string();
    if let Err(why) = get(http, &format!("{hs}/_matrix/client/versions"), None).await {
        report.fail(
            NAME,
            format!("cannot reach the homeserver {hs}: {why}"),
            "check channels.matrix.homeserver and the network",
        );
        return;
    }
    let token = secrets.matrix_secret("access_token", env);
    let password = secrets.matrix_secret("password", env);
    let (token, throwaway) = match (token, password, section.user_id.as_deref()) {
        (Some(token), _, _) => (token.expose_secret().to_string(), false),
        (None, Some(password), Some(user)) => {
            match login(http, &hs, user, password.expose_secret()).await {
                Ok(token) => (token, true),
                Err(why) => {
                    report.fail(
                        NAME,
                        format!("cannot log in as {user}: {why}"),
                        "fix channels.matrix.password in .security.yml (or MATRIX_PASSWORD)",
                    );
                    return;
                }
            }
        }
        (None, Some(_), None) => {
            report.fail(
                NAME,
                "a password is set but not the bot's user id",
                "set channels.matrix.user_id = \"@pincer:example.org\" in config.toml",
            );
            return;
        }
        (None, None, _) => return, // check_channels said so
    };
    check_logged_in(home, config, http, &hs, &token, report).await;
    if throwaway {
        let _ = http
            .post(format!("{hs}/_matrix/client/v3/logout"))
            .bearer_auth(&token)
            .json(&json!({}))
            .send()
            .await;
    }
}

async fn check_logged_in(
    home: &Home,
    config: &Config,
    http: &reqwest::Client,
    hs: &str,
    token: &str,
    report: &mut Report,
) {
    let me = match get(
        http,
        &format!("{hs}/_matrix/client/v3/account/whoami"),
        Some(token),
    )
    .await
    {
        Ok(me) => me,
        Err(why) => {
            report.fail(
                NAME,
                format!("the homeserver refused the login ({why})"),
                "put a valid access token in .security.yml under channels.matrix.access_token (or MATRIX_ACCESS_TOKEN), or use the password",
            );
            return;
        }
    };
    let user = me["user_id"].as_str().unwrap_or("?").to_string();
    let rooms = get(
        http,
        &format!("{hs}/_matrix/client/v3/joined_rooms"),
        Some(token),
    )
    .await
    .ok()
    .and_then(|r| r["joined_rooms"].as_array().map(Vec::len))
    .unwrap_or(0);
    report.ok(NAME, format!("logged in as {user}, in {rooms} room(s)"));
    if rooms == 0 {
        report.warn(
            NAME,
            "the bot is in no room yet",
            format!("start a direct chat with {user} from your Matrix client, or invite it to a room listed in channels.matrix.groups"),
        );
    }
    if !config.channels.matrix.encryption {
        report.ok(
            NAME,
            "end-to-end encryption is off (channels.matrix.encryption = false)",
        );
        return;
    }
    let device = pincer_channels::matrix::device_state(&home.dir.join("matrix"))
        .device_id
        .or_else(|| {
            config
                .channels
                .matrix
                .user_id
                .is_none()
                .then(|| me["device_id"].as_str().map(str::to_string))
                .flatten()
        });
    let Some(device) = device else {
        report.warn(
            NAME,
            "the bot has no device yet (the gateway makes one at its first start)",
            "run `pincer run` once, then `pincer doctor` again",
        );
        return;
    };
    let query = json!({ "device_keys": { user.as_str(): [device.as_str()] } });
    let keys = http
        .post(format!("{hs}/_matrix/client/v3/keys/query"))
        .bearer_auth(token)
        .json(&query)
        .send()
        .await;
    let keys: Value = match keys {
        Ok(r) => r.json().await.unwrap_or_default(),
        Err(_) => Value::Null,
    };
    match verified(&keys, &user, &device) {
        Some(true) => report.ok(NAME, format!("device {device} is verified (cross-signed by {user})")),
        Some(false) => report.warn(
            NAME,
            format!("device {device} is not verified: people see a warning on its messages in encrypted rooms"),
            "put the account's recovery key in .security.yml under channels.matrix.recovery_key and restart (the bot signs its own device), or verify the session \"Pincer\" from another of the account's sessions",
        ),
        None => report.warn(
            NAME,
            format!("device {device} has published no keys"),
            "start the gateway (`pincer run`): it uploads its keys at login",
        ),
    }
}

/// Whether the device's keys carry the account's self-signing key's signature; `None`
/// when the device has no keys.
fn verified(keys: &Value, user: &str, device: &str) -> Option<bool> {
    let device_keys = keys["device_keys"][user][device].as_object()?;
    let self_signing: Vec<String> = keys["self_signing_keys"][user]["keys"]
        .as_object()
        .map(|k| k.keys().cloned().collect())
        .unwrap_or_default();
    let signatures = device_keys.get("signatures").and_then(|s| s.get(user));
    Some(
        self_signing
            .iter()
            .any(|key| signatures.is_some_and(|s| s.get(key).is_some())),
    )
}

async fn login(
    http: &reqwest::Client,
    hs: &str,
    user: &str,
    password: &str,
) -> Result<String, String> {
    let body = json!({
        "type": "m.login.password",
        "identifier": { "type": "m.id.user", "user": user },
        "password": password,
        "initial_device_display_name": "pincer doctor",
    });
    let response = http
        .post(format!("{hs}/_matrix/client/v3/login"))
        .json(&body)
        .send()
        .await
        .map_err(|e| e.without_url().to_string())?;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or_default();
    match body["access_token"].as_str() {
        Some(token) if status.is_success() => Ok(token.to_string()),
        _ => Err(body["errcode"]
            .as_str()
            .map_or_else(|| status.to_string(), str::to_string)),
    }
}

async fn get(http: &reqwest::Client, url: &str, token: Option<&str>) -> Result<Value, String> {
    let mut request = http.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request
        .send()
        .await
        .map_err(|e| e.without_url().to_string())?;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or_default();
    if status.is_success() {
        Ok(body)
    } else {
        Err(body["errcode"]
            .as_str()
            .map_or_else(|| status.to_string(), str::to_string))
    }
}
