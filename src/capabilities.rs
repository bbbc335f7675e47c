//! What a model can do: a built-in table of the models Pincer knows (whether it sees
//! images, its context window), overridden and extended by `[models."<provider>/<model>"]`
//! in config.toml. The one place the agent asks; a model nobody described sees no images
//! and has `DEFAULT_CONTEXT_TOKENS`.
//!
//! Model names match like the price table's: provider prefixes and dated suffixes are
//! ignored ("anthropic/claude-sonnet-4-5-20250929" is "claude-sonnet-4-5").

use std::collections::BTreeMap;

use pincer_config::{ModelCaps, TextToolCalls};

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
}

impl Capabilities {
    pub fn new(overrides: BTreeMap<String, ModelCaps>) -> Self {
        Self { overrides }
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
            text_tool_calls: configured.text_tool_calls.unwrap_or_default(),
        }
    }

    pub fn vision(&self, label: &str) -> bool {
        self.of(label).vision
    }

    pub fn context_tokens(&self, label: &str) -> u64 {
        self.of(label).context_tokens
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
}
