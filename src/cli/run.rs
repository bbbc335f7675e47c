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
    let stop = stop_signal()?;
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
    stop.await;
    tracing::info!("shutting down: letting replies in progress finish");
    shutdown.cancel();
    let _ = running.task.await;
    delivery.abort();
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// Listen for SIGINT and SIGTERM now (so a signal right after start-up is caught)
/// and resolve when one arrives.
fn stop_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            // Without a handler nobody can stop us cleanly; a failed handler is fatal below.
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}
