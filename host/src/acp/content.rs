//! What a prompt's content blocks become in the conversation: text blocks its text, a
//! resource link a `[name](uri)` link, and an image an attachment — saved in the
//! workspace inbox as a chat's photo is, then shown to a model that sees
//! (`pincer_core::media`), so the model's request carries it. Audio and embedded resources
//! are refused with an error that names why: they are not advertised, and a block
//! that vanished would leave the person wondering why the answer ignores it.
//!
//! This module must not decide who may send pictures or how they are shown: the core's
//! gate saves them and the turn shows them, as for every channel.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{ContentBlock, ImageContent};
use async_trait::async_trait;
use base64::Engine;
use pincer_channels::inbox::{Attachment, FetchError, MediaFetcher};
use pincer_channels::{InboundMessage, MediaKind};

use crate::Chat;

/// The largest picture a prompt may carry, as `/attach` allows for a file.
const MAX_IMAGE_BYTES: u64 = 50 << 20;

/// The message a prompt's blocks make in `chat`, its pictures attached.
pub(super) fn message(
    chat: &Chat,
    inbox: &Path,
    blocks: &[ContentBlock],
) -> Result<InboundMessage, Error> {
    let mut text = Vec::new();
    let mut pictures = Pictures::new(inbox);
    for (n, block) in blocks.iter().enumerate() {
        match block {
            ContentBlock::Text(block) => text.push(block.text.clone()),
            ContentBlock::ResourceLink(link) => text.push(format!("[{}]({})", link.name, link.uri)),
            ContentBlock::Image(image) => pictures.add(n, image)?,
            ContentBlock::Audio(_) => {
                return Err(refused(
                    n,
                    "audio is not taken in a prompt (promptCapabilities.audio is false); transcribe it, or send the words as text",
                ));
            }
            ContentBlock::Resource(_) => {
                return Err(refused(
                    n,
                    "embedded resources are not taken (promptCapabilities.embeddedContext is false); send a resource_link to the file instead",
                ));
            }
            _ => {
                return Err(refused(
                    n,
                    "this kind of content block is not known to Pincer",
                ));
            }
        }
    }
    let mut message = chat.message(text.join("\n"));
    let attachments = std::mem::take(&mut pictures.found);
    if !attachments.is_empty() {
        let fetcher: Arc<dyn MediaFetcher> = Arc::new(pictures);
        pincer_channels::inbox::attach(&mut message, attachments, &fetcher, &chat.id);
    }
    Ok(message)
}

/// A prompt's block `n` (counted from 0) refused, saying why.
fn refused(n: usize, why: &str) -> Error {
    super::invalid(format!("prompt block {n} refused: {why}"))
}

/// A prompt's pictures, decoded, handed to the inbox as a chat's downloads are: each is
/// "fetched" from here by its number.
struct Pictures {
    inbox: PathBuf,
    bytes: HashMap<String, Vec<u8>>,
    found: Vec<Attachment>,
}

impl Pictures {
    fn new(inbox: &Path) -> Pictures {
        Pictures {
            inbox: inbox.to_path_buf(),
            bytes: HashMap::new(),
            found: Vec::new(),
        }
    }

    /// Block `n`, an image: its data decoded and kept for the inbox.
    fn add(&mut self, n: usize, image: &ImageContent) -> Result<(), Error> {
        if image.data.is_empty() {
            return Err(refused(
                n,
                "an image is taken by its data; one given only by uri is not fetched",
            ));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(image.data.trim())
            .map_err(|e| refused(n, &format!("its image data is not base64 ({e})")))?;
        if bytes.len() as u64 > MAX_IMAGE_BYTES {
            return Err(refused(
                n,
                &format!("the image is over {} MB", MAX_IMAGE_BYTES >> 20),
            ));
        }
        let file = format!("prompt-image-{}", self.found.len() + 1);
        self.found.push(Attachment {
            kind: MediaKind::Photo,
            file: file.clone(),
            file_name: format!("{file}.{}", extension(&image.mime_type)),
            mime: Some(image.mime_type.clone()),
            size: Some(bytes.len() as u64),
            duration_secs: None,
        });
        self.bytes.insert(file, bytes);
        Ok(())
    }
}

/// The file extension a picture of `mime` is saved with.
fn extension(mime: &str) -> &'static str {
    match mime {
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/png" => "png",
        _ => "img",
    }
}

#[async_trait]
impl MediaFetcher for Pictures {
    fn inbox(&self) -> &Path {
        &self.inbox
    }

    fn max_bytes(&self) -> u64 {
        MAX_IMAGE_BYTES
    }

    async fn fetch(&self, file: &str, max: u64) -> Result<Vec<u8>, FetchError> {
        let bytes = self
            .bytes
            .get(file)
            .ok_or_else(|| FetchError::Failed(format!("no picture {file} in the prompt")))?;
        if bytes.len() as u64 > max {
            return Err(FetchError::TooBig);
        }
        Ok(bytes.clone())
    }
}
