//! Slack's half of lazy attachments. A converted message carries its files as pending
//! `MediaRef`s; this `MediaFetcher` downloads one from its `url_private` with the bot
//! token only when the core calls `inbox::fetch_all` for an admitted message.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use super::Slack;
use super::convert::Attachment;
use crate::inbox::{FetchError, MediaFetcher, Remote};
use crate::message::{InboundMessage, MediaRef};

struct Files {
    http: reqwest::Client,
    /// The bot token (`xoxb-…`): Slack's file URLs need it.
    token: String,
    inbox: PathBuf,
    max_bytes: u64,
}

impl Slack {
    /// The fetcher the messages this adapter converts carry.
    pub(super) fn fetcher(&self) -> Arc<dyn MediaFetcher> {
        Arc::new(Files {
            http: self.http.clone(),
            token: self.settings.bot_token.clone(),
            inbox: self.settings.inbox.clone(),
            max_bytes: self.settings.media_max_bytes,
        })
    }
}

/// Adds `attachments` to `inbound` as pending media, saved as
/// `<inbox>/slack/<channel id>-<name>` once fetched.
pub(super) fn attach(
    inbound: &mut InboundMessage,
    attachments: Vec<Attachment>,
    fetcher: &Arc<dyn MediaFetcher>,
) {
    for attachment in attachments {
        let remote = Remote {
            fetcher: Arc::clone(fetcher),
            file: attachment.url,
            prefix: inbound.chat_id.clone(),
        };
        inbound.media.push(MediaRef::pending(
            attachment.kind,
            attachment.file_name,
            attachment.mime,
            None, // Slack's file objects carry no size slack-morphism reads
            remote,
        ));
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

    async fn fetch(&self, url: &str, max: u64) -> Result<Vec<u8>, FetchError> {
        let failed = |e: String| FetchError::Failed(e);
        let mut response = self
            .http
            .get(url)
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| failed(format!("cannot fetch the file: {}", e.without_url())))?;
        if !response.status().is_success() {
            return Err(failed(format!("Slack answered {}", response.status())));
        }
        if response.content_length().is_some_and(|len| len > max) {
            return Err(FetchError::TooBig);
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| failed(format!("the download broke off: {}", e.without_url())))?
        {
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 > max {
                return Err(FetchError::TooBig);
            }
        }
        Ok(bytes)
    }
}
