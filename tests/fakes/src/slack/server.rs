//! The router. A Web API request is recorded, then checked like Slack does — a known
//! method (404 otherwise), the token (`invalid_auth`), an outage or a scripted fault —
//! and only then handed to its method. Also the upload URLs, the file downloads and the
//! Socket Mode WebSocket.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::{Bytes, to_bytes};
use axum::extract::{DefaultBodyLimit, FromRequest, Multipart, Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use super::api;
use super::fake::SlackFault;
use super::record::Call;
use super::socket;
use super::state::Shared;
use super::{APP_TOKEN, BOT_TOKEN};

const MAX_BODY: usize = 50 * 1024 * 1024;

#[derive(Clone)]
pub(crate) struct App {
    pub shared: Arc<Shared>,
    /// `http://127.0.0.1:PORT`, for URLs the fake hands out.
    pub base: String,
    /// Becomes `true` when the fake is dropped: sockets close.
    pub stop: watch::Receiver<bool>,
}

pub(crate) fn app(state: App) -> Router {
    Router::new()
        .route("/api/{method}", any(method))
        .route("/socket", get(socket::upgrade))
        .route("/upload/{file_id}", post(upload))
        .route("/files/{id}/{name}", get(download))
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found") })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

fn slack_json(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
        body.to_string(),
    )
        .into_response()
}

fn refused(code: &str) -> Response {
    slack_json(StatusCode::OK, json!({ "ok": false, "error": code }))
}

/// Query, JSON body and form body, merged into one object.
fn params(query: Option<&str>, headers: &HeaderMap, body: &Bytes) -> Value {
    let mut out = Map::new();
    let mut form = |text: &[u8]| {
        for (k, v) in form_urlencoded::parse(text) {
            out.insert(k.into_owned(), Value::String(v.into_owned()));
        }
    };
    if let Some(query) = query {
        form(query.as_bytes());
    }
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if kind.starts_with("application/x-www-form-urlencoded") {
        form(body);
    } else if let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) {
        out.extend(fields);
    }
    Value::Object(out)
}

async fn method(State(app): State<App>, Path(method): Path<String>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = to_bytes(body, MAX_BODY).await.unwrap_or_default();
    let params = params(parts.uri.query(), &parts.headers, &body);
    app.shared.update(|inner| {
        inner.calls.push(Call {
            method: method.clone(),
            params: params.clone(),
            at: Instant::now(),
        })
    });
    if !api::METHODS.contains(&method.as_str()) {
        return slack_json(
            StatusCode::NOT_FOUND,
            json!({ "ok": false, "error": "unknown_method" }),
        );
    }
    let wanted = if method == "apps.connections.open" {
        APP_TOKEN
    } else {
        BOT_TOKEN
    };
    let (rejecting, fault, down) = app
        .shared
        .update(|inner| (inner.reject_tokens, inner.take_fault(&method), inner.down()));
    match bearer(&parts.headers) {
        None => return refused("not_authed"),
        Some(token) if token != wanted || rejecting => return refused("invalid_auth"),
        Some(_) => {}
    }
    if let Some(fault) = fault {
        return match fault {
            SlackFault::RateLimited { retry_after } => (
                StatusCode::TOO_MANY_REQUESTS,
                [
                    (
                        header::CONTENT_TYPE,
                        "application/json; charset=utf-8".to_string(),
                    ),
                    (header::RETRY_AFTER, retry_after.to_string()),
                ],
                json!({ "ok": false, "error": "ratelimited" }).to_string(),
            )
                .into_response(),
            SlackFault::Error(code) => refused(&code),
            SlackFault::ServerError(status) => {
                let status =
                    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                (status, "Slack is having trouble").into_response()
            }
        };
    }
    if down && method == "apps.connections.open" {
        return (StatusCode::SERVICE_UNAVAILABLE, "down for the outage").into_response();
    }
    match app
        .shared
        .update(|inner| api::call(&method, &params, inner, &app.base))
    {
        Ok(Value::Object(mut fields)) => {
            fields.insert("ok".into(), Value::Bool(true));
            slack_json(StatusCode::OK, Value::Object(fields))
        }
        Ok(_) => slack_json(StatusCode::OK, json!({ "ok": true })),
        Err(code) => refused(&code),
    }
}

/// The bytes and content type of an upload: a raw body as sent, or the first file part
/// of a multipart form (Slack takes both).
async fn upload_body(request: Request) -> Result<(Bytes, Option<String>), String> {
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if !content_type
        .as_deref()
        .is_some_and(|t| t.starts_with("multipart/form-data"))
    {
        let body = to_bytes(request.into_body(), MAX_BODY)
            .await
            .map_err(|e| e.to_string())?;
        return Ok((body, content_type));
    }
    let mut form = Multipart::from_request(request, &())
        .await
        .map_err(|e| e.body_text())?;
    while let Some(field) = form.next_field().await.map_err(|e| e.body_text())? {
        if field.file_name().is_some() {
            let content_type = field.content_type().map(str::to_string);
            let bytes = field.bytes().await.map_err(|e| e.body_text())?;
            return Ok((bytes, content_type));
        }
    }
    Err("the form has no file part".into())
}

async fn upload(State(app): State<App>, Path(file_id): Path<String>, request: Request) -> Response {
    let (body, content_type) = match upload_body(request).await {
        Ok(upload) => upload,
        Err(why) => return (StatusCode::BAD_REQUEST, why).into_response(),
    };
    let len = body.len();
    let found = app.shared.update(|inner| {
        match inner
            .uploads
            .iter_mut()
            .find(|u| u.file_id == file_id && !u.completed)
        {
            Some(upload) => {
                upload.bytes = body.to_vec();
                upload.content_type = content_type;
                true
            }
            None => false,
        }
    });
    if !found {
        return (StatusCode::NOT_FOUND, "no such upload").into_response();
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain")],
        format!("OK - {len}"),
    )
        .into_response()
}

async fn download(
    State(app): State<App>,
    Path((id, _name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    app.shared.update(|inner| {
        inner.calls.push(Call {
            method: "download".into(),
            params: json!({ "file": id }),
            at: Instant::now(),
        })
    });
    if bearer(&headers) != Some(BOT_TOKEN) {
        return (StatusCode::FORBIDDEN, "sign in to see this file").into_response();
    }
    match app.shared.read(|inner| inner.files.get(&id).cloned()) {
        Some(file) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "application/octet-stream".to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{}\"", file.name),
                ),
            ],
            file.bytes,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such file").into_response(),
    }
}
