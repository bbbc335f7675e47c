//! The HTTP surface: the router and the chat handler every model request goes through
//! (the transcription endpoint has its own file, `transcription`).
//!
//! Order of checks for a chat request, as the real APIs do it: record it, then key
//! (401), then shape (400), then model (404); only a request that passes all three takes
//! a step from the script.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::Value;

use crate::recorded::Format;
use crate::reply::{self, error_json, error_response};
use crate::state::Shared;
use crate::{anthropic, openai};
use crate::{control, speech, transcription};

/// The model name that always gets a 404 model-not-found error.
pub const MISSING_MODEL: &str = "missing-model";

/// The largest request body read (axum's default is 2 MB): enough for chat requests
/// carrying several photos and for audio files past OpenAI's 25 MB, so those get the
/// API's own 413.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// Every route of the fake, over `shared`.
pub(crate) fn app(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(openai_chat))
        .route("/v1/messages", post(anthropic_chat))
        .route("/v1/models", get(models))
        .route("/v1/audio/transcriptions", post(transcription::transcribe))
        .route("/v1/audio/speech", post(speech::speak))
        .route("/_fake/script", post(control::script))
        .route("/_fake/requests", get(control::requests))
        .route("/_fake/reset", post(control::reset))
        .route("/_fake/transcriptions", get(control::transcriptions))
        .route("/_fake/transcript", post(control::transcript))
        .route(
            "/_fake/transcription_failure",
            post(control::transcription_failure),
        )
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(shared)
}

async fn openai_chat(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    chat(s, Format::OpenAi, headers, body).await
}

async fn anthropic_chat(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    chat(s, Format::Anthropic, headers, body).await
}

/// `GET /v1/models`, as both APIs have it: the key is checked (either provider's
/// header), then one model is listed. Not recorded as a chat request.
async fn models(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if let Some(key) = s.required_key()
        && !openai::authorized(&headers, &key)
        && !anthropic::authorized(&headers, &key)
    {
        return error_response(
            401,
            error_json(Format::OpenAi, 401, None, None).to_string(),
            None,
        );
    }
    let list =
        serde_json::json!({"object": "list", "data": [{"id": "fake-model", "object": "model"}]});
    axum::response::IntoResponse::into_response(axum::Json(list))
}

async fn chat(shared: Arc<Shared>, format: Format, headers: HeaderMap, raw: Bytes) -> Response {
    let parsed: Option<Value> = serde_json::from_slice(&raw).ok();
    let recorded = parsed
        .clone()
        .unwrap_or_else(|| Value::String(String::from_utf8_lossy(&raw).into_owned()));
    shared.record(format, &headers, recorded);
    let refuse = |status: u16, message: Option<&str>| {
        error_response(
            status,
            error_json(format, status, None, message).to_string(),
            None,
        )
    };

    if let Some(key) = shared.required_key() {
        let ok = match format {
            Format::OpenAi => openai::authorized(&headers, &key),
            Format::Anthropic => anthropic::authorized(&headers, &key),
        };
        if !ok {
            return refuse(401, None);
        }
    }
    let Some(body) = parsed.filter(Value::is_object) else {
        return refuse(400, Some("The request body is not a valid JSON object."));
    };
    let valid = match format {
        Format::OpenAi => openai::validate(&headers, &body),
        Format::Anthropic => anthropic::validate(&headers, &body),
    };
    if let Err(message) = valid {
        return refuse(400, Some(&message));
    }
    if body["model"] == MISSING_MODEL {
        let message = match format {
            Format::OpenAi => format!(
                "The model `{MISSING_MODEL}` does not exist or you do not have access to it."
            ),
            Format::Anthropic => format!("model: {MISSING_MODEL}"),
        };
        return refuse(404, Some(&message));
    }

    if let Some((tokens, limit)) = shared.over_context(&body, &raw) {
        let body = match format {
            Format::OpenAi => serde_json::json!({"error": {
                "message": format!("This model's maximum context length is {limit} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."),
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
            Format::Anthropic => serde_json::json!({"type": "error", "error": {
                "type": "invalid_request_error",
                "message": format!("prompt is too long: {tokens} tokens > {limit} maximum")}}),
        };
        return error_response(400, body.to_string(), None);
    }
    let (step, turn) = shared.begin_turn(format, &body, &raw);
    reply::respond(step, turn, shared.shutdown()).await
}
