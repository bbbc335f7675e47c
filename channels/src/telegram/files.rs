//! Telegram's half of lazy attachments: a converted message carries its files as pending
//! `MediaRef`s, and this `MediaFetcher` downloads one (getFile for its path, then the
//! file itself, within a byte cap) only when the core calls `inbox::fetch_all` for an
//! admitted message. Nothing here runs while a message is converted.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::StreamExt;
use teloxide::Bot;
use teloxide::net::Download;
use teloxide::prelude::*;

use super::Telegram;
use super::errors::{channel_error, redact_token};
use crate::inbox::{FetchError, MediaFetcher};

/// Downloads through the bot's own client (the file URL carries the token).
struct Files {
    bot: Bot,
    inbox: PathBuf,
    max_bytes: u64,
}

impl Telegram {
    /// The fetcher the messages this adapter converts carry.
    pub(super) fn fetcher(&self) -> Arc<dyn MediaFetcher> {
        Arc::new(Files {
            bot: self.bot.clone(),
            inbox: self.settings.inbox.clone(),
            max_bytes: self.settings.media_max_bytes,
        })
    }
}

#[async_trait]
impl MediaFetcher for Files {
    fn inbox(&self) -> &Path {
        &self.inbox
    }

    fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    async fn fetch(&self, file_id: &str, max: u64) -> Result<Vec<u8>, FetchError> {
        let file = self
            .bot
            .get_file(file_id.to_string().into())
            .await
            .map_err(|e| FetchError::Failed(channel_error(&e).message))?;
        if u64::from(file.size) > max {
            return Err(FetchError::TooBig);
        }
        let mut stream = self.bot.download_file_stream(&file.path);
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| FetchError::Failed(redact_token(&e.to_string())))?;
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 > max {
                return Err(FetchError::TooBig);
            }
        }
        Ok(bytes)
    }
}
