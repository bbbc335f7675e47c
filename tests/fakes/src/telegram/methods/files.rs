//! `getFile` (a `File` with its `file_path`) and the download route
//! `GET /file/bot{TOKEN}/{file_path}` that serves the bytes. Downloads are recorded as
//! calls of the made-up method `downloadFile`.

use std::time::Instant;

use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::telegram::fault::{Answer, Refusal};
use crate::telegram::params::Params;
use crate::telegram::record::Call;
use crate::telegram::state::{Inner, Shared};

pub(super) fn get_file(inner: &Inner, params: &Params) -> Answer {
    let file_id = params.str("file_id").unwrap_or_default();
    inner
        .store
        .file(&file_id)
        .map(|entry| entry.file_json())
        .ok_or_else(|| Refusal::bad_request("invalid file_id"))
}

/// Serves the file at `path` (already percent-decoded), or 404 `Not Found`.
pub(crate) fn download(shared: &Shared, path: &str) -> Response {
    let bytes = shared.update(|inner| {
        inner.calls.push(Call {
            method: "downloadFile".into(),
            params: json!({"file_path": path}),
            at: Instant::now(),
        });
        inner.store.file_at(path).map(|entry| entry.bytes.clone())
    });
    match bytes {
        Some(bytes) => ([(CONTENT_TYPE, "application/octet-stream")], bytes).into_response(),
        None => Refusal::new(404, "Not Found").into_response(),
    }
}
