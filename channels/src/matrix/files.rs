//! Matrix's half of lazy attachments: a converted message carries its files as pending
//! `MediaRef`s whose reference is the event's `url` or, in an encrypted room, its `file`
//! (URL, key, IV and hash). This fetcher downloads one from the homeserver's
//! authenticated media API only when the core admits the sender, stopping past the
//! size cap whatever the event claimed, and decrypts an encrypted one (the SDK's
//! `AttachmentDecryptor` checks its hash).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::StreamExt;
use matrix_sdk::Client;
use matrix_sdk_crypto::{AttachmentDecryptor, MediaEncryptionInfo};
use serde_json::Value;

use super::Matrix;
use crate::inbox::{FetchError, MediaFetcher};

/// Downloads with the bot's access token (sent as a header, never in a URL).
struct Files {
    client: Client,
    http: reqwest::Client,
    inbox: PathBuf,
    max_bytes: u64,
}

/// The client downloads go through: a media server that stops answering fails the
/// download instead of holding the message's turn.
pub(super) fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .read_timeout(std::time::Duration::from_secs(30))
        .build()
        .unwrap_or_default()
}

impl Matrix {
    /// The fetcher the messages this adapter converts carry.
    pub(super) fn fetcher(&self, client: &Client) -> Arc<dyn MediaFetcher> {
        Arc::new(Files {
            client: client.clone(),
            http: self.http.clone(),
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

    async fn fetch(&self, file: &str, max: u64) -> Result<Vec<u8>, FetchError> {
        let source: Value = serde_json::from_str(file)
            .map_err(|_| FetchError::Failed("not a Matrix media reference".into()))?;
        let encrypted = &source["file"];
        let mxc = match encrypted.is_object() {
            true => encrypted["url"].as_str(),
            false => source["url"].as_str(),
        }
        .ok_or_else(|| FetchError::Failed("a file event without a URL".into()))?;
        let bytes = self.download(mxc, max).await?;
        if !encrypted.is_object() {
            return Ok(bytes);
        }
        let info: MediaEncryptionInfo = serde_json::from_value(encrypted.clone())
            .map_err(|e| FetchError::Failed(format!("unreadable encryption info: {e}")))?;
        let mut reader = std::io::Cursor::new(bytes);
        let mut plain = Vec::new();
        AttachmentDecryptor::new(&mut reader, info)
            .map_err(|e| FetchError::Failed(format!("cannot decrypt: {e}")))?
            .read_to_end(&mut plain)
            .map_err(|e| FetchError::Failed(format!("cannot decrypt: {e}")))?;
        Ok(plain)
    }
}

impl Files {
    /// `mxc://server/id` through `/_matrix/client/v1/media/download`, at most `max` bytes.
    async fn download(&self, mxc: &str, max: u64) -> Result<Vec<u8>, FetchError> {
        let (server, id) = mxc
            .strip_prefix("mxc://")
            .and_then(|rest| rest.split_once('/'))
            .filter(|(s, i)| valid_part(s) && valid_part(i))
            .ok_or_else(|| FetchError::Failed(format!("`{mxc}` is not an mxc:// URL")))?;
        let token = self
            .client
            .access_token()
            .ok_or_else(|| FetchError::Failed("not logged in".into()))?;
        let homeserver = self.client.homeserver();
        let url = format!(
            "{}/_matrix/client/v1/media/download/{server}/{id}",
            homeserver.as_str().trim_end_matches('/')
        );
        let response = self
            .http
            .get(url)
            .bearer_auth(token)
            .send()
            .await
            .map_err(|e| FetchError::Failed(e.without_url().to_string()))?
            .error_for_status()
            .map_err(|e| FetchError::Failed(e.without_url().to_string()))?;
        if response.content_length().is_some_and(|n| n > max) {
            return Err(FetchError::TooBig);
        }
        let mut stream = response.bytes_stream();
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| FetchError::Failed(e.without_url().to_string()))?;
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 > max {
                return Err(FetchError::TooBig);
            }
        }
        Ok(bytes)
    }
}

/// A server name or media id: letters, digits and `.-_:[]` (an IPv6 literal, a port),
/// never `.` or `..` (which the URL would resolve into another path).
fn valid_part(part: &str) -> bool {
    !part.is_empty()
        && part != "."
        && part != ".."
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']'))
}

#[cfg(test)]
mod tests {
    use super::valid_part;

    #[test]
    fn media_parts_cannot_walk_the_path() {
        assert!(valid_part("example.org:8448"));
        assert!(valid_part("AbC123_-x"));
        for bad in ["", ".", "..", "a/b", "%2e%2e", "a?b", "a#b"] {
            assert!(!valid_part(bad), "{bad}");
        }
    }
}
