//! The `/_fake/*` control routes, so another process can script the fake and read what it
//! saw: `POST /_fake/script` (a JSON array of steps, appended), `GET /_fake/requests`,
//! `POST /_fake/reset`; for transcriptions `GET /_fake/transcriptions`,
//! `POST /_fake/transcript` and `POST /_fake/transcription_failure`.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use serde::Deserialize;

use crate::recorded::{RecordedJson, Transcription};
use crate::state::Shared;
use crate::step::Step;
use crate::transcription::{DEFAULT_DURATION_SECS, Failure, Transcript};

/// Appends the steps; answers `{"queued": N}` with the queue's new length.
pub(crate) async fn script(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    match serde_json::from_slice::<Vec<Step>>(&body) {
        Ok(steps) => Json(json!({"queued": shared.push(steps)})).into_response(),
        Err(e) => {
            let message = format!(
                "expected a JSON array of steps such as [{{\"text\":\"hi\"}}, \"stall\"]: {e}"
            );
            (StatusCode::BAD_REQUEST, message).into_response()
        }
    }
}

/// Every recorded chat request, oldest first.
pub(crate) async fn requests(State(shared): State<Arc<Shared>>) -> Json<Vec<RecordedJson>> {
    Json(shared.requests_json())
}

/// Clears the script queue and the request log.
pub(crate) async fn reset(State(shared): State<Arc<Shared>>) -> StatusCode {
    shared.reset();
    StatusCode::NO_CONTENT
}

/// Every transcription request, oldest first (`size` instead of the bytes).
pub(crate) async fn transcriptions(State(shared): State<Arc<Shared>>) -> Json<Vec<Transcription>> {
    Json(shared.transcriptions())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TranscriptJson {
    text: String,
    #[serde(default = "default_duration")]
    duration_secs: f64,
}

fn default_duration() -> f64 {
    DEFAULT_DURATION_SECS
}

/// Sets what every later transcription answers: `{"text":"..","duration_secs":3.5}`.
pub(crate) async fn transcript(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    match serde_json::from_slice::<TranscriptJson>(&body) {
        Ok(TranscriptJson {
            text,
            duration_secs,
        }) => {
            shared.set_transcript(Transcript {
                text,
                duration_secs,
            });
            StatusCode::NO_CONTENT.into_response()
        }
        Err(e) => {
            let message = format!("expected {{\"text\":\"hello\",\"duration_secs\":3.5}}: {e}");
            (StatusCode::BAD_REQUEST, message).into_response()
        }
    }
}

/// Queues a failure for the next transcription: `{"status":429,"retry_after":1}`;
/// answers `{"queued": N}`.
pub(crate) async fn transcription_failure(
    State(shared): State<Arc<Shared>>,
    body: Bytes,
) -> Response {
    match serde_json::from_slice::<Failure>(&body) {
        Ok(failure) => {
            Json(json!({"queued": shared.fail_next_transcription(failure)})).into_response()
        }
        Err(e) => {
            let message = format!("expected {{\"status\":429,\"retry_after\":1}}: {e}");
            (StatusCode::BAD_REQUEST, message).into_response()
        }
    }
}
