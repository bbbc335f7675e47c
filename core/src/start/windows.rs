//! Asking the model servers Pincer runs against how large their context windows are,
//! once at start-up and in the background: for each model of the router's chains whose
//! provider has its own `base_url` (a local or self-hosted server) and whose window the
//! config does not set, `provider::window_from_server`; what a server says replaces a
//! larger assumed window (`agent::window::Seen`). A server that does not say leaves the
//! assumption; nothing waits on this.

use std::sync::Arc;

use pincer_config::{Config, ProviderKind, Secrets};

use crate::agent::Agent;

/// One model to ask about.
struct Ask {
    label: String,
    base_url: String,
    key: Option<secrecy::SecretString>,
    model: String,
}

/// The models worth asking about: on a server of the owner's own, window not configured.
fn asks(config: &Config, secrets: &Secrets, env: &[(String, String)]) -> Vec<Ask> {
    let mut labels: Vec<&String> = config
        .router
        .light
        .iter()
        .chain(&config.router.heavy)
        .collect();
    labels.dedup();
    labels
        .into_iter()
        .filter(|label| {
            config
                .models
                .get(*label)
                .is_none_or(|caps| caps.context_tokens.is_none())
        })
        .filter_map(|label| {
            let (provider, model) = label.split_once('/')?;
            let settings = config.providers.get(provider)?;
            let base_url = settings.base_url.clone()?;
            (settings.kind == ProviderKind::Openai).then(|| Ask {
                label: label.clone(),
                base_url,
                key: secrets
                    .provider_keys(provider, settings.kind, env)
                    .into_iter()
                    .next(),
                model: model.to_string(),
            })
        })
        .collect()
}

/// Ask, in the background, and teach `agent` what the servers say.
pub(super) fn learn(
    agent: &Arc<Agent>,
    config: &Config,
    secrets: &Secrets,
    env: &[(String, String)],
) {
    let asks = asks(config, secrets, env);
    if asks.is_empty() {
        return;
    }
    let Ok(http) = crate::provider::http_client() else {
        return;
    };
    let agent = Arc::clone(agent);
    tokio::spawn(async move {
        for ask in asks {
            let told = crate::provider::window_from_server(
                &http,
                &ask.base_url,
                ask.key.as_ref(),
                &ask.model,
            )
            .await;
            if let Some(window) = told {
                tracing::info!(
                    label = %ask.label,
                    tokens = window.tokens,
                    source = window.source,
                    "the server named the model's context window"
                );
                agent.learn_window(&ask.label, window.tokens);
            }
        }
    });
}
