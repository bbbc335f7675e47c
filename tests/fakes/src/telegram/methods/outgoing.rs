//! What every send method shares: where the message goes (`chat_id`, topic, reply), the
//! checks on its text (HTML, length), and storing, recording and answering it.

use serde_json::Value;

use crate::telegram::fault::{Answer, Refusal};
use crate::telegram::html;
use crate::telegram::objects::Draft;
use crate::telegram::params::{Params, as_i64};
use crate::telegram::record::Sent;
use crate::telegram::state::Inner;
use crate::telegram::store::Stored;

/// Telegram's limits, counted in characters after entity parsing.
pub(super) const MAX_TEXT: usize = 4096;
pub(super) const MAX_CAPTION: usize = 1024;

/// Where a message goes.
pub(super) struct Target {
    pub chat_id: i64,
    pub chat: Value,
    /// `message_thread_id`, and whether the chat is a forum (then it is a topic message).
    pub thread: Option<(i64, bool)>,
    /// The message replied to, if any.
    pub reply_to: Option<i64>,
    /// Its `Message` object, when the fake knows it.
    reply: Option<Value>,
}

/// The `chat_id` parameter: a number; a `@username` names no chat the fake knows.
pub(super) fn chat_id(params: &Params) -> Result<i64, Refusal> {
    match params.get("chat_id") {
        Value::Null => Err(Refusal::missing("chat_id")),
        value => as_i64(value).ok_or_else(|| Refusal::bad_request("chat not found")),
    }
}

/// The chat, topic and reply of a send.
pub(super) fn target(inner: &Inner, params: &Params) -> Result<Target, Refusal> {
    let chat_id = chat_id(params)?;
    let info = inner.store.chat(chat_id);
    let thread = params
        .i64("message_thread_id")
        .map(|id| (id, info.is_forum()));
    let reply_parameters = params.get("reply_parameters");
    let (reply_to, allow_without) = if reply_parameters.is_object() {
        (
            as_i64(&reply_parameters["message_id"]),
            reply_parameters["allow_sending_without_reply"] == true,
        )
    } else {
        (
            params.i64("reply_to_message_id"),
            params.bool("allow_sending_without_reply"),
        )
    };
    let reply = match reply_to.map(|id| inner.store.message(chat_id, id)) {
        Some(Some(stored)) => Some(stored.json.clone()),
        Some(None) if !allow_without => {
            return Err(Refusal::bad_request("message to be replied not found"));
        }
        _ => None,
    };
    Ok(Target {
        chat_id,
        chat: info.json(chat_id),
        thread,
        reply_to,
        reply,
    })
}

/// The plain text of `raw` under `parse_mode`, or Telegram's "can't parse entities".
pub(super) fn formatted(inner: &Inner, raw: &str, parse_mode: Option<&str>) -> Answer {
    let plain = if parse_mode.is_some_and(|m| m.eq_ignore_ascii_case("html")) {
        if inner.reject_html {
            return Err(Refusal::bad_request(
                "can't parse entities: Unsupported start tag \"rejected-by-fake\" at byte offset 0",
            ));
        }
        match html::parse(raw) {
            Ok(plain) => plain,
            Err(_) if inner.lenient_html => raw.to_string(),
            Err(description) => return Err(Refusal::new(400, &description)),
        }
    } else {
        raw.to_string()
    };
    Ok(Value::String(plain))
}

/// What the bot asked to send, for the record.
pub(super) struct Request {
    pub method: &'static str,
    /// Text or caption as sent.
    pub raw_text: String,
    pub parse_mode: Option<String>,
    pub file_name: Option<String>,
    /// `reply_markup` (an inline keyboard), kept on the stored message.
    pub markup: Option<Value>,
}

/// The `reply_markup` parameter, if one was given.
pub(super) fn markup(params: &Params) -> Option<Value> {
    let value = params.get("reply_markup");
    (!value.is_null()).then(|| value.clone())
}

impl Target {
    /// Stores the message `draft` (its id already taken), records it as sent, and
    /// returns the `Message` object (with `reply_to_message`) for the answer.
    pub(super) fn finish(self, inner: &mut Inner, draft: Draft, request: Request) -> Value {
        let mut message = draft.json();
        // An inline keyboard stays on the message until an edit replaces or drops it.
        if let Some(markup) = &request.markup {
            message["reply_markup"] = markup.clone();
        }
        inner.store.insert_message(
            self.chat_id,
            draft.id,
            Stored {
                json: message.clone(),
                from_bot: true,
                raw_text: request.raw_text.clone(),
                parse_mode: request.parse_mode.clone(),
            },
        );
        inner.sent.push(Sent {
            method: request.method.to_string(),
            chat_id: self.chat_id,
            message_id: draft.id,
            text: request.raw_text,
            parse_mode: request.parse_mode,
            message_thread_id: self.thread.map(|(id, _)| id),
            reply_to: self.reply_to,
            file_name: request.file_name,
            at: std::time::Instant::now(),
        });
        if let Some(reply) = self.reply {
            message["reply_to_message"] = reply;
        }
        message
    }
}
