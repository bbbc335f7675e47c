//! Sending through Discord's REST API: text (markdown as written; Discord renders it),
//! in-place edits (streaming), typing, files, reactions. A target with a
//! `thread_id` is answered in that thread (a thread is a channel of its own on Discord).
//! Replies never ping anyone: `allowed_mentions` is empty. A target naming a person
//! must be resolved to their DM first (the manager does; see `direct`): a user id is no
//! channel id.

use async_trait::async_trait;
use reqwest::Method;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use super::Discord;
use super::rest::{Rest, snowflake};
use crate::channel::{
    ChannelError, MediaSender, MessageEditor, OutboundMedia, ReactionCapable, TypingCapable,
};
use crate::direct;
use crate::message::Target;

/// The channel a target's messages go to: its thread, else the chat.
fn channel(target: &Target) -> Result<u64, ChannelError> {
    if target.user {
        return Err(direct::unresolved(target));
    }
    let id = target.thread_id.as_deref().unwrap_or(&target.chat_id);
    id.parse::<u64>()
        .map_err(|_| ChannelError::permanent(format!("`{id}` is not a Discord channel id")))
}

pub(super) fn message_path(target: &Target, message_id: &str) -> Result<String, ChannelError> {
    let id: u64 = message_id.parse().map_err(|_| {
        ChannelError::permanent(format!("`{message_id}` is not a Discord message id"))
    })?;
    Ok(format!("/channels/{}/messages/{id}", channel(target)?))
}

/// Posts a message; returns its id.
pub(super) async fn post_message(
    rest: &Rest,
    target: &Target,
    body: Value,
) -> Result<String, ChannelError> {
    let path = format!("/channels/{}/messages", channel(target)?);
    let sent = rest.json(Method::POST, &path, &body).await?;
    created_id(&sent)
}

fn created_id(sent: &Value) -> Result<String, ChannelError> {
    snowflake(&sent["id"])
        .map(|id| id.to_string())
        .ok_or_else(|| ChannelError::transient("Discord's answer to a sent message had no id"))
}

fn text_body(text: &str) -> Value {
    json!({"content": text, "allowed_mentions": {"parse": []}})
}

impl Discord {
    pub(super) async fn send_text(
        &self,
        target: &Target,
        text: &str,
    ) -> Result<String, ChannelError> {
        post_message(&self.rest, target, text_body(text)).await
    }
}

#[async_trait]
impl TypingCapable for Discord {
    async fn typing(&self, target: &Target) -> Result<(), ChannelError> {
        let path = format!("/channels/{}/typing", channel(target)?);
        self.rest.empty(Method::POST, &path).await.map(|_| ())
    }
}

#[async_trait]
impl MessageEditor for Discord {
    async fn edit(&self, target: &Target, id: &str, text: &str) -> Result<(), ChannelError> {
        let path = message_path(target, id)?;
        self.rest
            .json(Method::PATCH, &path, &json!({"content": text}))
            .await
            .map(|_| ())
    }
}

#[async_trait]
impl MediaSender for Discord {
    async fn send_media(
        &self,
        target: &Target,
        media: &OutboundMedia,
    ) -> Result<String, ChannelError> {
        let bytes = media.bytes.clone();
        let name = media.file_name.clone();
        let payload = json!({
            "content": media.caption.clone().unwrap_or_default(),
            "attachments": [{"id": 0, "filename": name}],
            "allowed_mentions": {"parse": []},
        });
        let form = Form::new()
            .text("payload_json", payload.to_string())
            .part("files[0]", Part::bytes(bytes).file_name(name));
        let path = format!("/channels/{}/messages", channel(target)?);
        let sent = self.rest.multipart(&path, form).await?;
        created_id(&sent)
    }
}

#[async_trait]
impl ReactionCapable for Discord {
    async fn react(&self, target: &Target, id: &str, emoji: &str) -> Result<(), ChannelError> {
        let path = format!(
            "{}/reactions/{}/@me",
            message_path(target, id)?,
            percent(emoji)
        );
        self.rest.empty(Method::PUT, &path).await.map(|_| ())
    }
}

/// Percent-encodes everything but ASCII letters and digits (an emoji in a URL path).
fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_answered_in_the_thread() {
        let target = Target {
            channel: "discord".into(),
            chat_id: "500".into(),
            thread_id: Some("600".into()),
            user: false,
        };
        assert_eq!(channel(&target).unwrap(), 600);
        assert_eq!(
            message_path(&target, "7").unwrap(),
            "/channels/600/messages/7"
        );
        assert_eq!(percent("👍"), "%F0%9F%91%8D");
    }

    #[test]
    fn a_persons_id_is_never_taken_for_a_channel() {
        let person = Target::user("discord:80351110224678912").unwrap();
        let err = channel(&person).unwrap_err();
        assert!(!err.retryable);
        assert!(err.message.contains("direct chat"), "{err}");
    }
}
