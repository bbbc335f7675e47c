//! `sendPhoto`, `sendDocument` and `sendVoice`: the file comes as a multipart upload
//! (stored, so `getFile` serves it back), a known `file_id`, or a URL (stored empty);
//! the caption is checked like a message's text.

use axum::body::Bytes;

use super::outgoing::{self, MAX_CAPTION, Request};
use crate::telegram::attachment::Kind;
use crate::telegram::fault::{Answer, Refusal};
use crate::telegram::objects::{self, Content, Draft};
use crate::telegram::params::Params;
use crate::telegram::state::Inner;

pub(super) fn send(inner: &mut Inner, params: &Params, kind: Kind, method: &'static str) -> Answer {
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
    let (value, file_name) = if let Some(upload) = params.uploads.get(field) {
        let value = kind.store(&mut inner.store, upload.bytes.clone(), &upload.name);
        let name = Some(upload.name.clone()).filter(|n| !n.is_empty());
        (value, name)
    } else {
        match params.str(field) {
            None => {
                let missing = format!("there is no {field} in the request");
                return Err(Refusal::bad_request(&missing));
            }
            Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
                let name = url.rsplit('/').next().unwrap_or_default().to_string();
                let value = kind.store(&mut inner.store, Bytes::new(), &name);
                (value, None)
            }
            Some(file_id) => {
                let entry = inner.store.file(&file_id).cloned().ok_or_else(|| {
                    Refusal::bad_request("wrong file identifier/HTTP URL specified")
                })?;
                (kind.json(&entry, ""), None)
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
    let request = Request {
        method,
        raw_text: raw,
        parse_mode,
        file_name,
        markup: outgoing::markup(params),
    };
    Ok(target.finish(inner, draft, request))
}
