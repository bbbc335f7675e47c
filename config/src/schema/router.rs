//! `[router]`: the cheap-first threshold and the light and heavy model chains, plus the
//! `"<provider>/<model>"` reference format their entries use.
//!
//! An empty `light` chain with a non-empty `heavy` chain means "use heavy for everything";
//! both empty loads fine and the CLI says "no model configured; run pincer onboard".
//! Loading never rewrites either list.

use serde::{Deserialize, Serialize};

/// `[router]` settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RouterConfig {
    /// Turns scoring below this (0..=1) use `light`, the rest `heavy`.
    pub threshold: f64,
    /// Cheap models, tried in order: `"<provider>/<model>"`.
    pub light: Vec<String>,
    /// Strong models, tried in order: `"<provider>/<model>"`.
    pub heavy: Vec<String>,
}

impl Default for RouterConfig {
    fn default() -> Self {
        Self {
            threshold: 0.35,
            light: Vec::new(),
            heavy: Vec::new(),
        }
    }
}

impl RouterConfig {
    /// The light chain as the router uses it: `heavy` when `light` is empty.
    pub fn effective_light(&self) -> &[String] {
        if self.light.is_empty() {
            &self.heavy
        } else {
            &self.light
        }
    }
}

/// A parsed chain entry: the provider's configured name and the model id sent to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelRef<'a> {
    /// Key under `[providers]`.
    pub provider: &'a str,
    /// Model id as the provider knows it (may itself contain `/`, e.g. OpenRouter ids).
    pub model: &'a str,
}

impl<'a> ModelRef<'a> {
    /// Splits at the first `/`; `None` unless both halves are non-empty.
    pub fn parse(entry: &'a str) -> Option<Self> {
        let (provider, model) = entry.split_once('/')?;
        if provider.is_empty() || model.is_empty() {
            return None;
        }
        Some(Self { provider, model })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ref_splits_at_first_slash() {
        let r = ModelRef::parse("openrouter/meta/llama-3").unwrap();
        assert_eq!((r.provider, r.model), ("openrouter", "meta/llama-3"));
        assert!(ModelRef::parse("gpt-4").is_none());
        assert!(ModelRef::parse("/gpt-4").is_none());
        assert!(ModelRef::parse("openai/").is_none());
    }

    #[test]
    fn light_falls_back_to_heavy() {
        let router = RouterConfig {
            heavy: vec!["a/b".into()],
            ..RouterConfig::default()
        };
        assert_eq!(router.effective_light(), ["a/b".to_owned()]);
    }
}
