//! Attachments that come in, the same for every adapter: where a file is saved in the
//! workspace inbox, and how the model hears what became of it.

use std::path::{Path, PathBuf};

use crate::message::{InboundMessage, MediaKind, MediaRef};

/// What became of one attachment.
pub enum Fetched {
    Saved(PathBuf),
    /// Over the channel's `media_max_mb`: not downloaded.
    TooBig,
    Failed(String),
}

/// Make `<inbox>/<channel>/` and return where `file_name` goes in it:
/// `<prefix>-<name>`, the name reduced to letters, digits, `.`, `-` and `_`.
pub async fn prepare(
    inbox: &Path,
    channel: &str,
    prefix: &str,
    file_name: &str,
) -> Result<PathBuf, String> {
    let dir = inbox.join(channel);
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let safe: String = file_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(dir.join(format!("{prefix}-{safe}")))
}

/// Save `bytes` as `prepare` names it.
pub async fn save(
    inbox: &Path,
    channel: &str,
    prefix: &str,
    file_name: &str,
    bytes: &[u8],
) -> Result<PathBuf, String> {
    let path = prepare(inbox, channel, prefix, file_name).await?;
    tokio::fs::write(&path, bytes)
        .await
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// One attachment as the message carries it: a line telling the model where the file
/// is (or why it is not there) and a `MediaRef`.
pub struct Attached {
    pub kind: MediaKind,
    pub file_name: String,
    pub mime: Option<String>,
    pub size: Option<u64>,
}

pub fn record(inbound: &mut InboundMessage, channel: &str, attached: Attached, fetched: Fetched) {
    let name = &attached.file_name;
    let path = match fetched {
        Fetched::Saved(path) => {
            inbound
                .text
                .push_str(&format!("\n[attached: {}]", path.display()));
            Some(path)
        }
        Fetched::TooBig => {
            inbound.text.push_str(&format!(
                "\n[{name} not downloaded: larger than channels.{channel}.media_max_mb]"
            ));
            None
        }
        Fetched::Failed(err) => {
            tracing::warn!(channel, "attachment not downloaded: {err}");
            inbound
                .text
                .push_str(&format!("\n[{name} could not be downloaded]"));
            None
        }
    };
    inbound.media.push(MediaRef {
        kind: attached.kind,
        path,
        mime: attached.mime,
        file_name: Some(attached.file_name),
        size_bytes: attached.size,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn names_are_made_safe_inside_the_channels_folder() {
        let dir = tempfile::tempdir().unwrap();
        let path = save(dir.path(), "slack", "C1", "../../etc/pass wd", b"x")
            .await
            .unwrap();
        assert_eq!(path, dir.path().join("slack").join("C1-.._.._etc_pass_wd"));
        assert!(path.exists());
    }
}
