//! `Fault`, a failure a test scripts for the next call of one route, and the error
//! answers Discord gives (`{"message","code"}`, 429s with `retry_after` in the body
//! and `Retry-After` / `X-RateLimit-*` headers).

use axum::Json;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A scripted failure.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// 429 with `retry_after` seconds in the JSON body and the `Retry-After` header.
    TooManyRequests { retry_after: f64 },
    /// That 5xx status.
    ServerError(u16),
    /// 401 `401: Unauthorized`.
    Unauthorized,
    /// 403 `Missing Access` (code 50001).
    Forbidden,
}

impl Fault {
    pub(crate) fn response(&self) -> Response {
        match self {
            Fault::TooManyRequests { retry_after } => rate_limited(*retry_after),
            Fault::ServerError(status) => {
                let code = StatusCode::from_u16(*status)
                    .ok()
                    .filter(StatusCode::is_server_error)
                    .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                (
                    code,
                    Json(json!({"message": "Internal Server Error", "code": 0})),
                )
                    .into_response()
            }
            Fault::Unauthorized => unauthorized(),
            Fault::Forbidden => error(403, "Missing Access", 50001),
        }
    }
}

/// Discord's error body with that status.
pub(crate) fn error(status: u16, message: &str, code: u64) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    (status, Json(json!({"message": message, "code": code}))).into_response()
}

pub(crate) fn unauthorized() -> Response {
    error(401, "401: Unauthorized", 0)
}

fn rate_limited(retry_after: f64) -> Response {
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        Json(json!({"message": "You are being rate limited.", "retry_after": retry_after, "global": false})),
    )
        .into_response();
    let headers = response.headers_mut();
    let secs = retry_after.ceil().max(0.0).to_string();
    for (name, value) in [
        ("retry-after", secs.as_str()),
        ("x-ratelimit-limit", "5"),
        ("x-ratelimit-remaining", "0"),
        ("x-ratelimit-reset-after", &retry_after.to_string()),
        ("x-ratelimit-scope", "user"),
    ] {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    }
    response
}
