//! `[providers.<name>]` and `[prices."<provider>/<model>"]`: model endpoints by wire format,
//! their timeouts, and price overrides. Keys never live here (see `crate::secrets`).

use serde::{Deserialize, Serialize};

/// One model endpoint. The name is the user's; `kind` picks the wire format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Wire format; required.
    pub kind: ProviderKind,
    /// Endpoint; `None` means the kind's public API (see [`ProviderConfig::base_url`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Whole-request timeout, seconds: the time a reply may take once the model has
    /// read the request (the time reading takes is added per call, from the model's
    /// measured speed; `[models."P/M"] call_timeout_secs` fixes the whole limit instead).
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    /// Abandon a stream that sends nothing for this long, seconds. Keep-alive comments
    /// count as something: llama.cpp sends one every 30 s while it reads a long prompt.
    #[serde(default = "default_idle_timeout_secs")]
    pub idle_timeout_secs: u64,
}

fn default_timeout_secs() -> u64 {
    120
}

fn default_idle_timeout_secs() -> u64 {
    // Well above llama.cpp's 30 s keep-alive, so one late ping does not end the call.
    90
}

impl ProviderConfig {
    /// A provider of `kind` with every other setting at its default.
    pub fn new(kind: ProviderKind) -> Self {
        Self {
            kind,
            base_url: None,
            timeout_secs: default_timeout_secs(),
            idle_timeout_secs: default_idle_timeout_secs(),
        }
    }

    /// The configured `base_url`, else the kind's default, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        let url = self
            .base_url
            .as_deref()
            .unwrap_or_else(|| self.kind.default_base_url());
        url.trim_end_matches('/')
    }
}

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (OpenAI, OpenRouter, Groq, Ollama, vLLM, ...).
    Openai,
    /// Anthropic Messages API.
    Anthropic,
}

impl ProviderKind {
    /// Base URL used when `base_url` is not set.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Openai => "https://api.openai.com/v1",
            Self::Anthropic => "https://api.anthropic.com",
        }
    }

    /// Environment variable holding a key when `.security.yml` has none.
    pub fn env_var(self) -> &'static str {
        match self {
            Self::Openai => "OPENAI_API_KEY",
            Self::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// The name used in `config.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    /// Parses the `config.toml` name.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "openai" => Some(Self::Openai),
            "anthropic" => Some(Self::Anthropic),
            _ => None,
        }
    }
}

/// USD per million tokens for one model; overrides the built-in table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Uncached input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens read from the provider's prompt cache; `None` means the input price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Input tokens written to the provider's prompt cache; `None` means the input price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_defaults_per_kind_and_drops_trailing_slash() {
        assert_eq!(
            ProviderConfig::new(ProviderKind::Openai).base_url(),
            "https://api.openai.com/v1"
        );
        assert_eq!(
            ProviderConfig::new(ProviderKind::Anthropic).base_url(),
            "https://api.anthropic.com"
        );
        let mut local = ProviderConfig::new(ProviderKind::Openai);
        local.base_url = Some("http://127.0.0.1:11434/v1/".into());
        assert_eq!(local.base_url(), "http://127.0.0.1:11434/v1");
    }
}
