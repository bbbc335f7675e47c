//! Methods answered `true` that still check their parameters as Telegram does:
//! `sendChatAction` (a known action), `setMyCommands` (valid names, kept for
//! `getMyCommands`). `setMessageReaction` and `answerCallbackQuery` need no code: the
//! dispatch answers them `true` and the call log keeps their parameters.

use serde_json::Value;

use super::outgoing;
use crate::telegram::fault::{Answer, Refusal};
use crate::telegram::params::Params;
use crate::telegram::state::Inner;

const ACTIONS: &[&str] = &[
    "typing",
    "upload_photo",
    "record_video",
    "upload_video",
    "record_voice",
    "upload_voice",
    "upload_document",
    "choose_sticker",
    "find_location",
    "record_video_note",
    "upload_video_note",
];

pub(super) fn send_chat_action(_inner: &mut Inner, params: &Params) -> Answer {
    outgoing::chat_id(params)?;
    let action = params.str("action").unwrap_or_default();
    if !ACTIONS.contains(&action.as_str()) {
        return Err(Refusal::bad_request("wrong parameter action in request"));
    }
    Ok(Value::Bool(true))
}

/// Commands are 1–32 of `a-z0-9_`; descriptions 1–256 characters.
pub(super) fn set_my_commands(inner: &mut Inner, params: &Params) -> Answer {
    let Some(commands) = params.get("commands").as_array() else {
        return Err(Refusal::bad_request("can't parse commands JSON object"));
    };
    for command in commands {
        let name = command["command"].as_str().unwrap_or_default();
        let name = name.strip_prefix('/').unwrap_or(name);
        let valid = (1..=32).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid {
            return Err(Refusal::bad_request("BOT_COMMAND_INVALID"));
        }
        let description = command["description"].as_str().unwrap_or_default();
        if !(1..=256).contains(&description.chars().count()) {
            return Err(Refusal::bad_request("BOT_COMMAND_DESCRIPTION_INVALID"));
        }
    }
    inner.commands.clone_from(commands);
    Ok(Value::Bool(true))
}
