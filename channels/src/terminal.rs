//! The local terminal as a channel: stdin lines in, stdout out. The terminal user is
//! always an owner. On a terminal, lines typed during a turn go straight onto the bus
//! (so they can steer it); from a pipe, each line waits for the previous answer.
//!
//! `/attach PATH [text]` sends a local file with the text, as a photo, voice note or
//! document would come from a chat: it is copied into the workspace inbox like any
//! attachment (`LocalFiles`), so the core treats it the same way. A path with spaces
//! is quoted: `/attach "my plant.jpg" what is this?`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::UNIX_EPOCH;

use async_trait::async_trait;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::channel::{Channel, ChannelError, InboundSender};
use crate::inbox::{FetchError, MediaFetcher, Remote};
use crate::message::{ChatKind, InboundMessage, MediaKind, MediaRef, Sender, Target};

/// The largest file `/attach` takes.
const ATTACH_MAX_BYTES: u64 = 50 << 20;

pub const CHANNEL: &str = "terminal";
pub const CHAT_ID: &str = "local";

pub struct Terminal {
    /// Piped input: read the next line only after the previous turn ended, so every
    /// line is its own message, answered in order.
    sequential: bool,
    /// Woken by `turn_finished` when the chat loop sees a turn end.
    turn_done: Notify,
    /// Makes platform message ids unique across runs (the store dedupes on them).
    run_id: u128,
    next_id: AtomicU64,
    /// A question waiting for the user's next line (a tool approval); that line goes
    /// here instead of onto the bus.
    pending: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<String>>>,
    /// Copies `/attach`ed files into the workspace inbox; `None`: `/attach` is refused.
    files: Option<Arc<dyn MediaFetcher>>,
    /// Which local conversation its messages belong to: `local` for `pincer chat`,
    /// another id for a conversation a program drives (`pincer agent`).
    chat: String,
}

impl Terminal {
    pub fn new(sequential: bool) -> Self {
        let run_id = crate::clock::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        Self {
            sequential,
            turn_done: Notify::new(),
            run_id,
            next_id: AtomicU64::new(1),
            pending: std::sync::Mutex::new(None),
            files: None,
            chat: CHAT_ID.to_string(),
        }
    }

    /// Its messages go to the local conversation `chat` (session `terminal:dm:<chat>`).
    pub fn with_chat(mut self, chat: &str) -> Self {
        self.chat = chat.to_string();
        self
    }

    /// Lets `/attach` copy files into `inbox` (the workspace's `inbox/`).
    pub fn with_inbox(mut self, inbox: PathBuf) -> Self {
        self.files = Some(Arc::new(LocalFiles { inbox }));
        self
    }

    /// Build the message the terminal user typed; `/attach PATH [text]` attaches a file.
    pub fn message(&self, text: String) -> InboundMessage {
        let (text, attached) = match (attach_line(&text), &self.files) {
            (Some((path, rest)), Some(files)) => (rest, Some((path, files))),
            _ => (text, None),
        };
        let mut message = self.plain(text);
        if let Some((path, files)) = attached {
            let name = Path::new(&path)
                .file_name()
                .map_or_else(|| "file".to_string(), |n| n.to_string_lossy().into_owned());
            let remote = Remote {
                fetcher: Arc::clone(files),
                file: path,
                prefix: "local".into(),
            };
            message
                .media
                .push(MediaRef::pending(kind_of(&name), name, None, None, remote));
        }
        message
    }

    fn plain(&self, text: String) -> InboundMessage {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        InboundMessage {
            channel: CHANNEL.into(),
            account: "default".into(),
            chat_id: self.chat.clone(),
            chat_kind: ChatKind::Dm,
            thread_id: None,
            sender: Sender {
                raw_id: CHAT_ID.into(),
                canonical: format!("{CHANNEL}:{CHAT_ID}"),
                display_name: "you".into(),
            },
            message_id: format!("{}-{n}", self.run_id),
            text,
            media: Vec::new(),
            reply_to: None,
            addressed: true,
            received_at: crate::clock::now(),
            deliver_to: None,
            scheduled: None,
        }
    }

    pub fn target() -> Target {
        Target {
            channel: CHANNEL.into(),
            chat_id: CHAT_ID.into(),
            thread_id: None,
            user: false,
        }
    }

    /// Tell a sequential reader that the answer to its last line is complete.
    pub fn turn_finished(&self) {
        self.turn_done.notify_one();
    }

    /// Ask the user a question and wait (at most `wait`) for the line they type next.
    /// `None` when nobody answered in time.
    pub async fn ask(&self, question: &str, wait: std::time::Duration) -> Option<String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            *pending = Some(tx);
        }
        let mut out = tokio::io::stdout();
        // If the question cannot be shown, the wait times out and the answer is no.
        let _ = out.write_all(question.as_bytes()).await;
        let _ = out.flush().await;
        let answer = tokio::time::timeout(wait, rx)
            .await
            .ok()
            .and_then(Result::ok);
        if let Ok(mut pending) = self.pending.lock() {
            pending.take();
        }
        answer
    }

    /// Write a streamed piece of a reply as it arrives.
    pub async fn write_delta(&self, text: &str) -> Result<(), ChannelError> {
        let mut out = tokio::io::stdout();
        out.write_all(text.as_bytes()).await.map_err(write_error)?;
        out.flush().await.map_err(write_error)
    }
}

/// `/attach PATH [text]` as (PATH with `~` expanded, text); `None` for any other line.
fn attach_line(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("/attach ")?.trim_start();
    let (path, text) = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split_once('"')?,
        None => rest.split_once(char::is_whitespace).unwrap_or((rest, "")),
    };
    if path.is_empty() {
        return None;
    }
    let path = match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(tail), Some(home)) => Path::new(&home).join(tail).to_string_lossy().into_owned(),
        _ => path.to_string(),
    };
    Some((path, text.trim().to_string()))
}

/// What a local file is, by its name.
fn kind_of(name: &str) -> MediaKind {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" | "jpg" | "jpeg" | "gif" | "webp" => MediaKind::Photo,
        "ogg" | "oga" | "opus" | "mp3" | "m4a" | "wav" | "flac" | "webm" => MediaKind::Audio,
        "mp4" | "mov" | "mkv" => MediaKind::Video,
        _ => MediaKind::Document,
    }
}

/// The terminal's "platform": the owner's own files, read where they are.
struct LocalFiles {
    inbox: PathBuf,
}

#[async_trait]
impl MediaFetcher for LocalFiles {
    fn inbox(&self) -> &Path {
        &self.inbox
    }

    fn max_bytes(&self) -> u64 {
        ATTACH_MAX_BYTES
    }

    async fn fetch(&self, file: &str, max: u64) -> Result<Vec<u8>, FetchError> {
        let size = tokio::fs::metadata(file)
            .await
            .map_err(|e| FetchError::Refused(format!("not attached: cannot read {file}: {e}")))?
            .len();
        if size > max {
            return Err(FetchError::Refused(format!(
                "not attached: larger than {} MB",
                max >> 20
            )));
        }
        // Read at most one byte past the limit: a device or a file still growing
        // (`/dev/zero`) reports a size it does not keep to.
        use tokio::io::AsyncReadExt;
        let opened = tokio::fs::File::open(file)
            .await
            .map_err(|e| FetchError::Refused(format!("not attached: cannot read {file}: {e}")))?;
        let mut bytes = Vec::new();
        opened
            .take(max + 1)
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| FetchError::Refused(format!("not attached: cannot read {file}: {e}")))?;
        if bytes.len() as u64 > max {
            return Err(FetchError::Refused(format!(
                "not attached: larger than {} MB",
                max >> 20
            )));
        }
        Ok(bytes)
    }
}

fn write_error(err: std::io::Error) -> ChannelError {
    ChannelError::permanent(format!("cannot write to stdout: {err}"))
}

#[async_trait]
impl Channel for Terminal {
    fn name(&self) -> &str {
        CHANNEL
    }

    async fn listen(
        &self,
        bus: InboundSender,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        let mut input = BufReader::new(tokio::io::stdin());
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            let read = tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                read = input.read_until(b'\n', &mut bytes) => read,
            };
            match read {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(err) => {
                    return Err(ChannelError::permanent(format!("cannot read stdin: {err}")));
                }
            }
            let line = String::from_utf8_lossy(&bytes);
            if matches!(line, std::borrow::Cow::Owned(_)) {
                // One bad line (a binary file piped in by mistake) must not end the chat.
                tracing::warn!(
                    "a line on stdin was not UTF-8; its invalid bytes were read as \u{fffd}"
                );
            }
            let text = line.trim();
            let waiting = self.pending.lock().ok().and_then(|mut p| p.take());
            if let Some(answer) = waiting {
                // The line answers a question; if the asker gave up, it is dropped.
                let _ = answer.send(text.to_string());
                continue;
            }
            if text.is_empty() {
                continue;
            }
            if bus
                .send(self.message(text.to_string()).into())
                .await
                .is_err()
            {
                return Ok(()); // the core is shutting down
            }
            if self.sequential {
                tokio::select! {
                    _ = shutdown.cancelled() => return Ok(()),
                    _ = self.turn_done.notified() => {}
                }
            }
        }
    }

    async fn send(&self, _target: &Target, text: &str) -> Result<String, ChannelError> {
        let mut out = tokio::io::stdout();
        out.write_all(text.as_bytes()).await.map_err(write_error)?;
        if !text.ends_with('\n') {
            out.write_all(b"\n").await.map_err(write_error)?;
        }
        out.flush().await.map_err(write_error)?;
        Ok(self.next_id.fetch_add(1, Ordering::Relaxed).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_lines_name_a_path_and_the_text_after_it() {
        assert_eq!(
            attach_line("/attach plant.jpg what is this?"),
            Some(("plant.jpg".into(), "what is this?".into()))
        );
        assert_eq!(
            attach_line("/attach \"my plant.jpg\" what?"),
            Some(("my plant.jpg".into(), "what?".into()))
        );
        assert_eq!(
            attach_line("/attach report.pdf"),
            Some(("report.pdf".into(), String::new()))
        );
        assert_eq!(attach_line("/attachment x"), None);
        assert_eq!(attach_line("/attach "), None);
        assert_eq!(kind_of("A.JPG"), MediaKind::Photo);
        assert_eq!(kind_of("memo.m4a"), MediaKind::Audio);
        assert_eq!(kind_of("notes.md"), MediaKind::Document);
    }
}
