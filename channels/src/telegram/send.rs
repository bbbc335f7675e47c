//! Sending through Telegram: text as Telegram HTML (and again as plain text when
//! Telegram rejects the markup), in-place edits, typing, files,
//! reactions, approval questions with buttons.

use async_trait::async_trait;
use teloxide::ApiError;
use teloxide::RequestError;
use teloxide::payloads::{
    EditMessageTextSetters, SendDocumentSetters, SendMessageSetters, SendPhotoSetters,
};
use teloxide::prelude::*;
use teloxide::types::{
    ChatAction, InlineKeyboardButton, InlineKeyboardMarkup, InputFile, MessageId, ParseMode,
    ReactionType, ThreadId,
};

use super::Telegram;
use super::errors::channel_error;
use crate::approval::{Button, button_data};
use crate::channel::{
    ApprovalPrompter, ChannelError, MediaSender, MessageEditor, OutboundMedia, ReactionCapable,
    TypingCapable,
};
use crate::message::Target;
use crate::render::telegram::to_telegram_html;

fn chat(target: &Target) -> Result<ChatId, ChannelError> {
    target.chat_id.parse::<i64>().map(ChatId).map_err(|_| {
        ChannelError::permanent(format!("`{}` is not a Telegram chat id", target.chat_id))
    })
}

fn thread(target: &Target) -> Option<ThreadId> {
    target
        .thread_id
        .as_deref()?
        .parse::<i32>()
        .ok()
        .map(|id| ThreadId(MessageId(id)))
}

/// A message id as sent (`17`) or as an inbound message carries it (`<chat>:17`, unique
/// across chats for deduplication).
fn message_id(id: &str) -> Result<MessageId, ChannelError> {
    let own = id.rsplit_once(':').map_or(id, |(_, own)| own);
    own.parse::<i32>()
        .map(MessageId)
        .map_err(|_| ChannelError::permanent(format!("`{id}` is not a Telegram message id")))
}

fn bad_markup(err: &RequestError) -> bool {
    matches!(err, RequestError::Api(ApiError::CantParseEntities(_)))
}

impl Telegram {
    pub(super) async fn send_text(
        &self,
        target: &Target,
        markdown: &str,
    ) -> Result<String, ChannelError> {
        let chat = chat(target)?;
        let html = to_telegram_html(markdown);
        let mut request = self
            .bot
            .send_message(chat, html)
            .parse_mode(ParseMode::Html);
        if let Some(thread) = thread(target) {
            request = request.message_thread_id(thread);
        }
        match request.await {
            Ok(sent) => Ok(sent.id.0.to_string()),
            Err(err) if bad_markup(&err) => {
                tracing::warn!("Telegram rejected the formatting ({err}); sending plain text");
                let mut plain = self.bot.send_message(chat, markdown);
                if let Some(thread) = thread(target) {
                    plain = plain.message_thread_id(thread);
                }
                plain
                    .await
                    .map(|sent| sent.id.0.to_string())
                    .map_err(|e| channel_error(&e))
            }
            Err(err) => Err(channel_error(&err)),
        }
    }
}

#[async_trait]
impl TypingCapable for Telegram {
    async fn typing(&self, target: &Target) -> Result<(), ChannelError> {
        let mut request = self.bot.send_chat_action(chat(target)?, ChatAction::Typing);
        if let Some(thread) = thread(target) {
            request.message_thread_id = Some(thread);
        }
        request.await.map(|_| ()).map_err(|e| channel_error(&e))
    }
}

#[async_trait]
impl MessageEditor for Telegram {
    async fn edit(&self, target: &Target, id: &str, markdown: &str) -> Result<(), ChannelError> {
        let (chat, id) = (chat(target)?, message_id(id)?);
        let html = to_telegram_html(markdown);
        let result = self
            .bot
            .edit_message_text(chat, id, html)
            .parse_mode(ParseMode::Html)
            .await;
        let result = match result {
            Err(err) if bad_markup(&err) => self.bot.edit_message_text(chat, id, markdown).await,
            other => other,
        };
        match result {
            Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(()),
            Err(err) => Err(channel_error(&err)),
        }
    }
}

/// What Telegram's Bot API takes from a bot: photos up to 10 MB, any file up to 50 MB.
const MAX_PHOTO: u64 = 10 << 20;
const MAX_UPLOAD: u64 = 50 << 20;

#[async_trait]
impl MediaSender for Telegram {
    async fn send_media(
        &self,
        target: &Target,
        media: &OutboundMedia,
    ) -> Result<String, ChannelError> {
        let chat = chat(target)?;
        let size = media.bytes.len() as u64;
        if size > MAX_UPLOAD {
            return Err(ChannelError::permanent(format!(
                "{} is {:.1} MB; Telegram bots can send files up to 50 MB",
                media.file_name,
                size as f64 / 1_048_576.0
            )));
        }
        let file = InputFile::memory(media.bytes.clone()).file_name(media.file_name.clone());
        // A photo over Telegram's photo limit still goes, as a document.
        let sent = if media.as_voice {
            let mut request = self.bot.send_voice(chat, file);
            if let Some(caption) = &media.caption {
                request = request.caption(caption.clone());
            }
            if let Some(thread) = thread(target) {
                request = request.message_thread_id(thread);
            }
            request.await
        } else if media.as_photo && size <= MAX_PHOTO {
            let mut request = self.bot.send_photo(chat, file);
            if let Some(caption) = &media.caption {
                request = request.caption(caption.clone());
            }
            if let Some(thread) = thread(target) {
                request = request.message_thread_id(thread);
            }
            request.await
        } else {
            let mut request = self.bot.send_document(chat, file);
            if let Some(caption) = &media.caption {
                request = request.caption(caption.clone());
            }
            if let Some(thread) = thread(target) {
                request = request.message_thread_id(thread);
            }
            request.await
        };
        sent.map(|m| m.id.0.to_string())
            .map_err(|e| channel_error(&e))
    }
}

#[async_trait]
impl ReactionCapable for Telegram {
    async fn react(&self, target: &Target, id: &str, emoji: &str) -> Result<(), ChannelError> {
        let reaction = vec![ReactionType::Emoji {
            emoji: emoji.to_string(),
        }];
        self.bot
            .set_message_reaction(chat(target)?, message_id(id)?)
            .reaction(reaction)
            .await
            .map(|_| ())
            .map_err(|e| channel_error(&e))
    }
}

/// A question's buttons: in one row when their labels are short (an approval's
/// three), else one per row so no label is cut.
fn keyboard(request_id: &str, buttons: &[Button]) -> InlineKeyboardMarkup {
    let button = |b: &Button| {
        InlineKeyboardButton::callback(b.label.clone(), button_data(request_id, b.choice))
    };
    let total: usize = buttons.iter().map(|b| b.label.chars().count()).sum();
    if total <= 30 {
        InlineKeyboardMarkup::new([buttons.iter().map(button).collect::<Vec<_>>()])
    } else {
        InlineKeyboardMarkup::new(buttons.iter().map(|b| [button(b)]))
    }
}

#[async_trait]
impl ApprovalPrompter for Telegram {
    async fn ask_with(
        &self,
        target: &Target,
        question: &str,
        request_id: &str,
        buttons: &[Button],
    ) -> Result<String, ChannelError> {
        let mut request = self
            .bot
            .send_message(chat(target)?, question)
            .reply_markup(keyboard(request_id, buttons));
        if let Some(thread) = thread(target) {
            request = request.message_thread_id(thread);
        }
        request
            .await
            .map(|sent| sent.id.0.to_string())
            .map_err(|e| channel_error(&e))
    }

    async fn settle(&self, target: &Target, id: &str, text: &str) -> Result<(), ChannelError> {
        // An edit without `reply_markup` takes the buttons away.
        match self
            .bot
            .edit_message_text(chat(target)?, message_id(id)?, text)
            .await
        {
            Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(()),
            Err(err) => Err(channel_error(&err)),
        }
    }
}
