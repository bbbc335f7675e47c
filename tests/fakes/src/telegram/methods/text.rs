//! `sendMessage`, `editMessageText` and `deleteMessage`, with Telegram's refusals: empty
//! or too long text, HTML that does not parse, "message is not modified", unknown or
//! foreign messages.

use serde_json::{Value, json};

use super::outgoing::{self, MAX_TEXT, Request};
use crate::telegram::fault::{Answer, Refusal};
use crate::telegram::objects::{self, Content, Draft};
use crate::telegram::params::Params;
use crate::telegram::record::Sent;
use crate::telegram::state::Inner;

const NOT_MODIFIED: &str = "message is not modified: specified new message content and reply \
                            markup are exactly the same as a current content and reply markup \
                            of the message";

pub(super) fn send_message(inner: &mut Inner, params: &Params) -> Answer {
    let target = outgoing::target(inner, params)?;
    let raw = params.str("text").unwrap_or_default();
    let parse_mode = params.str("parse_mode");
    let plain = checked_text(inner, &raw, parse_mode.as_deref())?;
    let id = inner.store.next_message_id();
    let draft = Draft {
        id,
        chat: target.chat.clone(),
        from: objects::bot(),
        thread: target.thread,
        content: Content::Text {
            text: plain,
            entities: Vec::new(),
        },
    };
    let request = Request {
        method: "sendMessage",
        raw_text: raw,
        parse_mode,
        file_name: None,
        markup: outgoing::markup(params),
    };
    Ok(target.finish(inner, draft, request))
}

/// The plain text, or a refusal for bad HTML, empty or too long text.
fn checked_text(inner: &Inner, raw: &str, parse_mode: Option<&str>) -> Result<String, Refusal> {
    let plain = outgoing::formatted(inner, raw, parse_mode)?;
    let plain = plain.as_str().unwrap_or_default();
    if plain.trim().is_empty() {
        return Err(Refusal::bad_request("message text is empty"));
    }
    if plain.chars().count() > MAX_TEXT {
        return Err(Refusal::bad_request("message is too long"));
    }
    Ok(plain.to_string())
}

pub(super) fn edit_message_text(inner: &mut Inner, params: &Params) -> Answer {
    if !params.get("inline_message_id").is_null() {
        return Ok(Value::Bool(true));
    }
    let chat_id = outgoing::chat_id(params)?;
    let message_id = params
        .i64("message_id")
        .ok_or_else(|| Refusal::bad_request("message identifier is not specified"))?;
    let raw = params.str("text").unwrap_or_default();
    let parse_mode = params.str("parse_mode");
    let plain = checked_text(inner, &raw, parse_mode.as_deref())?;
    let stored = inner
        .store
        .message_mut(chat_id, message_id)
        .ok_or_else(|| Refusal::bad_request("message to edit not found"))?;
    if !stored.from_bot {
        return Err(Refusal::bad_request("message can't be edited"));
    }
    if stored.json.get("text").is_none() {
        return Err(Refusal::bad_request(
            "there is no text in the message to edit",
        ));
    }
    let markup = outgoing::markup(params);
    if stored.raw_text == raw
        && stored.parse_mode == parse_mode
        && stored.json.get("reply_markup") == markup.as_ref()
    {
        return Err(Refusal::bad_request(NOT_MODIFIED));
    }
    // As on Telegram, an edit without `reply_markup` removes the inline keyboard.
    match markup {
        Some(markup) => stored.json["reply_markup"] = markup,
        None => {
            if let Some(object) = stored.json.as_object_mut() {
                object.remove("reply_markup");
            }
        }
    }
    stored.json["text"] = json!(plain);
    stored.json["edit_date"] = json!(objects::now());
    stored.raw_text.clone_from(&raw);
    stored.parse_mode.clone_from(&parse_mode);
    let message = stored.json.clone();
    inner.sent.push(Sent {
        method: "editMessageText".into(),
        chat_id,
        message_id,
        text: raw,
        parse_mode,
        message_thread_id: message["message_thread_id"].as_i64(),
        reply_to: None,
        file_name: None,
        at: std::time::Instant::now(),
    });
    Ok(message)
}

pub(super) fn delete_message(inner: &mut Inner, params: &Params) -> Answer {
    let chat_id = outgoing::chat_id(params)?;
    let message_id = params
        .i64("message_id")
        .ok_or_else(|| Refusal::bad_request("message identifier is not specified"))?;
    match inner.store.remove_message(chat_id, message_id) {
        Some(_) => Ok(Value::Bool(true)),
        None => Err(Refusal::bad_request("message to delete not found")),
    }
}
