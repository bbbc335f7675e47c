//! `pincer run`: the gateway. Takes the one-per-home lock, starts every enabled
//! channel, answers what the last run left unanswered, and stops cleanly on SIGINT or
//! SIGTERM: running turns get a grace period to finish, and whatever they could not
//! finish is answered after the next start.

use std::process::ExitCode;

use pincer_channels::OutboundBody;
use tokio_util::sync::CancellationToken;

use super::{ensure_home, env_vars, load};
use crate::home::Home;

pub async fn run(home: &Home) -> anyhow::Result<ExitCode> {
    let (config, secrets) = load(home)?;
    ensure_home(home)?;
    let _lock = home.lock_gateway().map_err(anyhow::Error::msg)?;
    let env = env_vars();
    pincer_config::check_channels(&config, &secrets, &home.security_file, &env)?;
    let wanted: Vec<&str> = [
        ("telegram", config.channels.telegram.enabled),
        ("discord", config.channels.discord.enabled),
        ("slack", config.channels.slack.enabled),
    ]
    .into_iter()
    .filter_map(|(name, enabled)| enabled.then_some(name))
    .collect();
    if let Some(name) = wanted.first() {
        anyhow::bail!(
            "channels.{name} is enabled, but this version of pincer has no {name} adapter yet; set channels.{name}.enabled = false in {} and use `pincer chat` meanwhile",
            home.config_file.display()
        );
    }
    tracing::warn!(
        "no chat channel is enabled, so nobody can reach the assistant through the gateway yet; enable one in {} (e.g. [channels.telegram] enabled = true, token in {}), or talk to it now with `pincer chat`",
        home.config_file.display(),
        home.security_file.display()
    );
    let shutdown = CancellationToken::new();
    let mut running = crate::start(home, &config, &secrets, &env, shutdown.clone())?;
    let channels: Vec<&str> = Vec::new();
    running.dispatcher.recover(&channels).await;
    tracing::info!(home = %home.dir.display(), "pincer gateway running; stop it with Ctrl-C or SIGTERM");
    let delivery = tokio::spawn(async move {
        while let Some(message) = running.outbound.recv().await {
            match message.body {
                OutboundBody::Delta(_) | OutboundBody::TurnEnd => {}
                other => {
                    tracing::warn!(channel = %message.target.channel, "no running channel to deliver to: {other:?}")
                }
            }
        }
    });
    wait_for_signal().await;
    tracing::info!("shutting down: letting replies in progress finish");
    shutdown.cancel();
    let _ = running.task.await;
    delivery.abort();
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(err) => {
                tracing::warn!("cannot listen for SIGTERM ({err}); stop with Ctrl-C");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
