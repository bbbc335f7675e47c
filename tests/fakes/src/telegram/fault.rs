//! The envelopes of every answer: `ok(result)` → `{"ok":true,"result":..}` and
//! `Refusal` → `{"ok":false,"error_code":N,"description":..}`; and `Fault`, a failure a
//! test scripts with `fail_next`.
//!
//! Descriptions are Telegram's own texts where teloxide matches them to an `ApiError`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A scripted failure for the next call of one method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// 429 `Too Many Requests: retry after N` with `parameters.retry_after` (teloxide:
    /// `RequestError::RetryAfter`).
    TooManyRequests { retry_after: u64 },
    /// 409 `Conflict: terminated by other getUpdates request; …` (teloxide:
    /// `ApiError::TerminatedByOtherGetUpdates`).
    Conflict,
    /// 401 `Unauthorized` (teloxide: `ApiError::InvalidToken`).
    Unauthorized,
    /// 403 `Forbidden: {text}`, e.g. `"bot was blocked by the user"` (teloxide: `BotBlocked`).
    Forbidden(String),
    /// 400 `Bad Request: {text}` (the prefix is added unless `text` already has it).
    BadRequest(String),
    /// That 5xx status with its reason phrase. teloxide waits 10 s before returning it.
    ServerError(u16),
    /// The call is recorded and never answered: the bot is left waiting (to kill it
    /// there, in a crash test). Nothing the call asked for happens.
    Hang,
    /// No fault: the call is answered as usual (to script a fault for a later call).
    Pass,
}

impl Fault {
    pub(crate) fn refusal(&self) -> Refusal {
        match self {
            Fault::TooManyRequests { retry_after } => Refusal {
                status: 429,
                description: format!("Too Many Requests: retry after {retry_after}"),
                parameters: Some(json!({"retry_after": retry_after})),
            },
            Fault::Conflict => Refusal::new(
                409,
                "Conflict: terminated by other getUpdates request; make sure that only one bot \
                 instance is running",
            ),
            Fault::Unauthorized => Refusal::new(401, "Unauthorized"),
            Fault::Forbidden(text) => Refusal::new(403, &prefixed("Forbidden: ", text)),
            Fault::BadRequest(text) => Refusal::new(400, &prefixed("Bad Request: ", text)),
            Fault::Hang | Fault::Pass => Refusal::new(504, "Gateway Timeout"),
            Fault::ServerError(status) => {
                let code = StatusCode::from_u16(*status)
                    .ok()
                    .filter(StatusCode::is_server_error)
                    .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                let reason = code.canonical_reason().unwrap_or("Internal Server Error");
                Refusal::new(code.as_u16(), reason)
            }
        }
    }
}

fn prefixed(prefix: &str, text: &str) -> String {
    if text.starts_with(prefix) {
        text.to_string()
    } else {
        format!("{prefix}{text}")
    }
}

/// Any `{"ok":false}` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub status: u16,
    pub description: String,
    /// `ResponseParameters` (`retry_after`, `migrate_to_chat_id`), if any.
    pub parameters: Option<Value>,
}

impl Refusal {
    pub(crate) fn new(status: u16, description: &str) -> Refusal {
        Refusal {
            status,
            description: description.to_string(),
            parameters: None,
        }
    }

    /// 400 `Bad Request: {text}`.
    pub(crate) fn bad_request(text: &str) -> Refusal {
        Refusal::new(400, &format!("Bad Request: {text}"))
    }

    /// 413, as the Bot API answers an upload over its limits.
    pub(crate) fn too_large() -> Refusal {
        Refusal::new(413, "Request Entity Too Large")
    }

    /// 400 for a missing or malformed required parameter, worded as Telegram does.
    pub(crate) fn missing(param: &str) -> Refusal {
        Refusal::bad_request(&format!("{param} is empty"))
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut body = json!({
            "ok": false,
            "error_code": self.status,
            "description": self.description,
        });
        if let Some(parameters) = self.parameters {
            body["parameters"] = parameters;
        }
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_REQUEST);
        (status, Json(body)).into_response()
    }
}

/// `{"ok":true,"result":result}` with 200.
pub(crate) fn ok(result: Value) -> Response {
    Json(json!({"ok": true, "result": result})).into_response()
}

/// A method's outcome: its `result` or a refusal.
pub(crate) type Answer = Result<Value, Refusal>;

/// Turns an `Answer` into the HTTP response.
pub(crate) fn respond(answer: Answer) -> Response {
    match answer {
        Ok(result) => ok(result),
        Err(refusal) => refusal.into_response(),
    }
}
