//! Discord's half of lazy attachments: a converted message carries its files as pending
//! `MediaRef`s, and this `MediaFetcher` downloads one from its CDN URL (no token is
//! sent: the URL itself grants access) only when the core calls `inbox::fetch_all` for
//! an admitted message. Nothing here runs while a message is converted.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use super::Discord;
use super::rest::Rest;
use crate::inbox::{FetchError, MediaFetcher};

struct Files {
    rest: Arc<Rest>,
    inbox: PathBuf,
    max_bytes: u64,
}

impl Discord {
    /// The fetcher the messages this adapter converts carry.
    pub(super) fn fetcher(&self) -> Arc<dyn MediaFetcher> {
        Arc::new(Files {
            rest: Arc::clone(&self.rest),
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

    /// Discord reports every attachment's size, so `fetch_all` has refused what is too
    /// large before asking; a CDN answer longer than that is a failed download.
    async fn fetch(&self, url: &str, max: u64) -> Result<Vec<u8>, FetchError> {
        self.rest
            .download(url, max)
            .await
            .map_err(|e| FetchError::Failed(e.message))
    }
}
