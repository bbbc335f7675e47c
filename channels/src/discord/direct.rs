//! A person's DM channel, for targets that name a person (`Target::user`): a user id is
//! not a channel id on Discord, so the DM is opened with `POST /users/@me/channels`
//! (`{"recipient_id": …}`; Discord answers the same channel for the same person every
//! time) and remembered in the adapter's `DirectChats`, so only the first message to
//! someone costs the request.

use async_trait::async_trait;
use reqwest::Method;
use serde_json::json;

use super::Discord;
use super::errors::TOKEN_REJECTED;
use super::rest::snowflake;
use crate::channel::{ChannelError, DirectOpener};

#[async_trait]
impl DirectOpener for Discord {
    async fn open_direct(&self, user_id: &str) -> Result<String, ChannelError> {
        let id: u64 = user_id.parse().map_err(|_| {
            ChannelError::permanent(format!(
                "`{user_id}` is not a Discord user id: a person is written discord:<user id>, e.g. discord:80351110224678912 (Developer Mode on, then right-click the user → Copy User ID)"
            ))
        })?;
        self.directs
            .get_or_open(user_id, async {
                let body = json!({"recipient_id": id.to_string()});
                let dm = self
                    .rest
                    .json(Method::POST, "/users/@me/channels", &body)
                    .await
                    .map_err(|err| opening_failed(id, err))?;
                snowflake(&dm["id"])
                    .map(|channel| channel.to_string())
                    .ok_or_else(|| {
                        ChannelError::transient(
                            "Discord's answer to opening a DM had no channel id",
                        )
                    })
            })
            .await
    }
}

/// Says whose DM could not be opened, keeping whether a retry may help.
fn opening_failed(user: u64, err: ChannelError) -> ChannelError {
    let hint = if err.retryable || err.message == TOKEN_REJECTED {
        ""
    } else {
        " (check that it is the person's user id, and that they share a server with the bot and accept DMs from its members)"
    };
    ChannelError {
        message: format!(
            "cannot open a DM with Discord user {user}: {}{hint}",
            err.message
        ),
        ..err
    }
}
