//! The `/_fake/*` control routes, so another process can script the fake and read what it
//! saw: `POST /_fake/script` (a JSON array of steps, appended), `GET /_fake/requests`,
//! `POST /_fake/reset`.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::recorded::RecordedJson;
use crate::state::Shared;
use crate::step::Step;

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
