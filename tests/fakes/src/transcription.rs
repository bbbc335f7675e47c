//! `POST /v1/audio/transcriptions`, OpenAI's speech-to-text endpoint as the fake serves
//! it: a multipart form with `file` and `model` (`response_format` and `language`
//! optional), checked as OpenAI checks it, answered with the scripted transcript in the
//! format asked for. Every request is recorded as a `Transcription`, refused ones too.
//!
//! Checks, in order: the key (401, when one is required), a multipart body (400),
//! `model` and `file` present (400), a known `response_format` (400), a file name with
//! an audio extension OpenAI knows (400), a file that is not empty (400) and at most
//! 25 MB (413), model `"missing-model"` (404), then a scripted failure, if any.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::openai;
use crate::recorded::{Format, Transcription};
use crate::reply::{error_json, error_response};
use crate::server::MISSING_MODEL;
use crate::state::Shared;

/// What a transcription answers until a test says otherwise.
pub(crate) const DEFAULT_TEXT: &str = "remind me to water the plants";
pub(crate) const DEFAULT_DURATION_SECS: f64 = 42.0;

/// OpenAI's size limit for one audio file.
const MAX_FILE: usize = 25 * 1024 * 1024;

/// The file extensions OpenAI takes, by which it tells the audio format.
const AUDIO_EXTENSIONS: &[&str] = &[
    "flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm",
];

/// The `response_format`s OpenAI knows.
const RESPONSE_FORMATS: &[&str] = &["json", "text", "srt", "verbose_json", "vtt"];

/// The transcript every transcription answers with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Transcript {
    pub text: String,
    pub duration_secs: f64,
}

impl Default for Transcript {
    fn default() -> Self {
        Transcript {
            text: DEFAULT_TEXT.to_string(),
            duration_secs: DEFAULT_DURATION_SECS,
        }
    }
}

/// A scripted failure for one transcription: that status with OpenAI's error body for
/// it, and `Retry-After` when `retry_after` is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Failure {
    pub status: u16,
    #[serde(default)]
    pub retry_after: Option<u64>,
}

/// The form's fields the fake reads; others (`prompt`, `temperature` …) are ignored.
#[derive(Default)]
struct Form {
    model: Option<String>,
    /// (file name, content type, bytes).
    file: Option<(String, Option<String>, Bytes)>,
    response_format: Option<String>,
    language: Option<String>,
}

async fn read_form(request: Request) -> Result<Form, String> {
    let mut multipart = Multipart::from_request(request, &())
        .await
        .map_err(|e| e.body_text())?;
    let mut form = Form::default();
    while let Some(field) = multipart.next_field().await.map_err(|e| e.body_text())? {
        let name = field.name().unwrap_or_default().to_string();
        let file_name = field.file_name().map(str::to_string);
        let content_type = field.content_type().map(str::to_string);
        if name == "file" {
            let bytes = field.bytes().await.map_err(|e| e.body_text())?;
            // A `file` without a file name is a plain field to OpenAI: no file at all.
            if let Some(file_name) = file_name {
                form.file = Some((file_name, content_type, bytes));
            }
            continue;
        }
        let text = field.text().await.map_err(|e| e.body_text())?;
        match name.as_str() {
            "model" => form.model = Some(text),
            "response_format" => form.response_format = Some(text),
            "language" => form.language = Some(text),
            _ => {}
        }
    }
    Ok(form)
}

/// The handler of `POST /v1/audio/transcriptions`.
pub(crate) async fn transcribe(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    request: Request,
) -> Response {
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let form = if content_type
        .to_ascii_lowercase()
        .starts_with("multipart/form-data")
    {
        read_form(request).await
    } else {
        Err(format!(
            "Invalid Content-Type header ({content_type}), expected multipart/form-data. \
             (HINT: If you're using curl, you can pass -H 'Content-Type: multipart/form-data')"
        ))
    };
    let mut record = Transcription {
        model: String::new(),
        file_name: String::new(),
        content_type: None,
        size: 0,
        bytes: Vec::new(),
        response_format: None,
        language: None,
        status: 0,
    };
    if let Ok(form) = &form {
        record.model = form.model.clone().unwrap_or_default();
        record.response_format.clone_from(&form.response_format);
        record.language.clone_from(&form.language);
        if let Some((name, content_type, bytes)) = &form.file {
            record.file_name.clone_from(name);
            record.content_type.clone_from(content_type);
            record.size = bytes.len();
            record.bytes = bytes.to_vec();
        }
    }
    // A slow server: recorded at once (the request arrived), answered after the delay.
    let delay = shared.transcription_delay();
    let response = answer(&shared, &headers, form);
    record.status = response.status().as_u16();
    if let Some(delay) = delay {
        shared.record_transcription(record);
        tokio::time::sleep(delay).await;
        return response;
    }
    shared.record_transcription(record);
    response
}

fn refuse(status: u16, message: Option<&str>) -> Response {
    let body = error_json(Format::OpenAi, status, None, message);
    error_response(status, body.to_string(), None)
}

fn answer(shared: &Shared, headers: &HeaderMap, form: Result<Form, String>) -> Response {
    if let Some(key) = shared.required_key()
        && !openai::authorized(headers, &key)
    {
        return refuse(401, None);
    }
    let form = match form {
        Ok(form) => form,
        Err(why) => return refuse(400, Some(&why)),
    };
    let Some(model) = form.model.filter(|m| !m.is_empty()) else {
        return refuse(400, Some("you must provide a model parameter"));
    };
    let Some((file_name, _, bytes)) = form.file else {
        return refuse(400, Some("Missing required parameter: 'file'."));
    };
    let format = form.response_format.unwrap_or_else(|| "json".into());
    if !RESPONSE_FORMATS.contains(&format.as_str()) {
        return refuse(
            400,
            Some(&format!(
                "Invalid value: '{format}'. Supported values are: 'json', 'text', 'srt', \
                 'verbose_json', and 'vtt'."
            )),
        );
    }
    let extension = file_name
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .unwrap_or_default();
    if !AUDIO_EXTENSIONS.contains(&extension.as_str()) {
        let message = format!("Invalid file format. Supported formats: {AUDIO_EXTENSIONS:?}")
            .replace('"', "'");
        return refuse(400, Some(&message));
    }
    if bytes.is_empty() {
        return refuse(
            400,
            Some("Audio file is too short. Minimum audio length is 0.1 seconds."),
        );
    }
    if bytes.len() > MAX_FILE {
        let message = format!(
            "Maximum content size limit ({MAX_FILE}) exceeded ({} bytes read)",
            bytes.len()
        );
        return refuse(413, Some(&message));
    }
    if model == MISSING_MODEL {
        let message =
            format!("The model `{MISSING_MODEL}` does not exist or you do not have access to it.");
        return refuse(404, Some(&message));
    }
    if let Some(failure) = shared.take_transcription_failure() {
        let body = error_json(Format::OpenAi, failure.status, None, None);
        return error_response(failure.status, body.to_string(), failure.retry_after);
    }
    let transcript = shared.transcript();
    respond(&format, &transcript, form.language.as_deref())
}

/// The transcript in `format` (one of `RESPONSE_FORMATS`).
fn respond(format: &str, transcript: &Transcript, language: Option<&str>) -> Response {
    let text = &transcript.text;
    let duration = transcript.duration_secs;
    match format {
        "verbose_json" => Json(json!({
            "task": "transcribe",
            "language": language_name(language),
            "duration": duration,
            "text": text,
            "segments": Value::Array(Vec::new()),
        }))
        .into_response(),
        "text" => plain(format!("{text}\n")),
        "srt" => plain(format!(
            "1\n00:00:00,000 --> {}\n{text}\n\n",
            timestamp(duration, ',')
        )),
        "vtt" => plain(format!(
            "WEBVTT\n\n00:00:00.000 --> {}\n{text}\n\n",
            timestamp(duration, '.')
        )),
        _ => Json(json!({"text": text})).into_response(),
    }
}

fn plain(body: String) -> Response {
    let content_type = HeaderValue::from_static("text/plain; charset=utf-8");
    (StatusCode::OK, [(CONTENT_TYPE, content_type)], body).into_response()
}

/// `HH:MM:SS,mmm` (SRT) or `HH:MM:SS.mmm` (WebVTT).
fn timestamp(secs: f64, separator: char) -> String {
    let millis = (secs.max(0.0) * 1000.0).round() as u64;
    let (h, m, s, ms) = (
        millis / 3_600_000,
        millis / 60_000 % 60,
        millis / 1000 % 60,
        millis % 1000,
    );
    format!("{h:02}:{m:02}:{s:02}{separator}{ms:03}")
}

/// `verbose_json` names the language in English words, as OpenAI does.
fn language_name(code: Option<&str>) -> String {
    let name = match code.unwrap_or("en") {
        "en" => "english",
        "de" => "german",
        "fr" => "french",
        "es" => "spanish",
        "it" => "italian",
        "nl" => "dutch",
        "pt" => "portuguese",
        "ru" => "russian",
        "ja" => "japanese",
        "zh" => "chinese",
        other => other,
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_for_subtitles() {
        assert_eq!(timestamp(42.0, ','), "00:00:42,000");
        assert_eq!(timestamp(3723.5, '.'), "01:02:03.500");
    }
}
