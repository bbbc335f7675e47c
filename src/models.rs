//! The model chains a turn can use, built from `[router]`, `[providers.*]` and the
//! keys in `.security.yml` or the environment. One HTTP client and one provider per
//! `[providers.NAME]` are shared by every chain entry that names it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use pincer_config::{Config, ProviderKind as Kind, Secrets};

use crate::provider::{
    self, Chain, ChainEntry, ChatMessage, Provider, ProviderKind, ProviderSettings,
};

#[derive(Debug, thiserror::Error)]
pub enum ModelsError {
    #[error(
        "[router] names `{label}`: write it as \"<provider>/<model>\", e.g. \"openai/gpt-4.1-mini\""
    )]
    BadLabel { label: String },
    #[error(
        "[router] names `{label}`, but there is no [providers.{provider}] in config.toml; add it with `kind` = \"openai\" or \"anthropic\" (configured: {known})"
    )]
    UnknownProvider {
        label: String,
        provider: String,
        known: String,
    },
    #[error("{0}")]
    Http(#[from] provider::ProviderError),
}

/// The light (cheap) and heavy chains.
pub struct Models {
    light: Option<Chain>,
    heavy: Option<Chain>,
}

impl Models {
    pub fn from_config(
        config: &Config,
        secrets: &Secrets,
        env: &[(String, String)],
    ) -> Result<Models, ModelsError> {
        let http = provider::http_client()?;
        let mut providers: BTreeMap<String, Arc<dyn Provider>> = BTreeMap::new();
        let mut chain = |labels: &[String]| -> Result<Option<Chain>, ModelsError> {
            let mut entries = Vec::new();
            for label in labels {
                let Some((name, model)) = label
                    .split_once('/')
                    .filter(|(p, m)| !p.is_empty() && !m.is_empty())
                else {
                    return Err(ModelsError::BadLabel {
                        label: label.clone(),
                    });
                };
                let Some(settings) = config.providers.get(name) else {
                    return Err(ModelsError::UnknownProvider {
                        label: label.clone(),
                        provider: name.to_string(),
                        known: config
                            .providers
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", "),
                    });
                };
                let provider = providers.entry(name.to_string()).or_insert_with(|| {
                    let kind = match settings.kind {
                        Kind::Openai => ProviderKind::OpenAi,
                        Kind::Anthropic => ProviderKind::Anthropic,
                    };
                    let mut wire = ProviderSettings::new(name, settings.base_url());
                    wire.api_keys = secrets.provider_keys(name, settings.kind, env);
                    wire.timeout = Duration::from_secs(settings.timeout_secs);
                    wire.idle_timeout = Duration::from_secs(settings.idle_timeout_secs);
                    provider::build(kind, wire, http.clone())
                });
                entries.push(ChainEntry {
                    provider: Arc::clone(provider),
                    label: label.clone(),
                    model: model.to_string(),
                });
            }
            Ok((!entries.is_empty()).then(|| Chain::new(entries)))
        };
        let light = chain(&config.router.light)?;
        let heavy = chain(&config.router.heavy)?;
        Ok(Models { light, heavy })
    }

    /// Chains assembled by hand (tests).
    pub fn new(light: Option<Chain>, heavy: Option<Chain>) -> Self {
        Self { light, heavy }
    }

    pub fn is_empty(&self) -> bool {
        self.light.is_none() && self.heavy.is_none()
    }

    /// The chain for this turn: the light one while the cheap-first router is not in
    /// place, the heavy one when no light chain is configured.
    pub fn pick(&self, _messages: &[ChatMessage]) -> Option<&Chain> {
        self.light.as_ref().or(self.heavy.as_ref())
    }

    /// "light: a, b · heavy: c" for /status and doctor.
    pub fn describe(&self) -> String {
        let labels = |chain: &Option<Chain>| match chain {
            Some(chain) => chain
                .entries()
                .iter()
                .map(|e| e.label.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            None => "none".into(),
        };
        format!(
            "light: {} · heavy: {}",
            labels(&self.light),
            labels(&self.heavy)
        )
    }
}
