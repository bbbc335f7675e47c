//! Attachments for the model, once the gate has admitted a message and its files are
//! saved in the workspace inbox (`pincer_channels::inbox::fetch_all`):
//!
//! - `image`    — pictures become image parts of the message, scaled down for a vision
//!   model at the turn that shows them (the transcript keeps only the path)
//! - `voice`    — voice notes and audio files become `[voice 0:42] …` transcripts
//! - `document` — text-like files and PDFs (`pdf`, read in a child process) are inlined
//!
//! - `speech`   — spoken replies: text to a WAV by a speech server or program
//!   (`[voice]`), and `ogg_opus`, that WAV as the OGG/Opus a voice message is
//!
//! - `child`    — the confined process that parses hostile PDFs and pictures
//!
//! Anything else stays the `[attached: …]` note `fetch_all` wrote. Every inline is the
//! sender's content, never the owner's: the turn treats a message with attachments as
//! untrusted (see `crate::tools::Taint`).

mod child;
pub mod document;
pub mod image;
pub mod length;
pub mod ogg_opus;
pub mod pdf;
pub mod speech;
pub mod voice;

use std::path::{Path, PathBuf};

use pincer_channels::{MediaKind, MediaRef};

pub use child::entry as child_entry;

use crate::provider::Part;
use voice::Transcriber;

/// The attachment side of the core: where the inbox is and how voice is heard.
pub struct Media {
    pub workspace: PathBuf,
    /// The gateway's own folder for attachments the workspace inbox could not take
    /// safely (`pincer_channels::inbox::save`).
    pub kept: PathBuf,
    /// `None` while `[transcription]` is off.
    pub transcriber: Option<Transcriber>,
    /// `None` while `[voice]` is off (no provider, no command, or `reply = "never"`).
    pub speaker: Option<speech::Speaker>,
}

/// What a message's saved attachments add to it.
#[derive(Debug, Default)]
pub struct Digest {
    /// Transcripts, inlined documents and notes, one block per attachment, each
    /// starting on its own line.
    pub text: String,
    /// One `Part::Image` per picture (no data yet: see `show`).
    pub images: Vec<Part>,
}

/// What an attachment is, for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Image,
    /// A voice note (`true`) or another recording.
    Sound(bool),
    Document,
    Other,
}

fn class(media: &MediaRef, name: &str) -> Class {
    let mime = media.mime.as_deref();
    match media.kind {
        MediaKind::Voice => Class::Sound(true),
        MediaKind::Audio => Class::Sound(false),
        MediaKind::Video => Class::Other,
        MediaKind::Photo => Class::Image,
        MediaKind::Document if image::is_image(mime, name) => Class::Image,
        MediaKind::Document if mime.is_some_and(|m| m.starts_with("audio/")) => Class::Sound(false),
        MediaKind::Document => Class::Document,
    }
}

impl Media {
    /// What the saved attachments of one message add to it, in order.
    pub async fn digest(&self, media: &[MediaRef]) -> Digest {
        let mut digest = Digest::default();
        for item in media {
            let Some(path) = &item.path else {
                continue; // not saved: `fetch_all` already said why
            };
            let name = item
                .file_name
                .clone()
                .or_else(|| path.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "attachment".into());
            let name = clean_name(&name);
            let block = match class(item, &name) {
                Class::Image => {
                    digest.images.push(Part::Image {
                        path: self.relative(path),
                        data: None,
                    });
                    None
                }
                Class::Sound(voice) => Some(self.hear(item, path, &name, voice).await),
                Class::Document => self.read(item, path, &name).await,
                Class::Other => None,
            };
            if let Some(block) = block {
                digest.text.push('\n');
                digest.text.push_str(&block);
            }
        }
        digest
    }

    /// `path` as the transcript keeps it: relative to the workspace when inside it.
    fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.workspace)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// A voice note's or recording's transcript, or why there is none.
    async fn hear(&self, item: &MediaRef, path: &Path, name: &str, voice: bool) -> String {
        let label = |secs: Option<f64>| {
            let what = if voice {
                "voice".to_string()
            } else {
                format!("audio {name}")
            };
            match secs {
                Some(secs) => format!("{what} {}", voice::clock(secs)),
                None => what,
            }
        };
        let known = item.duration_secs.map(f64::from);
        let Some(transcriber) = &self.transcriber else {
            return format!(
                "[{} received; transcription is off, so its words are unknown. The owner can turn it on with [transcription] in config.toml]",
                label(known)
            );
        };
        let bytes = match self.load(path, MAX_LOAD).await {
            Ok(bytes) => bytes,
            Err(err) => return format!("[{} could not be read: {err}]", label(known)),
        };
        // The file's own length wins over what the sender declared; a file whose length
        // cannot be read is held to the size of max_minutes at a modest bitrate.
        let measured = length::measure(&bytes);
        let limit = transcriber.max_minutes;
        let too_long = match measured {
            Some(secs) => transcriber.too_long(secs),
            None => {
                known.is_some_and(|secs| transcriber.too_long(secs))
                    || bytes.len() as u64
                        > u64::from(limit) * 60 * length::MAX_UNMEASURED_BYTES_PER_SEC
            }
        };
        let secs = measured.or(known);
        if too_long {
            let why = match measured.or(known) {
                Some(_) => format!("longer than transcription.max_minutes ({limit} min)"),
                None => format!(
                    "its length cannot be read and it is larger than {limit} min of audio at 128 kbit/s (transcription.max_minutes)"
                ),
            };
            return format!("[{} not transcribed: {why}]", label(secs));
        }
        match transcriber
            .transcribe(bytes, name, item.mime.as_deref())
            .await
        {
            Ok(heard) if heard.duration_secs.is_some_and(|s| transcriber.too_long(s)) => {
                tracing::warn!(
                    "a transcript was dropped: the server measured the recording over max_minutes"
                );
                format!(
                    "[{} not transcribed: longer than transcription.max_minutes ({limit} min) by the server's measure]",
                    label(heard.duration_secs)
                )
            }
            Ok(heard) => {
                let secs = secs.or(heard.duration_secs);
                let text = heard.text.replace(['\r', '\n'], " ");
                format!("[{}] {text}", label(secs))
            }
            Err(err) => {
                tracing::warn!("voice note not transcribed: {err}");
                format!("[{} not transcribed: {err}]", label(known))
            }
        }
    }

    /// A document's text, inlined, or `None` to leave it a file.
    async fn read(&self, item: &MediaRef, path: &Path, name: &str) -> Option<String> {
        let mime = item.mime.as_deref();
        let size = self.size(path).await.ok()?;
        let is_text = document::is_text(mime, name);
        if is_text && size > document::MAX_INLINE as u64 {
            return Some(format!(
                "[{name} is {}, over the {} KB that is put in a message; it stays a file]",
                document::human_size(size),
                document::MAX_INLINE / 1024
            ));
        }
        if is_text {
            let bytes = self.load(path, document::MAX_INLINE as u64).await.ok()?;
            let text = document::text_of(&bytes)?;
            return Some(document::inline(name, size, None, text));
        }
        let bytes = self.load(path, MAX_LOAD).await.ok()?;
        if !document::is_pdf(mime, name, &bytes) {
            return None;
        }
        match pdf::extract(&bytes).await {
            Ok(found) if found.text.trim().is_empty() => Some(format!(
                "[{name}: a PDF of {} pages with no text to extract (scanned?); it stays a file]",
                found.pages
            )),
            Ok(found) => {
                let pages = match found.pages {
                    1 => "1 page".to_string(),
                    n => format!("{n} pages"),
                };
                Some(document::inline(
                    name,
                    size,
                    Some(&format!("PDF, {pages}")),
                    &found.text,
                ))
            }
            Err(err) => {
                tracing::info!("no text from a PDF: {err}");
                Some(format!(
                    "[{name}: no text could be read from this PDF ({err})]"
                ))
            }
        }
    }
}

/// A file name as a block shows it: one line, no brackets, at most 100 characters.
fn clean_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_control() || matches!(c, '[' | ']' | '`') {
                '_'
            } else {
                c
            }
        })
        .take(100)
        .collect();
    match cleaned.trim() {
        "" => "attachment".into(),
        name => name.to_string(),
    }
}

impl Media {
    /// Fill in the pictures of a message the turn answers so a vision model sees them:
    /// at most `image::MAX_IMAGES` a turn (`shown` counts them across its messages), each
    /// scaled down; further ones, and any that cannot be read, become a line naming the
    /// file.
    pub async fn show(&self, parts: &mut [Part], shown: &mut usize) {
        let workspace = &self.workspace;
        for part in parts.iter_mut() {
            let Part::Image { path, data } = part else {
                continue;
            };
            if data.is_some() {
                *shown += 1;
                continue;
            }
            let file = workspace.join(&*path);
            if *shown >= image::MAX_IMAGES {
                let note = format!(
                    "[image {} not shown: at most {} images a turn; file: {path}]",
                    file_label(path),
                    image::MAX_IMAGES
                );
                *part = Part::Text { text: note };
                continue;
            }
            let loaded = match self.load(&file, MAX_LOAD).await {
                Ok(bytes) => image::scaled(&bytes).await.map_err(|e| e.to_string()),
                Err(err) => Err(format!("cannot read it: {err}")),
            };
            match loaded {
                Ok(loaded) => {
                    *data = Some(loaded);
                    *shown += 1;
                }
                Err(err) => {
                    let note = format!(
                        "[image {} could not be shown: {err}; file: {path}]",
                        file_label(path)
                    );
                    *part = Part::Text { text: note };
                }
            }
        }
    }

    /// The bytes of a saved attachment, at most `max`: under the workspace it is opened
    /// beneath it with no link followed (a command may have swapped the file for a link
    /// to the secrets since it was saved), under the gateway's own folder without
    /// following a link at its name; anywhere else it is refused.
    async fn load(&self, path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
        let (workspace, kept, path) = (
            self.workspace.clone(),
            self.kept.clone(),
            path.to_path_buf(),
        );
        tokio::task::spawn_blocking(move || saved(&workspace, &kept, &path)?.read(max))
            .await
            .map_err(std::io::Error::other)?
    }

    /// The size of a saved attachment, opened as `load` opens it.
    async fn size(&self, path: &Path) -> std::io::Result<u64> {
        let (workspace, kept, path) = (
            self.workspace.clone(),
            self.kept.clone(),
            path.to_path_buf(),
        );
        tokio::task::spawn_blocking(move || Ok(saved(&workspace, &kept, &path)?.size))
            .await
            .map_err(std::io::Error::other)?
    }
}

/// The most of one attachment read into memory (the channels cap what they download
/// far lower; a file swapped in since could be anything).
const MAX_LOAD: u64 = 256 << 20;

/// A saved attachment, opened.
struct Opened {
    file: std::fs::File,
    size: u64,
}

impl Opened {
    fn read(self, max: u64) -> std::io::Result<Vec<u8>> {
        use std::io::Read;
        if self.size > max {
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                format!("it is larger than {max} bytes"),
            ));
        }
        let mut bytes = Vec::new();
        self.file.take(max).read_to_end(&mut bytes)?;
        Ok(bytes)
    }
}

/// Open the attachment saved at `path`: beneath `workspace` with no link at any
/// component, or in `kept` (the gateway's own) without following one.
fn saved(workspace: &Path, kept: &Path, path: &Path) -> std::io::Result<Opened> {
    let refused = |why: String| std::io::Error::new(std::io::ErrorKind::PermissionDenied, why);
    if let Ok(below) = path.strip_prefix(workspace) {
        let rel = pincer_confine::Rel::plain(&below.to_string_lossy())
            .map_err(|e| refused(e.to_string()))?;
        let root = pincer_confine::Root::open(workspace)?;
        return match pincer_confine::gateway::open(&root, &rel) {
            Ok(Some((file, size))) => Ok(Opened { file, size }),
            Ok(None) => Err(std::io::ErrorKind::NotFound.into()),
            Err(err) => Err(refused(pincer_confine::explain(&err))),
        };
    }
    if path.starts_with(kept) {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(refused("not a regular file".into()));
        }
        return Ok(Opened {
            file,
            size: meta.len(),
        });
    }
    Err(refused(format!(
        "{} is not where the gateway saves attachments",
        path.display()
    )))
}

/// Take the pictures back out of messages for a model that cannot see: each becomes
/// one line saying so.
pub fn unshow(parts: &mut [Part]) {
    for part in parts.iter_mut() {
        if let Part::Image {
            path,
            data: Some(_),
        } = part
        {
            let note = format!(
                "[image {} not shown: none of the configured models can see images; file: {path}]",
                file_label(path)
            );
            *part = Part::Text { text: note };
        }
    }
}

fn file_label(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

/// What the person is told when their picture reached no model that sees.
pub const NO_VISION: &str = "I can't see images: none of the models in [router] light/heavy is marked as seeing. Add a vision model there (e.g. \"openai/gpt-4.1-mini\"), or set vision = true under [models.\"<provider>/<model>\"] in config.toml for one that can.";
