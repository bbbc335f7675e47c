//! What model calls cost: a built-in table of USD per million tokens, overridden by
//! `[prices."<provider>/<model>"]` in config.toml. Every call is priced from the first
//! one, so the turn and day budgets work from the start.

use std::collections::BTreeMap;

use pincer_config::Price;

use crate::provider::Usage;

/// (model name, input, output, cache read, cache write), USD per million tokens.
const BUILTIN: &[(&str, f64, f64, f64, f64)] = &[
    ("gpt-4.1", 2.00, 8.00, 0.50, 2.00),
    ("gpt-4.1-mini", 0.40, 1.60, 0.10, 0.40),
    ("gpt-4.1-nano", 0.10, 0.40, 0.025, 0.10),
    ("gpt-4o", 2.50, 10.00, 1.25, 2.50),
    ("gpt-4o-mini", 0.15, 0.60, 0.075, 0.15),
    ("gpt-5", 1.25, 10.00, 0.125, 1.25),
    ("gpt-5-mini", 0.25, 2.00, 0.025, 0.25),
    ("o4-mini", 1.10, 4.40, 0.275, 1.10),
    ("claude-opus-4-1", 15.00, 75.00, 1.50, 18.75),
    ("claude-sonnet-4-5", 3.00, 15.00, 0.30, 3.75),
    ("claude-sonnet-4", 3.00, 15.00, 0.30, 3.75),
    ("claude-haiku-4-5", 1.00, 5.00, 0.10, 1.25),
    ("claude-3-5-haiku", 0.80, 4.00, 0.08, 1.00),
    ("deepseek-chat", 0.27, 1.10, 0.07, 0.27),
];

#[derive(Debug, Clone, Default)]
pub struct Prices {
    overrides: BTreeMap<String, Price>,
}

impl Prices {
    pub fn new(overrides: BTreeMap<String, Price>) -> Self {
        Self { overrides }
    }

    /// The cost of one call to `label` ("provider/model"). Unknown models cost 0.
    pub fn cost(&self, label: &str, usage: Usage) -> f64 {
        let per_million = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        if let Some(price) = self.overrides.get(label) {
            return per_million(usage.input_tokens, price.input)
                + per_million(usage.output_tokens, price.output)
                + per_million(
                    usage.cache_read_tokens,
                    price.cache_read.unwrap_or(price.input),
                )
                + per_million(
                    usage.cache_write_tokens,
                    price.cache_write.unwrap_or(price.input),
                );
        }
        let model = label.split_once('/').map_or(label, |(_, model)| model);
        // Provider model names carry dates and vendor prefixes ("anthropic/claude-sonnet-4-5-20250929").
        let model = model.rsplit('/').next().unwrap_or(model);
        let found = BUILTIN
            .iter()
            .filter(|(name, ..)| model.starts_with(name))
            .max_by_key(|(name, ..)| name.len());
        match found {
            Some(&(_, input, output, read, write)) => {
                per_million(usage.input_tokens, input)
                    + per_million(usage.output_tokens, output)
                    + per_million(usage.cache_read_tokens, read)
                    + per_million(usage.cache_write_tokens, write)
            }
            None => 0.0,
        }
    }

    /// Whether a model has a price at all (doctor warns about unpriced models).
    pub fn knows(&self, label: &str) -> bool {
        self.overrides.contains_key(label)
            || self.cost(
                label,
                Usage {
                    input_tokens: 1_000_000,
                    ..Usage::default()
                },
            ) > 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_prices_match_the_longest_name_and_overrides_win() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            ..Usage::default()
        };
        let prices = Prices::default();
        assert!((prices.cost("openai/gpt-4.1-mini", usage) - 2.0).abs() < 1e-9);
        assert!((prices.cost("openai/gpt-4.1", usage) - 10.0).abs() < 1e-9);
        assert!((prices.cost("anthropic/claude-sonnet-4-5-20250929", usage) - 18.0).abs() < 1e-9);
        assert_eq!(prices.cost("local/llama3", usage), 0.0);
        let mut overrides = BTreeMap::new();
        overrides.insert(
            "local/llama3".to_string(),
            Price {
                input: 1.0,
                output: 2.0,
                cache_read: None,
                cache_write: None,
            },
        );
        assert!((Prices::new(overrides).cost("local/llama3", usage) - 3.0).abs() < 1e-9);
    }
}
