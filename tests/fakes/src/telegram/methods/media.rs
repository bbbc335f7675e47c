//! `sendPhoto`, `sendDocument`, `sendVoice` and `sendAudio`: the file comes as a
//! multipart upload (stored, so `getFile` serves it back), a known `file_id`, or a URL
//! (stored empty); the caption is checked like a message's text. Uploads over
//! Telegram's limits (10 MB for a photo, 50 MB for anything) get 413 `Request Entity
//! Too Large`. Each file sent is recorded as a `SentFile`.

use axum::body::Bytes;

use super::outgoing::{self, MAX_CAPTION, Request};
use crate::telegram::attachment::MediaKind;
use crate::telegram::fault::{Answer, Refusal};
use crate::telegram::objects::{self, Content, Draft};
use crate::telegram::params::Params;
use crate::telegram::record::SentFile;
use crate::telegram::state::Inner;

/// The most a bot may upload as a photo.
const MAX_PHOTO: usize = 10 * 1024 * 1024;
/// The most a bot may upload as any file.
const MAX_UPLOAD: usize = 50 * 1024 * 1024;

pub(super) fn send(
    inner: &mut Inner,
    params: &Params,
    kind: MediaKind,
    method: &'static str,
) -> Answer {
    for (field, upload) in &params.uploads {
        let limit = if field == MediaKind::Photo.field() {
            MAX_PHOTO
        } else {
            MAX_UPLOAD
        };
        if upload.bytes.len() > limit {
            return Err(Refusal::too_large());
        }
    }
    let target = outgoing::target(inner, params)?;
    let raw = params.str("caption").unwrap_or_default();
    let parse_mode = params.str("parse_mode");
    let caption = if raw.is_empty() {
        String::new()
    } else {
        let plain = outgoing::formatted(inner, &raw, parse_mode.as_deref())?;
        plain.as_str().unwrap_or_default().to_string()
    };
    if caption.chars().count() > MAX_CAPTION {
        return Err(Refusal::bad_request("message caption is too long"));
    }
    let field = kind.field();
    let (value, file_name, bytes) = if let Some(upload) = params.uploads.get(field) {
        let value = kind.store(&mut inner.store, upload.bytes.clone(), &upload.name);
        let name = Some(upload.name.clone()).filter(|n| !n.is_empty());
        (value, name, upload.bytes.to_vec())
    } else {
        match params.str(field) {
            None => {
                let missing = format!("there is no {field} in the request");
                return Err(Refusal::bad_request(&missing));
            }
            Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
                let name = url.rsplit('/').next().unwrap_or_default().to_string();
                let value = kind.store(&mut inner.store, Bytes::new(), &name);
                (value, None, Vec::new())
            }
            Some(file_id) => {
                let entry = inner.store.file(&file_id).cloned().ok_or_else(|| {
                    Refusal::bad_request("wrong file identifier/HTTP URL specified")
                })?;
                (kind.json(&entry, ""), None, entry.bytes.to_vec())
            }
        }
    };
    let id = inner.store.next_message_id();
    let draft = Draft {
        id,
        chat: target.chat.clone(),
        from: objects::bot(),
        thread: target.thread,
        content: Content::Media {
            field,
            value,
            caption: (!caption.is_empty()).then_some(caption),
            entities: Vec::new(),
        },
    };
    inner.sent_files.push(SentFile {
        kind,
        chat_id: target.chat_id,
        message_id: id,
        message_thread_id: target.thread.map(|(thread, _)| thread),
        file_name: file_name.clone(),
        bytes,
        caption: raw.clone(),
    });
    let request = Request {
        method,
        raw_text: raw,
        parse_mode,
        file_name,
        markup: outgoing::markup(params),
    };
    Ok(target.finish(inner, draft, request))
}
