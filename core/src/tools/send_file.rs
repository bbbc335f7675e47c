//! `send_file {path, caption?}`: the model sends a workspace file to the current chat —
//! pictures as photos, anything else as a document — and hears whether it went (the
//! platform's limit, a channel that cannot send files). The file is read here, opened
//! beneath the workspace like the file tools' (no link leads out), and its bytes go to
//! the channel, which never opens a path itself.
//!
//! Owner-only by default (it is in no tier's tool list): a member able to call it could
//! pull the owner's files into their chat. A tier given it still never sends the
//! owner's private files (`Caller::may_touch`). In a turn that has read untrusted
//! content it needs the owner's yes, like `send_message`.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use pincer_channels::{OutboundBody, OutboundMedia, OutboundMessage, Receipt};
use schemars::JsonSchema;
use serde::Deserialize;

use super::confine::{Access, Rel, io_error, open_file};
use super::{Effects, ToolContext, ToolError, TypedTool};
use crate::media::document::human_size;

/// The largest file sent (each platform's own limit is lower or equal, and says so).
const MAX_FILE: u64 = 100 << 20;
/// How long the channel may take to deliver (retries and pacing included).
const DELIVERY: Duration = Duration::from_secs(300);

pub struct SendFile {
    /// Scrubs the caption on its way out.
    pub outbound: crate::outbox::Outbox,
}

impl SendFile {
    pub fn new(outbound: crate::outbox::Outbox) -> Arc<Self> {
        Arc::new(Self { outbound })
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendFileArgs {
    /// path relative to the workspace
    path: String,
    caption: Option<String>,
}

#[async_trait]
impl TypedTool for SendFile {
    type Args = SendFileArgs;
    const NAME: &'static str = "send_file";
    const EFFECTS: Effects = Effects::SENDS.union(Effects::READS_WORKSPACE);

    fn description(&self) -> String {
        "Send a file from the workspace to this chat: pictures (PNG, JPEG, WebP) as photos, anything else as a document, with an optional caption.".into()
    }

    async fn run(&self, args: SendFileArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let rel = Rel::parse(&args.path)?;
        let caption = args
            .caption
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        let Some(target) = ctx.origin.clone() else {
            return Err(ToolError::new("there is no current chat to send a file to"));
        };
        let file_name = rel
            .given()
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        if file_name.is_empty() || file_name == "." || file_name == ".." {
            return Err(ToolError::new(format!("`{}` is not a file", rel.given())));
        }
        let workspace = ctx.workspace.clone();
        let read = rel.clone();
        let caller = ctx.caller.clone();
        let bytes = tokio::task::spawn_blocking(move || {
            let root = crate::tools::confine::root(&workspace)?;
            let opened = open_file(&root, &read, Access::Read)?;
            super::fs::check_reached(
                &caller,
                "send_file",
                &root,
                &read,
                std::os::fd::AsFd::as_fd(&opened.file),
            )?;
            if opened.size > MAX_FILE {
                return Err(ToolError::new(format!(
                    "{} is {}; send_file sends files up to {}",
                    read.given(),
                    human_size(opened.size),
                    human_size(MAX_FILE)
                )));
            }
            let mut bytes = Vec::with_capacity(opened.size as usize);
            opened
                .file
                .take(MAX_FILE)
                .read_to_end(&mut bytes)
                .map_err(|e| io_error("read", read.given(), e))?;
            Ok(bytes)
        })
        .await
        .map_err(|e| ToolError::new(format!("send_file failed: {e}")))??;
        let size = bytes.len() as u64;
        let as_photo = is_photo(&file_name);
        let (sent, outcome) = Receipt::pair();
        let media = OutboundMedia {
            file_name: file_name.clone(),
            bytes,
            source: Some(ctx.workspace.join(rel.given())),
            caption,
            as_photo,
            as_voice: false,
        };
        let message = OutboundMessage {
            target: target.clone(),
            body: OutboundBody::File { media, sent },
            reply_to: None,
            entry: None,
        };
        self.outbound.send(message).await.map_err(|_| {
            ToolError::new("the file could not be queued: the assistant is shutting down")
        })?;
        let how = if as_photo { "a photo" } else { "a document" };
        match tokio::time::timeout(DELIVERY, outcome).await {
            Ok(Ok(Ok(_))) => Ok(format!(
                "sent {file_name} ({}) to this chat as {how}",
                human_size(size)
            )),
            Ok(Ok(Err(why))) => Err(ToolError::new(format!("{file_name} was not sent: {why}"))),
            Ok(Err(_)) => Err(ToolError::new(format!(
                "{file_name} was not sent: {} is not running here",
                target.channel
            ))),
            Err(_) => Err(ToolError::new(format!(
                "{file_name} is still being sent after {}s; it may arrive late",
                DELIVERY.as_secs()
            ))),
        }
    }
}

/// Pictures every platform shows as a photo.
fn is_photo(name: &str) -> bool {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    matches!(ext.as_str(), "png" | "jpg" | "jpeg" | "webp")
}
