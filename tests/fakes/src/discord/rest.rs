//! Discord's REST API as the fake serves it, under `/api/v10/`: every request is
//! recorded, then checked in Discord's order — token (401), a scripted fault — and
//! answered like Discord (its validation errors included: over 2000 characters, an
//! empty message, editing someone else's message, an unknown channel or message, an
//! interaction answered twice, uploads over 10 MB, reactions to unknown messages or
//! with an emoji that is neither Unicode nor `name:id`). `POST /users/@me/channels`
//! opens a DM: a test user's DM channel, the same one each time, remembered as opened.

use std::time::Instant;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Path, RawQuery, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::fault::{error, unauthorized};
use super::objects::{self, Draft};
use super::server::App;
use super::state::{Answer, Call, Inner, SentFile, Stored};
use super::{BOT_ID, TOKEN};

/// Discord's message length limit, in characters.
const LIMIT: usize = 2000;

/// The most a bot may upload with one message (all its files together).
const MAX_UPLOAD: usize = 10 * 1024 * 1024;

/// Which route a request is, by method and path segments (after `/api/v10/`).
fn route(method: &Method, segments: &[&str]) -> &'static str {
    match (method.as_str(), segments) {
        ("GET", ["gateway"]) => "get_gateway",
        ("GET", ["gateway", "bot"]) => "get_gateway_bot",
        ("GET", ["users", "@me"]) => "get_me",
        ("POST", ["users", "@me", "channels"]) => "create_dm",
        ("GET", ["channels", _]) => "get_channel",
        ("GET", ["channels", _, "messages"]) => "list_messages",
        ("POST", ["channels", _, "messages"]) => "create_message",
        ("PATCH", ["channels", _, "messages", _]) => "edit_message",
        ("POST", ["channels", _, "typing"]) => "typing",
        ("PUT", ["channels", _, "messages", _, "reactions", _, "@me"]) => "react",
        ("POST", ["interactions", _, _, "callback"]) => "interaction_callback",
        _ => "unknown",
    }
}

/// A request body: JSON, or multipart with `payload_json` and files.
struct Body {
    json: Value,
    files: Vec<Part>,
}

/// One uploaded file of a multipart body.
struct Part {
    /// The form field (`files[0]`).
    field: String,
    file_name: String,
    /// The part's own `Content-Type`, if it had one.
    content_type: Option<String>,
    bytes: Bytes,
}

/// Why a body could not be read: its status (413 past the size limit, else 400) and text.
type Unreadable = (StatusCode, String);

async fn read_body(request: Request) -> Result<Body, Unreadable> {
    let multipart = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    if !multipart {
        let bytes = Bytes::from_request(request, &())
            .await
            .map_err(|e| (e.status(), e.to_string()))?;
        let json = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .map_err(|e| (StatusCode::BAD_REQUEST, format!("body is not JSON: {e}")))?
        };
        return Ok(Body {
            json,
            files: Vec::new(),
        });
    }
    let mut form = Multipart::from_request(request, &())
        .await
        .map_err(|e| (e.status(), e.to_string()))?;
    let mut body = Body {
        json: Value::Null,
        files: Vec::new(),
    };
    let unreadable = |e: axum::extract::multipart::MultipartError| (e.status(), e.to_string());
    while let Some(field) = form.next_field().await.map_err(unreadable)? {
        let name = field.name().unwrap_or_default().to_string();
        let file_name = field.file_name().map(str::to_string);
        let content_type = field.content_type().map(str::to_string);
        let bytes = field.bytes().await.map_err(unreadable)?;
        match file_name {
            Some(file_name) => body.files.push(Part {
                field: name,
                file_name,
                content_type,
                bytes,
            }),
            None if name == "payload_json" => {
                body.json = serde_json::from_slice(&bytes)
                    .map_err(|e| (StatusCode::BAD_REQUEST, format!("payload_json: {e}")))?;
            }
            None => {}
        }
    }
    Ok(body)
}

pub(crate) async fn api(
    State(app): State<App>,
    Path(path): Path<String>,
    RawQuery(query): RawQuery,
    request: Request,
) -> Response {
    let method = request.method().clone();
    let authorized = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bot {TOKEN}"));
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let name = route(&method, &segments);
    let body = read_body(request).await;
    let recorded = match &body {
        Ok(body) => {
            let mut json = body.json.clone();
            if !body.files.is_empty() {
                let files: Vec<Value> = body
                    .files
                    .iter()
                    .map(|part| {
                        json!({"field": part.field, "file_name": part.file_name,
                               "content_type": part.content_type, "size": part.bytes.len()})
                    })
                    .collect();
                if !json.is_object() {
                    json = json!({});
                }
                json["files"] = json!(files);
            }
            json
        }
        Err((_, why)) => json!({"unreadable_body": why}),
    };
    let call = Call {
        route: name.to_string(),
        method: method.to_string(),
        path: format!(
            "/api/v10/{path}{}",
            query
                .as_deref()
                .map(|q| format!("?{q}"))
                .unwrap_or_default()
        ),
        body: recorded,
        at: Instant::now(),
    };
    let (revoked, fault, delay) = app.shared.update(|inner| {
        inner.calls.push(call);
        (
            inner.revoked,
            inner.take_fault(name),
            inner.take_delay(name),
        )
    });
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    // Discord answers these two without a token; interaction callbacks carry their own.
    let open = matches!(name, "get_gateway" | "interaction_callback");
    if !open && (revoked || !authorized) {
        return unauthorized();
    }
    if let Some(fault) = fault {
        return fault.response();
    }
    let body = match body {
        Ok(body) => body,
        Err((StatusCode::PAYLOAD_TOO_LARGE, _)) => return too_large(),
        Err((_, why)) => return error(400, &why, 50109),
    };
    let id = |i: usize| {
        segments
            .get(i)
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0)
    };
    match name {
        "get_gateway" => Json(json!({"url": app.gateway_url()})).into_response(),
        "get_gateway_bot" => Json(json!({
            "url": app.gateway_url(), "shards": 1,
            "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1}
        }))
        .into_response(),
        "get_me" => Json(objects::user(BOT_ID, true)).into_response(),
        "create_dm" => app.shared.update(|inner| open_dm(inner, &body.json)),
        "get_channel" => match objects::channel_json(id(1)) {
            Some(channel) => Json(channel).into_response(),
            None => error(404, "Unknown Channel", 10003),
        },
        "list_messages" => list(&app, id(1), query.as_deref()),
        "create_message" => app.shared.update(|inner| create(inner, &app, id(1), body)),
        "edit_message" => app.shared.update(|inner| edit(inner, id(1), id(3), &body.json)),
        "typing" => StatusCode::NO_CONTENT.into_response(),
        "react" => app
            .shared
            .update(|inner| react(inner, id(1), id(3), segments.get(5).copied())),
        "interaction_callback" => app.shared.update(|inner| answer(inner, id(1), body.json)),
        _ => error(404, "404: Not Found", 0),
    }
}

fn list(app: &App, channel: u64, query: Option<&str>) -> Response {
    let param = |key: &str| {
        form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.parse::<u64>().ok())
    };
    let after = param("after").unwrap_or(0);
    let limit = param("limit").unwrap_or(50).clamp(1, 100) as usize;
    let mut found: Vec<Value> = app.shared.read(|inner| {
        inner
            .messages
            .iter()
            .filter(|m| m.channel == channel && m.id > after)
            .map(|m| m.json.clone())
            .collect()
    });
    // Discord lists newest first; with `after` it keeps the oldest `limit` of them.
    found.truncate(limit);
    found.reverse();
    Json(found).into_response()
}

/// Create DM: the channel with `recipient_id` (a snowflake string), the same each time.
fn open_dm(inner: &mut Inner, body: &Value) -> Response {
    let recipient = match &body["recipient_id"] {
        Value::String(id) => id.parse::<u64>().ok(),
        Value::Number(id) => id.as_u64(),
        _ => None,
    };
    let Some(recipient) = recipient else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"message": "Invalid Form Body", "code": 50035, "errors": {"recipient_id": {"_errors": [
                {"code": "NUMBER_TYPE_COERCE", "message": "Value is not snowflake."}
            ]}}})),
        )
            .into_response();
    };
    let Some(channel) = objects::dm_channel_with(recipient) else {
        return error(404, "Unknown User", 10013);
    };
    inner.dms.insert(recipient, channel);
    match objects::channel_json(channel) {
        Some(dm) => Json(dm).into_response(),
        None => error(404, "Unknown Channel", 10003),
    }
}

fn too_long(content: &str) -> bool {
    content.chars().count() > LIMIT
}

fn invalid_length() -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"message": "Invalid Form Body", "code": 50035, "errors": {"content": {"_errors": [
            {"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}
        ]}}})),
    )
        .into_response()
}

fn create(inner: &mut Inner, app: &App, channel: u64, body: Body) -> Response {
    if objects::channel_json(channel).is_none() {
        return error(404, "Unknown Channel", 10003);
    }
    let content = body.json["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if too_long(&content) {
        return invalid_length();
    }
    let components = body.json.get("components").cloned().unwrap_or(json!([]));
    let has_components = components.as_array().is_some_and(|c| !c.is_empty());
    if content.is_empty() && body.files.is_empty() && !has_components {
        return error(400, "Cannot send an empty message", 50006);
    }
    if body.files.iter().map(|f| f.bytes.len()).sum::<usize>() > MAX_UPLOAD {
        return too_large();
    }
    let id = inner.snowflake();
    let mut attachments = Vec::new();
    for part in body.files {
        let file_id = inner.snowflake();
        let name = part.file_name;
        let path = format!("/attachments/{channel}/{file_id}/{name}");
        // Discord keeps a part's type and guesses one from the name otherwise.
        let mime = part
            .content_type
            .filter(|t| t != "application/octet-stream")
            .unwrap_or_else(|| crate::mime::from_name(&name).to_string());
        attachments.push(objects::attachment(
            file_id,
            &name,
            &mime,
            part.bytes.len(),
            &format!("{}{path}", app.base_url),
        ));
        inner
            .files
            .insert(path, (part.bytes.to_vec(), mime.clone()));
        inner.sent_files.push(SentFile {
            channel,
            message: id,
            file_name: name,
            content_type: mime,
            bytes: part.bytes.to_vec(),
            content: content.clone(),
        });
    }
    let draft = Draft {
        author: BOT_ID,
        content,
        mentions: Vec::new(),
        attachments,
        components,
        replied: None,
    };
    let json = objects::message(id, channel, &draft);
    inner.messages.push(Stored {
        id,
        channel,
        author: BOT_ID,
        from_bot: true,
        json: json.clone(),
        edits: 0,
        at: Instant::now(),
    });
    // Discord echoes the bot's own messages to it over the gateway.
    inner
        .gateway
        .dispatch("MESSAGE_CREATE", objects::gateway_message(&json));
    Json(json).into_response()
}

/// Discord's answer to an upload past its limit.
fn too_large() -> Response {
    error(413, "Request entity too large", 40005)
}

/// `PUT /channels/{c}/messages/{m}/reactions/{emoji}/@me`: a Unicode emoji or a custom
/// one as `name:id`, on a message of that channel; recorded, answered 204.
fn react(inner: &mut Inner, channel: u64, message: u64, emoji: Option<&str>) -> Response {
    if objects::channel_json(channel).is_none() {
        return error(404, "Unknown Channel", 10003);
    }
    if inner.message_mut(channel, message).is_none() {
        return error(404, "Unknown Message", 10008);
    }
    let emoji = emoji.unwrap_or_default();
    let custom = emoji
        .split_once(':')
        .is_some_and(|(name, id)| !name.is_empty() && id.parse::<u64>().is_ok());
    // A name such as `thumbsup` or `:eyes:` is Slack's way, not Discord's.
    if emoji.is_empty() || (!custom && emoji.is_ascii()) {
        return error(400, "Unknown Emoji", 10014);
    }
    inner.reactions.push((channel, message, emoji.to_string()));
    StatusCode::NO_CONTENT.into_response()
}

fn edit(inner: &mut Inner, channel: u64, id: u64, body: &Value) -> Response {
    let Some(message) = inner.message_mut(channel, id) else {
        return error(404, "Unknown Message", 10008);
    };
    if !message.from_bot {
        return error(403, "Cannot edit a message authored by another user", 50005);
    }
    if let Some(content) = body.get("content").and_then(Value::as_str) {
        if too_long(content) {
            return invalid_length();
        }
        message.json["content"] = json!(content);
    }
    if let Some(components) = body.get("components") {
        message.json["components"] = components.clone();
    }
    message.json["edited_timestamp"] = json!(objects::TIMESTAMP);
    message.edits += 1;
    message.at = Instant::now();
    Json(message.json.clone()).into_response()
}

fn answer(inner: &mut Inner, interaction: u64, body: Value) -> Response {
    let Some(pressed) = inner.pressed.get(&interaction).copied() else {
        return error(404, "Unknown interaction", 10062);
    };
    if inner
        .answers
        .iter()
        .any(|a| a.interaction_id == interaction)
    {
        return error(400, "Interaction has already been acknowledged.", 40060);
    }
    // Type 7 (UPDATE_MESSAGE) changes the message the button is on.
    if body["type"].as_u64() == Some(7)
        && let Some(message) = inner.message_mut(pressed.0, pressed.1)
    {
        for key in ["content", "components"] {
            if let Some(value) = body["data"].get(key) {
                message.json[key] = value.clone();
            }
        }
        message.edits += 1;
    }
    inner.answers.push(Answer {
        interaction_id: interaction,
        body,
    });
    StatusCode::NO_CONTENT.into_response()
}

/// `GET /attachments/...`: a file the fake stored (sent by a user or the bot).
pub(crate) async fn download(State(app): State<App>, Path(path): Path<String>) -> Response {
    let key = format!("/attachments/{path}");
    app.shared.update(|inner| {
        inner.calls.push(Call {
            route: "download".into(),
            method: "GET".into(),
            path: key.clone(),
            body: Value::Null,
            at: Instant::now(),
        });
    });
    match app.shared.read(|inner| inner.files.get(&key).cloned()) {
        Some((bytes, mime)) => ([(header::CONTENT_TYPE, mime)], bytes).into_response(),
        None => error(404, "404: Not Found", 0),
    }
}
