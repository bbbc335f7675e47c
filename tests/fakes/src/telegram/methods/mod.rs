//! The Bot API methods the fake answers, by their canonical camelCase names, and the
//! dispatch from a method to its handler. Handlers get the parameters and the locked
//! state (only `getUpdates` waits, so it gets the shared state instead).
//!
//! - `updates`  — `getUpdates` (long poll), `getWebhookInfo`, `deleteWebhook`
//! - `outgoing` — what every send shares: chat, topic, reply, text checks, recording
//! - `text`     — `sendMessage`, `editMessageText`, `deleteMessage`
//! - `media`    — `sendPhoto`, `sendDocument`, `sendVoice`, `sendAudio`
//! - `files`    — `getFile` and file downloads
//! - `acks`     — methods answered `true`: chat actions, commands, reactions, callbacks

mod acks;
mod files;
mod media;
mod outgoing;
mod text;
mod updates;

use super::attachment::MediaKind;
use super::fault::Answer;
use super::objects;
use super::params::Params;
use super::state::Shared;

pub(crate) use files::download;

/// Every method the fake implements.
const METHODS: &[&str] = &[
    "getMe",
    "getWebhookInfo",
    "deleteWebhook",
    "getUpdates",
    "sendMessage",
    "editMessageText",
    "deleteMessage",
    "sendPhoto",
    "sendDocument",
    "sendVoice",
    "sendAudio",
    "getFile",
    "sendChatAction",
    "setMyCommands",
    "getMyCommands",
    "deleteMyCommands",
    "setMessageReaction",
    "answerCallbackQuery",
];

/// The canonical name of `name` (matched case-insensitively), if the fake implements it.
pub(crate) fn canonical(name: &str) -> Option<&'static str> {
    METHODS
        .iter()
        .copied()
        .find(|known| known.eq_ignore_ascii_case(name))
}

/// Runs `method` (a name from `canonical`).
pub(crate) async fn call(method: &'static str, params: Params, shared: &Shared) -> Answer {
    if method == "getUpdates" {
        return updates::get_updates(shared, &params).await;
    }
    shared.update(|inner| match method {
        "getMe" => Ok(objects::me(!inner.reads_all_group_messages)),
        "getWebhookInfo" => updates::get_webhook_info(inner),
        "deleteWebhook" => updates::delete_webhook(inner, &params),
        "sendMessage" => text::send_message(inner, &params),
        "editMessageText" => text::edit_message_text(inner, &params),
        "deleteMessage" => text::delete_message(inner, &params),
        "sendPhoto" => media::send(inner, &params, MediaKind::Photo, method),
        "sendDocument" => media::send(inner, &params, MediaKind::Document, method),
        "sendVoice" => media::send(inner, &params, MediaKind::Voice, method),
        "sendAudio" => media::send(inner, &params, MediaKind::Audio, method),
        "getFile" => files::get_file(inner, &params),
        "sendChatAction" => acks::send_chat_action(inner, &params),
        "setMyCommands" => acks::set_my_commands(inner, &params),
        "setMessageReaction" => acks::set_message_reaction(inner, &params),
        "getMyCommands" => Ok(serde_json::Value::Array(inner.commands.clone())),
        "deleteMyCommands" => {
            inner.commands.clear();
            Ok(serde_json::Value::Bool(true))
        }
        // Accepted and recorded (see `calls`); nothing to remember.
        _ => Ok(serde_json::Value::Bool(true)),
    })
}
