//! `POST /v1/audio/speech`, OpenAI's text-to-speech endpoint as the fake serves it: a
//! JSON body with `model`, `input` and `voice` (`response_format` optional, `mp3` by
//! default), answered with real audio so a test can measure what came back: a 440 Hz
//! tone of `SPEECH_SECS_PER_CHAR` seconds per character of `input`, 24 kHz 16-bit mono,
//! as a WAV (the one format the fake makes; others get 400, as does anything else
//! wrong). Every request is recorded as a `SpeechRequest`, refused ones too.
//!
//! Checks, in order: the key (401, when one is required), JSON with `model`, `input`
//! and `voice` (400), `input` at most 4096 characters (400), `response_format` `wav`
//! (400), model `"missing-model"` (404), then a scripted failure (`fail_next_speech`).

use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::openai;
use crate::recorded::Format;
use crate::reply::{error_json, error_response};
use crate::server::MISSING_MODEL;
use crate::state::Shared;

/// How long the fake's speech is per character of input.
pub const SPEECH_SECS_PER_CHAR: f64 = 0.05;

/// The fake's audio rate, OpenAI's for `wav` and `pcm`.
const RATE: u32 = 24_000;

/// OpenAI's limit on `input`.
const MAX_INPUT: usize = 4096;

/// One request to `POST /v1/audio/speech`, as received (refused ones too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeechRequest {
    pub model: String,
    /// The text to read, exactly as sent.
    pub input: String,
    pub voice: String,
    pub response_format: Option<String>,
    /// The status the fake answered with.
    pub status: u16,
}

#[derive(Deserialize)]
struct Body {
    model: Option<String>,
    input: Option<String>,
    voice: Option<String>,
    response_format: Option<String>,
}

/// What the speech endpoint keeps: its log and the scripted failures.
pub(crate) struct Speeches {
    inner: Mutex<(Vec<SpeechRequest>, Vec<u16>)>,
    count: watch::Sender<usize>,
}

impl Default for Speeches {
    fn default() -> Self {
        Speeches {
            inner: Mutex::default(),
            count: watch::Sender::new(0),
        }
    }
}

impl Speeches {
    pub(crate) fn all(&self) -> Vec<SpeechRequest> {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .clone()
    }

    pub(crate) fn count(&self) -> watch::Receiver<usize> {
        self.count.subscribe()
    }

    pub(crate) fn fail_next(&self, status: u16) {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .1
            .push(status);
    }

    fn take_failure(&self) -> Option<u16> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        (!inner.1.is_empty()).then(|| inner.1.remove(0))
    }

    fn record(&self, request: SpeechRequest) {
        let n = {
            let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            inner.0.push(request);
            inner.0.len()
        };
        self.count.send_replace(n);
    }
}

/// The handler of `POST /v1/audio/speech`.
pub(crate) async fn speak(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed: Result<Body, _> = serde_json::from_slice(&body);
    let mut record = SpeechRequest {
        model: String::new(),
        input: String::new(),
        voice: String::new(),
        response_format: None,
        status: 0,
    };
    if let Ok(body) = &parsed {
        record.model = body.model.clone().unwrap_or_default();
        record.input = body.input.clone().unwrap_or_default();
        record.voice = body.voice.clone().unwrap_or_default();
        record.response_format.clone_from(&body.response_format);
    }
    let response = answer(&shared, &headers, parsed.ok());
    record.status = response.status().as_u16();
    shared.speeches().record(record);
    response
}

fn refuse(status: u16, message: &str) -> Response {
    let body = error_json(Format::OpenAi, status, None, Some(message));
    error_response(status, body.to_string(), None)
}

fn answer(shared: &Shared, headers: &HeaderMap, body: Option<Body>) -> Response {
    if let Some(key) = shared.required_key()
        && !openai::authorized(headers, &key)
    {
        let body = error_json(Format::OpenAi, 401, None, None);
        return error_response(401, body.to_string(), None);
    }
    let Some(body) = body else {
        return refuse(400, "We could not parse the JSON body of your request.");
    };
    let (Some(model), Some(input), Some(_voice)) = (body.model, body.input, body.voice) else {
        return refuse(
            400,
            "Missing required parameter: 'model', 'input' or 'voice'.",
        );
    };
    if input.chars().count() > MAX_INPUT {
        return refuse(400, "'input' is too long: at most 4096 characters.");
    }
    let format = body.response_format.unwrap_or_else(|| "mp3".into());
    if format != "wav" {
        return refuse(400, "The fake makes only response_format 'wav'.");
    }
    if model == MISSING_MODEL {
        let message =
            format!("The model `{MISSING_MODEL}` does not exist or you do not have access to it.");
        return refuse(404, &message);
    }
    if let Some(status) = shared.speeches().take_failure() {
        let body = error_json(Format::OpenAi, status, None, None);
        return error_response(status, body.to_string(), None);
    }
    let secs = input.chars().count() as f64 * SPEECH_SECS_PER_CHAR;
    ([(CONTENT_TYPE, "audio/wav")], tone_wav(secs)).into_response()
}

/// A WAV of `secs` of a 440 Hz tone, 24 kHz 16-bit mono, written by hand (44-byte
/// header).
pub fn tone_wav(secs: f64) -> Vec<u8> {
    let n = (secs * f64::from(RATE)).round() as u32;
    let data = n * 2;
    let mut wav = Vec::with_capacity(44 + data as usize);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&RATE.to_le_bytes());
    wav.extend_from_slice(&(RATE * 2).to_le_bytes());
    wav.extend_from_slice(&2u16.to_le_bytes());
    wav.extend_from_slice(&16u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data.to_le_bytes());
    for i in 0..n {
        let v = (f64::from(i) * 440.0 * std::f64::consts::TAU / f64::from(RATE)).sin();
        wav.extend_from_slice(&((v * 8000.0) as i16).to_le_bytes());
    }
    wav
}
