//! `pincer run`: the gateway (`gateway::run`) behind the one-per-home lock, until
//! SIGINT or SIGTERM: running turns get a grace period to finish, and whatever they
//! could not finish is answered after the next start.

use std::process::ExitCode;

use super::{ensure_home, env_vars, load};
use crate::home::Home;

pub(super) async fn run(home: &Home) -> anyhow::Result<ExitCode> {
    let (config, secrets) = load(home)?;
    ensure_home(home)?;
    let _lock = home.lock_gateway()?;
    let stop = stop_signal()?;
    crate::gateway::run(home, &config, secrets, &env_vars(), stop).await?;
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
