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
//! caller decides when to ask.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

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
    let models = ask.get(&format!("{base}/models")).await;
    let entry = models.as_ref().and_then(|m| model_entry(m, model));
    if let Some(found) = entry.and_then(served_in_entry) {
        return Some(found);
    }
    if let Some(props) = ask.get(&format!("{root}/props")).await
        && let Some(found) = from_props(&props)
    {
        return Some(found);
    }
    if let Some(running) = ask.get(&format!("{root}/api/ps")).await
        && let Some(found) = from_ollama_ps(&running, model)
    {
        return Some(found);
    }
    let show = ask
        .post(&format!("{root}/api/show"), &json!({"model": model}))
        .await;
    if let Some(found) = show.as_ref().and_then(ollama_num_ctx) {
        return Some(found);
    }
    entry
        .and_then(trained_in_entry)
        .or_else(|| show.as_ref().and_then(ollama_trained))
}

/// The HTTP side: JSON answers of 2xx, anything else `None`.
struct Ask<'a> {
    http: &'a reqwest::Client,
    api_key: Option<&'a SecretString>,
}

impl Ask<'_> {
    async fn get(&self, url: &str) -> Option<Value> {
        self.send(self.http.get(url)).await
    }

    async fn post(&self, url: &str, body: &Value) -> Option<Value> {
        self.send(self.http.post(url).json(body)).await
    }

    async fn send(&self, mut request: reqwest::RequestBuilder) -> Option<Value> {
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

/// The `/models` entry of `model`: the one whose `id` (or an alias) is its name, else
/// the only entry (llama.cpp serves one model under its file path, whatever it is
/// called in the request).
fn model_entry<'v>(models: &'v Value, model: &str) -> Option<&'v Value> {
    let data = models.get("data")?.as_array()?;
    let named = |entry: &&Value| {
        entry.get("id").and_then(Value::as_str) == Some(model)
            || entry
                .get("aliases")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|alias| alias.as_str() == Some(model)))
    };
    data.iter().find(named).or(match data.as_slice() {
        [only] => Some(only),
        _ => None,
    })
}

fn tokens(value: Option<&Value>) -> Option<u64> {
    value.and_then(Value::as_u64).filter(|n| *n > 0)
}

fn served(tokens: u64, source: &'static str) -> ServerWindow {
    ServerWindow {
        tokens,
        source,
        trained: false,
    }
}

fn served_in_entry(entry: &Value) -> Option<ServerWindow> {
    [
        ("/context_length", "/v1/models context_length"),
        ("/max_model_len", "/v1/models max_model_len"),
        ("/meta/n_ctx", "/v1/models meta.n_ctx"),
        ("/loaded_context_length", "/v1/models loaded_context_length"),
    ]
    .into_iter()
    .find_map(|(pointer, source)| Some(served(tokens(entry.pointer(pointer))?, source)))
}

fn trained_in_entry(entry: &Value) -> Option<ServerWindow> {
    Some(ServerWindow {
        tokens: tokens(entry.pointer("/meta/n_ctx_train"))?,
        source: "/v1/models meta.n_ctx_train (the trained length)",
        trained: true,
    })
}

fn from_props(props: &Value) -> Option<ServerWindow> {
    let n_ctx = props
        .pointer("/default_generation_settings/n_ctx")
        .or_else(|| props.get("n_ctx"));
    Some(served(tokens(n_ctx)?, "llama.cpp /props n_ctx"))
}

fn from_ollama_ps(running: &Value, model: &str) -> Option<ServerWindow> {
    let entry = running.get("models")?.as_array()?.iter().find(|m| {
        [m.get("name"), m.get("model")]
            .into_iter()
            .any(|name| name.and_then(Value::as_str) == Some(model))
    })?;
    Some(served(
        tokens(entry.get("context_length"))?,
        "Ollama /api/ps context_length",
    ))
}

/// `num_ctx` in `/api/show`'s `parameters`, one "name value" per line.
fn ollama_num_ctx(show: &Value) -> Option<ServerWindow> {
    let parameters = show.get("parameters")?.as_str()?;
    let value = parameters.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx"))
            .then(|| words.next())
            .flatten()
    })?;
    let n = value.parse().ok().filter(|n: &u64| *n > 0)?;
    Some(served(n, "Ollama /api/show num_ctx"))
}

/// `model_info`'s `<architecture>.context_length`.
fn ollama_trained(show: &Value) -> Option<ServerWindow> {
    let info = show.get("model_info")?.as_object()?;
    let n = info
        .iter()
        .find(|(key, _)| key.ends_with(".context_length"))
        .and_then(|(_, v)| tokens(Some(v)))?;
    Some(ServerWindow {
        tokens: n,
        source: "Ollama /api/show model_info context_length (the trained length)",
        trained: true,
    })
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
