//! Methods answered `true` that still check their parameters as Telegram does:
//! `sendChatAction` (a known action), `setMyCommands` (valid names, kept for
//! `getMyCommands`), `setMessageReaction` (a message the fake knows, at most one
//! reaction, an emoji from Telegram's list; recorded). `answerCallbackQuery` needs no
//! code: the dispatch answers it `true` and the call log keeps its parameters.

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

/// The emoji a bot may react with (the Bot API's `ReactionTypeEmoji`); any other is
/// `REACTION_INVALID`.
const REACTION_EMOJI: &[&str] = &[
    "👍",
    "👎",
    "❤",
    "🔥",
    "🥰",
    "👏",
    "😁",
    "🤔",
    "🤯",
    "😱",
    "🤬",
    "😢",
    "🎉",
    "🤩",
    "🤮",
    "💩",
    "🙏",
    "👌",
    "🕊",
    "🤡",
    "🥱",
    "🥴",
    "😍",
    "🐳",
    "❤\u{200d}🔥",
    "🌚",
    "🌭",
    "💯",
    "🤣",
    "⚡",
    "🍌",
    "🏆",
    "💔",
    "🤨",
    "😐",
    "🍓",
    "🍾",
    "💋",
    "🖕",
    "😈",
    "😴",
    "😭",
    "🤓",
    "👻",
    "👨\u{200d}💻",
    "👀",
    "🎃",
    "🙈",
    "😇",
    "😨",
    "🤝",
    "✍",
    "🤗",
    "🫡",
    "🎅",
    "🎄",
    "☃",
    "💅",
    "🤪",
    "🗿",
    "🆒",
    "💘",
    "🙉",
    "🦄",
    "😘",
    "💊",
    "🙊",
    "😎",
    "👾",
    "🤷\u{200d}♂",
    "🤷",
    "🤷\u{200d}♀",
    "😡",
];

/// `setMessageReaction`: records (chat, message, emoji), `""` for an empty list (the
/// reaction removed). A custom or paid reaction is recorded under its type's name.
pub(super) fn set_message_reaction(inner: &mut Inner, params: &Params) -> Answer {
    let chat_id = outgoing::chat_id(params)?;
    let message_id = params
        .i64("message_id")
        .ok_or_else(|| Refusal::bad_request("message identifier is not specified"))?;
    if inner.store.message(chat_id, message_id).is_none() {
        return Err(Refusal::bad_request("MESSAGE_ID_INVALID"));
    }
    let reactions = match params.get("reaction") {
        Value::Null => Vec::new(),
        Value::Array(list) => list.clone(),
        _ => {
            return Err(Refusal::bad_request(
                "can't parse reaction types JSON object",
            ));
        }
    };
    if reactions.len() > 1 {
        return Err(Refusal::bad_request("REACTIONS_TOO_MANY"));
    }
    let emoji = match reactions.first() {
        None => String::new(),
        Some(reaction) => match reaction["type"].as_str() {
            Some("emoji") => {
                let emoji = reaction["emoji"].as_str().unwrap_or_default();
                // Telegram takes these with or without the emoji presentation selector.
                let bare = emoji.replace('\u{fe0f}', "");
                if !REACTION_EMOJI.contains(&bare.as_str()) {
                    return Err(Refusal::bad_request("REACTION_INVALID"));
                }
                emoji.to_string()
            }
            Some(other @ ("custom_emoji" | "paid")) => other.to_string(),
            _ => {
                return Err(Refusal::bad_request(
                    "can't parse reaction types JSON object",
                ));
            }
        },
    };
    inner.reactions.push((chat_id, message_id, emoji));
    Ok(Value::Bool(true))
}
