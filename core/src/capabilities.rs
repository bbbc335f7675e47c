//! What a model can do: a built-in table of the models Pincer knows (whether it sees
//! images, its context window), overridden and extended by `[models."<provider>/<model>"]`
//! in config.toml. The one place the agent asks; a model nobody described sees no images
//! and has `DEFAULT_CONTEXT_TOKENS`.
//!
//! Model names match like the price table's: provider prefixes and dated suffixes are
//! ignored ("anthropic/claude-sonnet-4-5-20250929" is "claude-sonnet-4-5").
//!
//! Whether tool calls written as text are read (`text_tool_calls`) defaults by provider:
//! `off` for Anthropic's API and OpenAI's own (their models make structured calls, and a
//! call shown as an example must not run), `auto` for any other endpoint (a local server,
//! or one nobody described).

use std::collections::BTreeMap;

use pincer_config::{ModelCaps, ProviderConfig, ProviderKind, TextToolCalls};

/// The context window assumed for a model the table does not know.
pub const DEFAULT_CONTEXT_TOKENS: u64 = 128_000;

/// (model name prefix, sees images, context window in tokens).
const BUILTIN: &[(&str, bool, u64)] = &[
    ("gpt-4.1", true, 1_047_576),
    ("gpt-4.1-mini", true, 1_047_576),
    ("gpt-4.1-nano", true, 1_047_576),
    ("gpt-4o", true, 128_000),
    ("gpt-4o-mini", true, 128_000),
    ("gpt-5", true, 400_000),
    ("gpt-5-mini", true, 400_000),
    ("gpt-5-nano", true, 400_000),
    ("o3", true, 200_000),
    ("o4-mini", true, 200_000),
    ("gpt-3.5-turbo", false, 16_385),
    ("claude-opus-4", true, 200_000),
    ("claude-opus-4-1", true, 200_000),
    ("claude-sonnet-4", true, 200_000),
    ("claude-sonnet-4-5", true, 200_000),
    ("claude-haiku-4-5", true, 200_000),
    ("claude-3-5-haiku", true, 200_000),
    ("claude-3-7-sonnet", true, 200_000),
    ("deepseek-chat", false, 128_000),
    ("deepseek-reasoner", false, 128_000),
];

/// The capabilities of one model, as the agent uses them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub vision: bool,
    pub context_tokens: u64,
    /// Anthropic extended thinking tokens (0 = off); never on unless configured.
    pub thinking_budget: u32,
    /// When tool calls written in the reply's text are run (`agent::text_calls`).
    pub text_tool_calls: TextToolCalls,
}

#[derive(Debug, Clone, Default)]
pub struct Capabilities {
    overrides: BTreeMap<String, ModelCaps>,
    /// Each configured provider's default for `text_tool_calls`, by its name.
    text_calls_by_provider: BTreeMap<String, TextToolCalls>,
}

impl Capabilities {
    pub fn new(overrides: BTreeMap<String, ModelCaps>) -> Self {
        Self {
            overrides,
            text_calls_by_provider: BTreeMap::new(),
        }
    }

    /// The same table, knowing the configured providers (for the defaults that depend
    /// on where a model is served).
    pub fn with_providers(mut self, providers: &BTreeMap<String, ProviderConfig>) -> Self {
        self.text_calls_by_provider = providers
            .iter()
            .map(|(name, provider)| (name.clone(), text_calls_default(provider)))
            .collect();
        self
    }

    /// What `label` ("provider/model") can do: the config's keys first, then the
    /// built-in entry, then the defaults for an unknown model.
    pub fn of(&self, label: &str) -> Caps {
        let builtin = builtin(label);
        let configured = self.overrides.get(label).copied().unwrap_or_default();
        Caps {
            vision: configured
                .vision
                .or(builtin.map(|(_, vision, _)| vision))
                .unwrap_or(false),
            context_tokens: configured
                .context_tokens
                .or(builtin.map(|(_, _, tokens)| tokens))
                .unwrap_or(DEFAULT_CONTEXT_TOKENS),
            thinking_budget: configured.thinking_budget.unwrap_or(0),
            text_tool_calls: configured.text_tool_calls.unwrap_or_else(|| {
                let provider = label.split_once('/').map_or(label, |(name, _)| name);
                self.text_calls_by_provider
                    .get(provider)
                    .copied()
                    .unwrap_or(TextToolCalls::Auto)
            }),
        }
    }

    pub fn vision(&self, label: &str) -> bool {
        self.of(label).vision
    }

    pub fn context_tokens(&self, label: &str) -> u64 {
        self.of(label).context_tokens
    }
}

/// `text_tool_calls` for a model of `provider` that sets none: `off` on Anthropic's and
/// OpenAI's own APIs, `auto` on any other endpoint.
fn text_calls_default(provider: &ProviderConfig) -> TextToolCalls {
    let host = provider
        .base_url()
        .split_once("://")
        .map_or(provider.base_url(), |(_, rest)| rest)
        .split(['/', ':'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match provider.kind {
        ProviderKind::Anthropic => TextToolCalls::Off,
        ProviderKind::Openai if host == "api.openai.com" => TextToolCalls::Off,
        ProviderKind::Openai => TextToolCalls::Auto,
    }
}

/// The built-in entry whose name is the longest prefix of the model's name.
fn builtin(label: &str) -> Option<(&'static str, bool, u64)> {
    let model = label.split_once('/').map_or(label, |(_, model)| model);
    let model = model.rsplit('/').next().unwrap_or(model);
    BUILTIN
        .iter()
        .filter(|(name, ..)| model.starts_with(name))
        .max_by_key(|(name, ..)| name.len())
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_unknown_models_and_overrides() {
        let mut overrides = BTreeMap::new();
        overrides.insert(
            "local/llava".to_string(),
            ModelCaps {
                vision: Some(true),
                context_tokens: Some(8192),
                thinking_budget: None,
                text_tool_calls: Some(TextToolCalls::Off),
                ..ModelCaps::default()
            },
        );
        overrides.insert(
            "openai/gpt-4.1".to_string(),
            ModelCaps {
                vision: None,
                context_tokens: Some(32_000),
                thinking_budget: None,
                text_tool_calls: None,
                ..ModelCaps::default()
            },
        );
        let caps = Capabilities::new(overrides);
        assert!(caps.vision("anthropic/claude-sonnet-4-5-20250929"));
        assert_eq!(caps.context_tokens("anthropic/claude-sonnet-4-5"), 200_000);
        assert!(!caps.vision("deepseek/deepseek-chat"));
        assert!(caps.vision("openrouter/openai/gpt-4o-mini"));
        // Unknown: no vision, the default window.
        assert_eq!(
            caps.of("local/qwen3:8b"),
            Caps {
                vision: false,
                context_tokens: DEFAULT_CONTEXT_TOKENS,
                thinking_budget: 0,
                text_tool_calls: TextToolCalls::Auto,
            }
        );
        // Configured: a local model that sees, and a known one with a smaller window
        // but still its built-in vision.
        assert_eq!(
            caps.of("local/llava"),
            Caps {
                vision: true,
                context_tokens: 8192,
                thinking_budget: 0,
                text_tool_calls: TextToolCalls::Off,
            }
        );
        assert_eq!(
            caps.of("openai/gpt-4.1"),
            Caps {
                vision: true,
                context_tokens: 32_000,
                thinking_budget: 0,
                text_tool_calls: TextToolCalls::Auto,
            }
        );
        // The longest prefix wins: gpt-4.1-mini is not gpt-4.1's entry by accident.
        assert_eq!(
            builtin("openai/gpt-4.1-mini").map(|b| b.0),
            Some("gpt-4.1-mini")
        );
    }

    #[test]
    fn text_calls_are_off_on_hosted_apis_and_auto_elsewhere_unless_configured() {
        let provider = |kind, base_url: Option<&str>| {
            let mut provider = ProviderConfig::new(kind);
            provider.base_url = base_url.map(str::to_string);
            provider
        };
        let providers = BTreeMap::from([
            (
                "anthropic".to_string(),
                provider(ProviderKind::Anthropic, None),
            ),
            ("openai".to_string(), provider(ProviderKind::Openai, None)),
            (
                "openai2".to_string(),
                provider(ProviderKind::Openai, Some("https://API.openai.com/v1/")),
            ),
            (
                "local".to_string(),
                provider(ProviderKind::Openai, Some("http://127.0.0.1:8080/v1")),
            ),
            (
                "router".to_string(),
                provider(ProviderKind::Openai, Some("https://openrouter.ai/api/v1")),
            ),
        ]);
        let overrides = BTreeMap::from([(
            "openai/gpt-oss".to_string(),
            ModelCaps {
                text_tool_calls: Some(TextToolCalls::On),
                ..ModelCaps::default()
            },
        )]);
        let caps = Capabilities::new(overrides).with_providers(&providers);
        for (label, mode) in [
            ("anthropic/claude-sonnet-4-5", TextToolCalls::Off),
            ("openai/gpt-4.1", TextToolCalls::Off),
            ("openai2/gpt-4.1", TextToolCalls::Off),
            ("local/qwen2.5-coder", TextToolCalls::Auto),
            ("router/qwen/qwen3-8b", TextToolCalls::Auto),
            // A provider nobody configured: as a local one.
            ("elsewhere/m", TextToolCalls::Auto),
            // What the config says wins.
            ("openai/gpt-oss", TextToolCalls::On),
        ] {
            assert_eq!(caps.of(label).text_tool_calls, mode, "{label}");
        }
    }
}
