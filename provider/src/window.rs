//! Asking an OpenAI-compatible server how big a model's context window is, the way
//! each common server says it:
//!
//! 1. `GET {base}/models`, the model's entry: `context_length` (OpenRouter, LM Studio),
//!    `max_model_len` (vLLM), `meta.n_ctx` (llama.cpp, the window it runs with);
//! 2. `GET {root}/props` (llama.cpp): `default_generation_settings.n_ctx`;
//! 3. `GET {root}/api/ps` (Ollama, a loaded model): `context_length`;
//! 4. `POST {root}/api/show` (Ollama): `num_ctx` in `parameters`.
//!
//! The first of these that answers wins. Failing all, a model's *trained* length
//! (llama.cpp `meta.n_ctx_train`, Ollama `model_info` `<arch>.context_length`) is the
//! answer: an upper bound, since the server may run it with less. `{root}` is the base
//! URL without its `/v1`. Every request is short (5 s) and a failure just moves on:
//! servers that know none of these routes give `None`. Nothing is cached here; the
//! caller decides when to ask. Each answer is read into its own type, every field
//! leniently (`lenient`): a field of another shape is one the server did not say.

use std::time::Duration;

use std::collections::BTreeMap;

use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lenient::lenient;

/// How long each question to the server may take.
const ASK_TIMEOUT: Duration = Duration::from_secs(5);

/// A context window a server reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerWindow {
    pub tokens: u64,
    /// Where it came from, for logs and `doctor`: e.g. "llama.cpp /props n_ctx".
    pub source: &'static str,
    /// The model's trained length rather than the window the server runs it with.
    pub trained: bool,
}

/// The context window the server at `base_url` (OpenAI-compatible, ending in `/v1`)
/// runs `model` with, or `None` when it does not say.
pub async fn window_from_server(
    http: &reqwest::Client,
    base_url: &str,
    api_key: Option<&SecretString>,
    model: &str,
) -> Option<ServerWindow> {
    let base = base_url.trim_end_matches('/');
    let root = base.strip_suffix("/v1").unwrap_or(base);
    let ask = Ask { http, api_key };
    let models: Option<ModelList> = ask.get(&format!("{base}/models")).await;
    let entry = models.as_ref().and_then(|m| m.entry(model));
    if let Some(found) = entry.and_then(ModelEntry::served) {
        return Some(found);
    }
    if let Some(props) = ask.get::<Props>(&format!("{root}/props")).await
        && let Some(found) = props.served()
    {
        return Some(found);
    }
    if let Some(running) = ask.get::<OllamaRunning>(&format!("{root}/api/ps")).await
        && let Some(found) = running.served(model)
    {
        return Some(found);
    }
    let show: Option<OllamaShow> = ask
        .post(&format!("{root}/api/show"), &OllamaShowRequest { model })
        .await;
    if let Some(found) = show.as_ref().and_then(OllamaShow::num_ctx) {
        return Some(found);
    }
    entry
        .and_then(ModelEntry::trained)
        .or_else(|| show.as_ref().and_then(OllamaShow::trained))
}

/// The HTTP side: JSON answers of 2xx that read as `T`, anything else `None`.
struct Ask<'a> {
    http: &'a reqwest::Client,
    api_key: Option<&'a SecretString>,
}

impl Ask<'_> {
    async fn get<T: DeserializeOwned>(&self, url: &str) -> Option<T> {
        self.send(self.http.get(url)).await
    }

    async fn post<T: DeserializeOwned>(&self, url: &str, body: &impl Serialize) -> Option<T> {
        self.send(self.http.post(url).json(body)).await
    }

    async fn send<T: DeserializeOwned>(&self, mut request: reqwest::RequestBuilder) -> Option<T> {
        if let Some(key) = self.api_key {
            request = request.bearer_auth(key.expose_secret());
        }
        let response = request.timeout(ASK_TIMEOUT).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        response.json().await.ok()
    }
}

/// A window of `tokens`, when it is one (servers say 0 for "unknown").
fn tokens(value: Option<u64>) -> Option<u64> {
    value.filter(|n| *n > 0)
}

fn served(tokens: u64, source: &'static str) -> ServerWindow {
    ServerWindow {
        tokens,
        source,
        trained: false,
    }
}

/// `GET {base}/models`.
#[derive(Debug, Deserialize)]
struct ModelList {
    #[serde(default, deserialize_with = "lenient")]
    data: Vec<ModelEntry>,
}

/// One model of the list, with what each server says of its window.
#[derive(Debug, Default, Deserialize)]
struct ModelEntry {
    #[serde(default, deserialize_with = "lenient")]
    id: Option<String>,
    /// llama.cpp: the other names the model answers to.
    #[serde(default, deserialize_with = "lenient")]
    aliases: Vec<String>,
    /// OpenRouter, LM Studio.
    #[serde(default, deserialize_with = "lenient")]
    context_length: Option<u64>,
    /// vLLM.
    #[serde(default, deserialize_with = "lenient")]
    max_model_len: Option<u64>,
    /// llama.cpp.
    #[serde(default, deserialize_with = "lenient")]
    meta: Option<LlamaCppMeta>,
    /// LM Studio, for a loaded model.
    #[serde(default, deserialize_with = "lenient")]
    loaded_context_length: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct LlamaCppMeta {
    /// The window it runs with.
    #[serde(default, deserialize_with = "lenient")]
    n_ctx: Option<u64>,
    /// The model's trained length.
    #[serde(default, deserialize_with = "lenient")]
    n_ctx_train: Option<u64>,
}

impl ModelList {
    /// The entry of `model`: the one whose `id` (or an alias) is its name, else the only
    /// entry (llama.cpp serves one model under its file path, whatever it is called in
    /// the request).
    fn entry(&self, model: &str) -> Option<&ModelEntry> {
        let named = |entry: &&ModelEntry| {
            entry.id.as_deref() == Some(model) || entry.aliases.iter().any(|a| a == model)
        };
        self.data.iter().find(named).or(match self.data.as_slice() {
            [only] => Some(only),
            _ => None,
        })
    }
}

impl ModelEntry {
    fn served(&self) -> Option<ServerWindow> {
        let meta = self.meta.as_ref();
        [
            (self.context_length, "/v1/models context_length"),
            (self.max_model_len, "/v1/models max_model_len"),
            (meta.and_then(|m| m.n_ctx), "/v1/models meta.n_ctx"),
            (
                self.loaded_context_length,
                "/v1/models loaded_context_length",
            ),
        ]
        .into_iter()
        .find_map(|(value, source)| Some(served(tokens(value)?, source)))
    }

    fn trained(&self) -> Option<ServerWindow> {
        Some(ServerWindow {
            tokens: tokens(self.meta.as_ref()?.n_ctx_train)?,
            source: "/v1/models meta.n_ctx_train (the trained length)",
            trained: true,
        })
    }
}

/// llama.cpp's `GET {root}/props`.
#[derive(Debug, Deserialize)]
struct Props {
    #[serde(default, deserialize_with = "lenient")]
    default_generation_settings: Option<GenerationSettings>,
    /// Where some builds put it instead.
    #[serde(default, deserialize_with = "lenient")]
    n_ctx: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct GenerationSettings {
    #[serde(default, deserialize_with = "lenient")]
    n_ctx: Option<u64>,
}

impl Props {
    fn served(&self) -> Option<ServerWindow> {
        let n_ctx = match &self.default_generation_settings {
            Some(GenerationSettings { n_ctx: Some(n) }) => Some(*n),
            _ => self.n_ctx,
        };
        Some(served(tokens(n_ctx)?, "llama.cpp /props n_ctx"))
    }
}

/// Ollama's `GET {root}/api/ps`: the models loaded now.
#[derive(Debug, Deserialize)]
struct OllamaRunning {
    #[serde(default, deserialize_with = "lenient")]
    models: Vec<OllamaLoaded>,
}

#[derive(Debug, Default, Deserialize)]
struct OllamaLoaded {
    #[serde(default, deserialize_with = "lenient")]
    name: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    model: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    context_length: Option<u64>,
}

impl OllamaRunning {
    fn served(&self, model: &str) -> Option<ServerWindow> {
        let loaded = self.models.iter().find(|m| {
            [&m.name, &m.model]
                .into_iter()
                .any(|name| name.as_deref() == Some(model))
        })?;
        Some(served(
            tokens(loaded.context_length)?,
            "Ollama /api/ps context_length",
        ))
    }
}

/// The body of Ollama's `POST {root}/api/show`.
#[derive(Debug, Serialize)]
struct OllamaShowRequest<'a> {
    model: &'a str,
}

/// Ollama's answer to `/api/show`.
#[derive(Debug, Deserialize)]
struct OllamaShow {
    /// The model's parameters, one "name value" per line.
    #[serde(default, deserialize_with = "lenient")]
    parameters: Option<String>,
    /// Facts about the model, keyed by `<architecture>.<fact>`: free-form.
    #[serde(default, deserialize_with = "lenient")]
    model_info: BTreeMap<String, Value>,
}

impl OllamaShow {
    /// `num_ctx` in `parameters`.
    fn num_ctx(&self) -> Option<ServerWindow> {
        let value = self.parameters.as_deref()?.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx"))
                .then(|| words.next())
                .flatten()
        })?;
        let n = value.parse().ok().filter(|n: &u64| *n > 0)?;
        Some(served(n, "Ollama /api/show num_ctx"))
    }

    /// `model_info`'s `<architecture>.context_length`.
    fn trained(&self) -> Option<ServerWindow> {
        let n = self
            .model_info
            .iter()
            .find(|(key, _)| key.ends_with(".context_length"))
            .and_then(|(_, v)| tokens(v.as_u64()))?;
        Some(ServerWindow {
            tokens: n,
            source: "Ollama /api/show model_info context_length (the trained length)",
            trained: true,
        })
    }
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
