//! Sending through Slack: markdown rendered as mrkdwn (`chat.postMessage`, into the
//! thread when the target has one), messages edited in place (`chat.update`), files
//! (`files.getUploadURLExternal`, the upload, `files.completeUploadExternal`) and
//! reactions. Message ids are Slack's `ts`. A target naming a person must be resolved
//! to their IM first (the manager does; see `direct`): `chat.update` wants the IM's id.

use async_trait::async_trait;
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;

use super::Slack;
use super::errors::{Token, channel_error};
use crate::channel::{ChannelError, MediaSender, MessageEditor, OutboundMedia, ReactionCapable};
use crate::direct;
use crate::message::Target;
use crate::render::to_slack_mrkdwn;

pub(super) fn channel_id(target: &Target) -> Result<SlackChannelId, ChannelError> {
    if target.user {
        return Err(direct::unresolved(target));
    }
    Ok(SlackChannelId(target.chat_id.clone()))
}

pub(super) fn thread_ts(target: &Target) -> Option<SlackTs> {
    target.thread_id.clone().map(SlackTs)
}

impl Slack {
    pub(super) async fn send_text(
        &self,
        target: &Target,
        markdown: &str,
    ) -> Result<String, ChannelError> {
        self.post(target, to_slack_mrkdwn(markdown)).await
    }

    async fn post(&self, target: &Target, mrkdwn: String) -> Result<String, ChannelError> {
        let content = SlackMessageContent::new().with_text(mrkdwn);
        let request = SlackApiChatPostMessageRequest::new(channel_id(target)?, content)
            .opt_thread_ts(thread_ts(target));
        self.session()
            .chat_post_message(&request)
            .await
            .map(|sent| sent.ts.0)
            .map_err(|e| channel_error(&e, Token::Bot))
    }
}

#[async_trait]
impl MessageEditor for Slack {
    async fn edit(&self, target: &Target, id: &str, markdown: &str) -> Result<(), ChannelError> {
        let content = SlackMessageContent::new().with_text(to_slack_mrkdwn(markdown));
        let request =
            SlackApiChatUpdateRequest::new(channel_id(target)?, content, SlackTs(id.to_string()));
        self.session()
            .chat_update(&request)
            .await
            .map(|_| ())
            .map_err(|e| channel_error(&e, Token::Bot))
    }
}

/// The largest file Slack takes.
const MAX_UPLOAD: u64 = 1 << 30;

#[async_trait]
impl MediaSender for Slack {
    /// Returns the file's id (Slack posts the file message itself).
    async fn send_media(
        &self,
        target: &Target,
        media: &OutboundMedia,
    ) -> Result<String, ChannelError> {
        if media.bytes.len() as u64 > MAX_UPLOAD {
            return Err(ChannelError::permanent(format!(
                "{} is {} MB; Slack takes files up to 1 GB",
                media.file_name,
                media.bytes.len() >> 20
            )));
        }
        let bytes = media.bytes.clone();
        let file_name = media.file_name.clone();
        let session = self.session();
        let upload = session
            .get_upload_url_external(&SlackApiFilesGetUploadUrlExternalRequest::new(
                file_name.clone(),
                bytes.len(),
            ))
            .await
            .map_err(|e| channel_error(&e, Token::Bot))?;
        session
            .files_upload_via_url(&SlackApiFilesUploadViaUrlRequest::new(
                upload.upload_url,
                bytes,
                mime_of(&file_name).to_string(),
            ))
            .await
            .map_err(|e| channel_error(&e, Token::Bot))?;
        let complete = SlackApiFilesCompleteUploadExternalRequest::new(vec![
            SlackApiFilesComplete::new(upload.file_id.clone()).with_title(file_name),
        ])
        .with_channel_id(channel_id(target)?)
        .opt_thread_ts(thread_ts(target))
        .opt_initial_comment(media.caption.as_deref().map(to_slack_mrkdwn));
        session
            .files_complete_upload_external(&complete)
            .await
            .map_err(|e| channel_error(&e, Token::Bot))?;
        Ok(upload.file_id.0)
    }
}

/// A content type from the file's extension (Slack works out the rest itself).
fn mime_of(name: &str) -> &'static str {
    let ext = name
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "txt" | "md" | "log" => "text/plain",
        "csv" => "text/csv",
        "json" => "application/json",
        "ogg" | "oga" => "audio/ogg",
        "wav" => "audio/wav",
        _ => "application/octet-stream",
    }
}

#[async_trait]
impl ReactionCapable for Slack {
    async fn react(&self, target: &Target, id: &str, emoji: &str) -> Result<(), ChannelError> {
        let request = SlackApiReactionsAddRequest::new(
            channel_id(target)?,
            SlackReactionName(reaction_name(emoji)),
            // An inbound message's id is `<channel>:<ts>` (unique across channels).
            SlackTs(id.rsplit_once(':').map_or(id, |(_, ts)| ts).to_string()),
        );
        match self.session().reactions_add(&request).await {
            Ok(_) => Ok(()),
            Err(SlackClientError::ApiError(api)) if api.code == "already_reacted" => Ok(()),
            Err(e) => Err(channel_error(&e, Token::Bot)),
        }
    }
}

/// Slack names reactions (`thumbsup`), not characters: the common ones are mapped, and
/// a `:name:` is used as it is.
fn reaction_name(emoji: &str) -> String {
    let name = match emoji {
        "👍" => "thumbsup",
        "👎" => "thumbsdown",
        "👀" => "eyes",
        "✅" => "white_check_mark",
        "❌" => "x",
        "⚠️" | "⚠" => "warning",
        "❤️" | "❤" => "heart",
        "🎉" => "tada",
        "🤔" => "thinking_face",
        "🙏" => "pray",
        "🔥" => "fire",
        "⏳" => "hourglass_flowing_sand",
        other => other.trim_matches(':'),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reactions_are_named() {
        assert_eq!(reaction_name("👍"), "thumbsup");
        assert_eq!(reaction_name(":rocket:"), "rocket");
    }

    #[test]
    fn a_member_id_is_never_taken_for_a_channel() {
        let person = Target::user("slack:U012AB3CD").unwrap();
        let err = channel_id(&person).unwrap_err();
        assert!(!err.retryable);
        assert!(err.message.contains("direct chat"), "{err}");
    }
}
