//! Voice notes and audio files to text, through an OpenAI-compatible
//! `POST {base_url}/audio/transcriptions` (OpenAI, Groq, a local whisper.cpp or
//! faster-whisper server), as `[transcription]` names it. The transcript goes into the
//! message as `[voice 0:42] …`. A recording longer than `max_minutes` — measured from
//! its own bytes where the format allows (`length`), else bounded by its size — is not
//! sent, so a long file cannot run up the bill; a transcript the endpoint says is longer
//! is dropped.
//!
//! The key is the provider's, from `.security.yml` or the environment; no error text
//! carries it.

use std::time::Duration;

use pincer_config::{Config, Secrets};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

/// Transcriptions at once, process-wide; the rest wait their turn.
static RUNNING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// How long one transcription may take.
const TIMEOUT: Duration = Duration::from_secs(120);

pub struct Transcriber {
    http: reqwest::Client,
    /// `{base_url}/audio/transcriptions`.
    url: String,
    /// The provider's name, for errors that say which setting to fix.
    provider: String,
    key: Option<SecretString>,
    model: String,
    pub max_minutes: u32,
}

/// What the endpoint heard.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    pub text: String,
    /// The recording's length as the endpoint measured it, when it says.
    pub duration_secs: Option<f64>,
}

#[derive(Deserialize)]
struct Answer {
    text: String,
    #[serde(default)]
    duration: Option<f64>,
}

impl Transcriber {
    /// The transcriber `[transcription]` describes, or `None` while it is off.
    pub fn from_config(
        config: &Config,
        secrets: &Secrets,
        env: &[(String, String)],
        http: reqwest::Client,
    ) -> Option<Transcriber> {
        let name = config.transcription.provider.as_ref()?;
        let provider = config.providers.get(name)?;
        Some(Transcriber {
            http,
            url: format!("{}/audio/transcriptions", provider.base_url()),
            provider: name.clone(),
            key: secrets
                .provider_keys(name, provider.kind, env)
                .into_iter()
                .next(),
            model: config.transcription.model.clone(),
            max_minutes: config.transcription.max_minutes,
        })
    }

    /// Whether a recording of `secs` is too long to transcribe.
    pub fn too_long(&self, secs: f64) -> bool {
        secs > f64::from(self.max_minutes) * 60.0
    }

    /// The text of the recording in `bytes`.
    pub async fn transcribe(
        &self,
        bytes: Vec<u8>,
        file_name: &str,
        mime: Option<&str>,
    ) -> Result<Transcript, TranscribeError> {
        let _permit = RUNNING
            .acquire()
            .await
            .map_err(|_| TranscribeError::ShutDown)?;
        let mut file = reqwest::multipart::Part::bytes(bytes).file_name(file_name.to_string());
        if let Some(mime) = mime {
            file = file
                .mime_str(mime)
                .map_err(|source| TranscribeError::BadType {
                    mime: mime.to_string(),
                    source,
                })?;
        }
        let form = reqwest::multipart::Form::new()
            .part("file", file)
            .text("model", self.model.clone())
            .text("response_format", "verbose_json");
        let mut request = self.http.post(&self.url).multipart(form).timeout(TIMEOUT);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key.expose_secret());
        }
        let provider = self.provider.clone();
        let response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                TranscribeError::Timeout {
                    provider: provider.clone(),
                }
            } else {
                TranscribeError::Unreachable {
                    provider: provider.clone(),
                    why: without_url(&e),
                }
            }
        })?;
        let status = response.status();
        if !status.is_success() {
            return Err(match status.as_u16() {
                401 | 403 => TranscribeError::KeyRefused { provider },
                404 => TranscribeError::NotFound {
                    provider,
                    model: self.model.clone(),
                },
                429 => TranscribeError::RateLimited,
                code => TranscribeError::Status(code),
            });
        }
        let answer: Answer = response
            .json()
            .await
            .map_err(|_| TranscribeError::BadAnswer)?;
        Ok(Transcript {
            text: answer.text.trim().to_string(),
            duration_secs: answer.duration,
        })
    }
}

/// Why a recording was not transcribed; each names the setting to check.
#[derive(Debug, thiserror::Error)]
pub enum TranscribeError {
    #[error("transcription is shut down")]
    ShutDown,
    #[error("bad type {mime}: {source}")]
    BadType {
        mime: String,
        source: reqwest::Error,
    },
    #[error(
        "the transcription server ([providers.{provider}]) did not answer in {}s",
        TIMEOUT.as_secs()
    )]
    Timeout { provider: String },
    /// `why` is reqwest's words without the URL.
    #[error("cannot reach the transcription server ([providers.{provider}] base_url): {why}")]
    Unreachable { provider: String, why: String },
    #[error(
        "the transcription server refused the key: check providers.{provider} in .security.yml"
    )]
    KeyRefused { provider: String },
    #[error(
        "the transcription server has no /audio/transcriptions or no model \"{model}\": check [transcription] and providers.{provider}.base_url"
    )]
    NotFound { provider: String, model: String },
    #[error("the transcription server is rate limiting; try again in a minute")]
    RateLimited,
    #[error("the transcription server answered HTTP {0}")]
    Status(u16),
    #[error("the transcription server's answer was not the expected JSON")]
    BadAnswer,
}

/// A reqwest error's text without its URL (which may carry a query someone put a key in).
fn without_url(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    if let Some(url) = err.url() {
        text = text.replace(url.as_str(), "…");
    }
    text
}

/// `0:42`, `12:05`, `1:02:03`.
pub fn clock(secs: f64) -> String {
    let total = secs.max(0.0).round() as u64;
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_reads_like_a_player() {
        assert_eq!(clock(42.0), "0:42");
        assert_eq!(clock(725.4), "12:05");
        assert_eq!(clock(3723.0), "1:02:03");
    }
}
