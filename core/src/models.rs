//! The model chains a turn can use, built from `[router]`, `[providers.*]` and the
//! keys in `.security.yml` or the environment: the light and heavy chains, and
//! one-model chains for a session that pinned a model. One HTTP client and one
//! provider per `[providers.NAME]` are shared by every chain that names it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pincer_config::{Config, Secrets};

use crate::capabilities::Capabilities;
use crate::provider::{
    self, CallObserver, Chain, ChainEntry, Cooldowns, Provider, ProviderSettings,
};
use crate::router::Tier;

#[derive(Debug, thiserror::Error)]
pub enum ModelsError {
    #[error("`{label}`: write a model as \"<provider>/<model>\", e.g. \"openai/gpt-4.1-mini\"")]
    BadLabel { label: String },
    #[error(
        "`{label}` names no configured provider; add [providers.{provider}] to config.toml with `kind` = \"openai\" or \"anthropic\" (configured: {known})"
    )]
    UnknownProvider {
        label: String,
        provider: String,
        known: String,
    },
    #[error("{0}")]
    Http(#[from] provider::ProviderError),
}

/// What a session asked for with `/model`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pin {
    Tier(Tier),
    /// One model, never falling back to another.
    Model(String),
}

impl Pin {
    pub fn parse(text: &str) -> Pin {
        match text {
            "light" => Pin::Tier(Tier::Light),
            "heavy" => Pin::Tier(Tier::Heavy),
            model => Pin::Model(model.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Pin::Tier(tier) => tier.as_str(),
            Pin::Model(label) => label,
        }
    }
}

pub struct Models {
    light: Option<Arc<Chain>>,
    heavy: Option<Arc<Chain>>,
    pub threshold: f64,
    /// Every configured provider, for building one-model chains on demand.
    providers: BTreeMap<String, Arc<dyn Provider>>,
    /// One-model chains built for pins, by label.
    pinned: Mutex<HashMap<String, Arc<Chain>>>,
    /// Which models are cooling down after errors, shared by every chain and session.
    cooldowns: Arc<Cooldowns>,
    /// Hears of every request and fallback of every chain (the process's metrics).
    calls: Arc<dyn CallObserver>,
    /// What each model can do (`[models.*]` over the built-in table).
    pub caps: Capabilities,
}

impl Models {
    pub fn from_config(
        config: &Config,
        secrets: &Secrets,
        env: &[(String, String)],
        calls: Arc<dyn CallObserver>,
    ) -> Result<Models, ModelsError> {
        let http = provider::http_client()?;
        let providers: BTreeMap<String, Arc<dyn Provider>> = config
            .providers
            .iter()
            .map(|(name, settings)| {
                let kind = settings.kind;
                let mut wire = ProviderSettings::new(name, settings.base_url());
                wire.api_keys = secrets.provider_keys(name, settings.kind, env);
                wire.timeout = Duration::from_secs(settings.timeout_secs);
                wire.idle_timeout = Duration::from_secs(settings.idle_timeout_secs);
                wire.read_call_timeouts(&config.models);
                (name.clone(), provider::build(kind, wire, http.clone()))
            })
            .collect();
        let mut models = Models {
            light: None,
            heavy: None,
            threshold: config.router.threshold,
            providers,
            pinned: Mutex::new(HashMap::new()),
            cooldowns: Arc::new(Cooldowns::new()),
            calls,
            caps: Capabilities::new(config.models.clone()).with_providers(&config.providers),
        };
        models.light = models.chain(&config.router.light)?;
        models.heavy = models.chain(&config.router.heavy)?;
        Ok(models)
    }

    /// These providers instead of the configured ones of the same names (an embedding
    /// program's own, such as the throughput bench's in-process model), with the
    /// chains built again over them. A name the config does not have is refused: no
    /// chain could name it.
    pub fn replacing(
        mut self,
        providers: BTreeMap<String, Arc<dyn Provider>>,
    ) -> Result<Models, ModelsError> {
        if providers.is_empty() {
            return Ok(self);
        }
        for (name, provider) in providers {
            if !self.providers.contains_key(&name) {
                return Err(self.unknown(&format!("{name}/…"), &name));
            }
            self.providers.insert(name, provider);
        }
        let labels = |chain: &Option<Arc<Chain>>| -> Vec<String> {
            chain
                .iter()
                .flat_map(|c| c.entries().iter().map(|e| e.label.clone()))
                .collect()
        };
        let (light, heavy) = (labels(&self.light), labels(&self.heavy));
        self.light = self.chain(&light)?;
        self.heavy = self.chain(&heavy)?;
        Ok(self)
    }

    /// Chains assembled by hand (tests).
    pub fn new(light: Option<Chain>, heavy: Option<Chain>, threshold: f64) -> Self {
        Self {
            light: light.map(Arc::new),
            heavy: heavy.map(Arc::new),
            threshold,
            providers: BTreeMap::new(),
            pinned: Mutex::new(HashMap::new()),
            cooldowns: Arc::new(Cooldowns::new()),
            calls: Arc::new(provider::Unobserved),
            caps: Capabilities::default(),
        }
    }

    /// Chains assembled by hand with a capability table (tests).
    pub fn with_caps(mut self, caps: Capabilities) -> Self {
        self.caps = caps;
        self
    }

    fn entry(&self, label: &str) -> Result<ChainEntry, ModelsError> {
        let Some((name, model)) = label
            .split_once('/')
            .filter(|(p, m)| !p.is_empty() && !m.is_empty())
        else {
            return Err(ModelsError::BadLabel {
                label: label.to_string(),
            });
        };
        let Some(provider) = self.providers.get(name) else {
            return Err(self.unknown(label, name));
        };
        Ok(ChainEntry {
            provider: Arc::clone(provider),
            label: label.to_string(),
            model: model.to_string(),
            thinking_budget: self.caps.of(label).thinking_budget,
        })
    }

    /// `label` names `provider`, which no `[providers.*]` has.
    fn unknown(&self, label: &str, provider: &str) -> ModelsError {
        ModelsError::UnknownProvider {
            label: label.to_string(),
            provider: provider.to_string(),
            known: self
                .providers
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    fn chain(&self, labels: &[String]) -> Result<Option<Arc<Chain>>, ModelsError> {
        let entries = labels
            .iter()
            .map(|label| self.entry(label))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((!entries.is_empty()).then(|| self.shared(entries)))
    }

    /// A chain of `entries` that shares the process's resting models and observer.
    fn shared(&self, entries: Vec<ChainEntry>) -> Arc<Chain> {
        Arc::new(
            Chain::new(entries)
                .with_cooldowns(Arc::clone(&self.cooldowns))
                .with_observer(Arc::clone(&self.calls)),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.light.is_none() && self.heavy.is_none()
    }

    /// The chain of a tier; a missing light chain means heavy answers everything and
    /// the other way round.
    pub fn tier(&self, tier: Tier) -> Option<(Tier, Arc<Chain>)> {
        let (first, second) = match tier {
            Tier::Light => ((Tier::Light, &self.light), (Tier::Heavy, &self.heavy)),
            Tier::Heavy => ((Tier::Heavy, &self.heavy), (Tier::Light, &self.light)),
        };
        [first, second]
            .into_iter()
            .find_map(|(tier, chain)| chain.as_ref().map(|c| (tier, Arc::clone(c))))
    }

    /// For a turn with pictures: the models of a chain that can see them, in the
    /// chain's order, the light chain first if any of its models can (pictures are
    /// cheap to look at), else the heavy chain's. `None` when no configured model sees.
    pub fn seeing(&self) -> Option<(Tier, Arc<Chain>)> {
        [(Tier::Light, &self.light), (Tier::Heavy, &self.heavy)]
            .into_iter()
            .find_map(|(tier, chain)| Some((tier, self.seeing_part(chain.as_ref()?)?)))
    }

    /// The models of `chain` that see, as a chain of their own (the whole chain when
    /// all of them do); `None` when none does.
    pub fn seeing_part(&self, chain: &Arc<Chain>) -> Option<Arc<Chain>> {
        let entries: Vec<ChainEntry> = chain
            .entries()
            .iter()
            .filter(|e| self.caps.vision(&e.label))
            .cloned()
            .collect();
        if entries.len() == chain.entries().len() {
            return Some(Arc::clone(chain));
        }
        (!entries.is_empty()).then(|| self.shared(entries))
    }

    /// Whether a distinct heavy chain exists to escalate to.
    pub fn can_escalate(&self) -> bool {
        self.light.is_some() && self.heavy.is_some()
    }

    /// A one-model chain for a pinned model (checked against the configured providers).
    pub fn pinned(&self, label: &str) -> Result<Arc<Chain>, ModelsError> {
        if let Some(chain) = self.pinned.lock().ok().and_then(|p| p.get(label).cloned()) {
            return Ok(chain);
        }
        let chain = self.shared(vec![self.entry(label)?]);
        if let Ok(mut pinned) = self.pinned.lock() {
            pinned.insert(label.to_string(), Arc::clone(&chain));
        }
        Ok(chain)
    }

    /// "light: a, b · heavy: c" for /status and /model.
    pub fn describe(&self) -> String {
        let labels = |chain: &Option<Arc<Chain>>| match chain {
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
