//! The Web API methods the adapter uses. Each reads its params (from the query, a JSON
//! or a form body, merged) and answers the fields of Slack's `{"ok": true, ...}` reply,
//! or the error code of an `{"ok": false, "error": code}` one.

use serde_json::{Value, json};

use super::record::{Posted, Upload};
use super::state::Inner;
use super::{BOT_NAME, BOT_USER};

/// Slack truncates text past this; the fake refuses it instead, to catch a missing split.
const MAX_TEXT: usize = 40_000;

/// The methods the fake knows (for 404s and token checks).
pub(crate) const METHODS: [&str; 11] = [
    "auth.test",
    "apps.connections.open",
    "chat.postMessage",
    "chat.update",
    "chat.postEphemeral",
    "reactions.add",
    "users.info",
    "files.getUploadURLExternal",
    "files.completeUploadExternal",
    "conversations.info",
    "conversations.open",
];

fn text(params: &Value, key: &str) -> Option<String> {
    match &params[key] {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `blocks` may come as JSON or as a JSON string (form bodies).
fn blocks(params: &Value) -> Option<Value> {
    match &params["blocks"] {
        Value::String(s) => serde_json::from_str(s).ok(),
        Value::Array(_) => Some(params["blocks"].clone()),
        _ => None,
    }
}

pub(crate) fn call(
    method: &str,
    params: &Value,
    inner: &mut Inner,
    base: &str,
) -> Result<Value, String> {
    let require = |key: &str| text(params, key).ok_or_else(|| format!("invalid_arguments: {key}"));
    match method {
        "auth.test" => Ok(json!({
            "url": "https://fake.slack.com/", "team": "Fake Team", "user": BOT_NAME,
            "team_id": "TFAKE", "user_id": BOT_USER, "bot_id": "BBOT", "is_enterprise_install": false,
        })),
        "apps.connections.open" => {
            let ticket = inner.id("");
            let ws = base.replacen("http://", "ws://", 1);
            Ok(json!({ "url": format!("{ws}/socket?ticket={ticket}") }))
        }
        "chat.postMessage" | "chat.postEphemeral" => {
            let channel = require("channel")?;
            if !channel.starts_with(['C', 'D', 'G']) {
                return Err("channel_not_found".into());
            }
            let body = text(params, "text").unwrap_or_default();
            let blocks = blocks(params);
            if body.is_empty() && blocks.is_none() {
                return Err("no_text".into());
            }
            if body.chars().count() > MAX_TEXT {
                return Err("msg_too_long".into());
            }
            let ephemeral = method == "chat.postEphemeral";
            let user = if ephemeral {
                require("user")?
            } else {
                BOT_USER.to_string()
            };
            let ts = inner.ts();
            let thread_ts = text(params, "thread_ts");
            inner.messages.push(Posted {
                channel: channel.clone(),
                ts: ts.clone(),
                text: body.clone(),
                thread_ts: thread_ts.clone(),
                blocks: blocks.clone(),
                edits: 0,
                history: vec![body.clone()],
                user,
                ephemeral,
                at: std::time::Instant::now(),
            });
            if ephemeral {
                return Ok(json!({ "message_ts": ts }));
            }
            Ok(json!({
                "channel": channel, "ts": ts,
                "message": {
                    "type": "message", "user": BOT_USER, "bot_id": "BBOT", "text": body,
                    "ts": ts, "thread_ts": thread_ts, "blocks": blocks,
                },
            }))
        }
        "chat.update" => {
            let channel = require("channel")?;
            let ts = require("ts")?;
            let body = text(params, "text").unwrap_or_default();
            let new_blocks = blocks(params);
            if body.chars().count() > MAX_TEXT {
                return Err("msg_too_long".into());
            }
            let Some(message) = inner
                .messages
                .iter_mut()
                .find(|m| m.channel == channel && m.ts == ts && !m.ephemeral)
            else {
                return Err("message_not_found".into());
            };
            if message.user != BOT_USER {
                return Err("cant_update_message".into());
            }
            if body.is_empty() && new_blocks.is_none() {
                return Err("no_text".into());
            }
            message.text = body.clone();
            message.history.push(body.clone());
            if new_blocks.is_some() {
                message.blocks = new_blocks; // without blocks, Slack keeps the old ones
            }
            message.edits += 1;
            message.at = std::time::Instant::now();
            Ok(json!({
                "channel": channel, "ts": ts, "text": body,
                "message": { "user": BOT_USER, "bot_id": "BBOT", "text": body, "blocks": message.blocks },
            }))
        }
        "reactions.add" => {
            let channel = require("channel")?;
            let ts = require("timestamp")?;
            let name = require("name")?;
            if inner
                .reactions
                .iter()
                .any(|r| r == &(channel.clone(), ts.clone(), name.clone()))
            {
                return Err("already_reacted".into());
            }
            inner.reactions.push((channel, ts, name));
            Ok(json!({}))
        }
        "users.info" => {
            let user = require("user")?;
            let name = inner
                .names
                .get(&user)
                .cloned()
                .unwrap_or_else(|| format!("user {user}"));
            Ok(json!({ "user": {
                "id": user, "team_id": "TFAKE", "name": name.to_lowercase().replace(' ', "."),
                "real_name": name, "profile": { "display_name": name, "real_name": name },
            }}))
        }
        "files.getUploadURLExternal" => {
            let file_name = require("filename")?;
            let length: usize = require("length")?
                .parse()
                .map_err(|_| "invalid_arguments: length")?;
            let file_id = inner.id("F");
            inner.uploads.push(Upload {
                file_id: file_id.clone(),
                file_name,
                bytes: Vec::with_capacity(length),
                content_type: None,
                channel: None,
                thread_ts: None,
                title: None,
                comment: None,
                completed: false,
            });
            Ok(json!({ "upload_url": format!("{base}/upload/{file_id}"), "file_id": file_id }))
        }
        "files.completeUploadExternal" => {
            let files = match &params["files"] {
                Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
                other => other.clone(),
            };
            let mut done = Vec::new();
            for file in files.as_array().into_iter().flatten() {
                let id = file["id"].as_str().unwrap_or_default();
                let Some(upload) = inner.uploads.iter_mut().find(|u| u.file_id == id) else {
                    return Err("file_not_found".into());
                };
                upload.completed = true;
                upload.channel = text(params, "channel_id");
                upload.thread_ts = text(params, "thread_ts");
                upload.title = file["title"].as_str().map(str::to_string);
                upload.comment = text(params, "initial_comment");
                done.push(json!({ "id": id, "title": upload.title, "name": upload.file_name }));
            }
            if done.is_empty() {
                return Err("invalid_arguments: files".into());
            }
            Ok(json!({ "files": done }))
        }
        "conversations.info" => {
            let channel = require("channel")?;
            Ok(json!({ "channel": { "id": channel, "is_im": channel.starts_with('D') } }))
        }
        "conversations.open" => open_im(params, inner),
        _ => Err("unknown_method".into()),
    }
}

/// `conversations.open` with one user: their IM, `D{n}` for `U{n}`, the same each time.
/// Slack documents `users` as a comma-separated string; slack-morphism sends a JSON
/// array; both are taken.
fn open_im(params: &Value, inner: &mut Inner) -> Result<Value, String> {
    let users: Vec<String> = match &params["users"] {
        Value::String(list) => list
            .split(',')
            .map(|u| u.trim().to_string())
            .filter(|u| !u.is_empty())
            .collect(),
        Value::Array(ids) => ids
            .iter()
            .filter_map(|id| id.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    let user = match users.as_slice() {
        [] => return Err("users_list_not_supplied".into()),
        [user] => user,
        _ => return Err("not_supported: the fake opens one-person IMs only".into()),
    };
    if user == BOT_USER {
        return Err("cannot_dm_bot".into());
    }
    let Some(n) = user.strip_prefix('U').filter(|n| !n.is_empty()) else {
        return Err("user_not_found".into());
    };
    let im = format!("D{n}");
    let already_open = inner.ims.insert(user.clone(), im.clone()).is_some();
    let mut answer = json!({ "channel": { "id": im } });
    if already_open {
        answer["no_op"] = json!(true);
        answer["already_open"] = json!(true);
    }
    Ok(answer)
}
