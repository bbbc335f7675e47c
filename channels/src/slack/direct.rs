//! A person's IM, for targets that name a person (`Target::user`): a member id (`U…`)
//! is not a channel id (`D…`), and `chat.update` needs the real one, so the IM is opened
//! with `conversations.open` (`users=<id>`, scope `im:write`; Slack answers the same IM
//! for the same person every time) and remembered in the adapter's `DirectChats`, so
//! only the first message to someone costs the call.

use async_trait::async_trait;
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;

use super::Slack;
use super::errors::{Token, channel_error};
use crate::channel::{ChannelError, DirectOpener};

#[async_trait]
impl DirectOpener for Slack {
    async fn open_direct(&self, user_id: &str) -> Result<String, ChannelError> {
        self.directs
            .get_or_open(user_id, async {
                let request = SlackApiConversationsOpenRequest::new()
                    .with_users(vec![SlackUserId(user_id.to_string())]);
                match self.session().conversations_open(&request).await {
                    Ok(opened) => Ok(opened.channel.id.0),
                    Err(err) => Err(opening_failed(user_id, &err)),
                }
            })
            .await
    }
}

/// Says whose IM could not be opened and, where Slack says why, what to do.
fn opening_failed(user: &str, err: &SlackClientError) -> ChannelError {
    if let SlackClientError::ApiError(api) = err
        && api.code == "missing_scope"
    {
        return ChannelError::permanent(format!(
            "cannot open an IM with Slack user {user}: the Slack app lacks the im:write scope; add it under OAuth & Permissions and reinstall the app"
        ));
    }
    if let SlackClientError::ApiError(api) = err
        && matches!(
            api.code.as_str(),
            "user_not_found" | "users_not_found" | "user_disabled" | "cannot_dm_bot"
        )
    {
        return ChannelError::permanent(format!(
            "cannot open an IM with Slack user {user} ({}): a person is written slack:<member id>, e.g. slack:U012AB3CD (their profile → ⋯ → Copy member ID)",
            api.code
        ));
    }
    let err = channel_error(err, Token::Bot);
    ChannelError {
        message: format!("cannot open an IM with Slack user {user}: {}", err.message),
        ..err
    }
}
