//! `pincer status`: whether the gateway runs, each channel's health as it last
//! reported it, the sandbox commands run in and their limits, and today's usage and cost.

use std::process::ExitCode;

use crate::home::Home;
use crate::store::{Store, now_ms};

pub(super) async fn run(home: &Home) -> anyhow::Result<ExitCode> {
    let running = home.gateway_running();
    println!(
        "Gateway: {}",
        if running { "running" } else { "not running" }
    );
    // The sandbox this config gets; a config that does not load is doctor's business.
    if let Ok((config, _)) = super::load(home) {
        let sandbox = crate::sandbox::Sandbox::detect(config.tools.exec.sandbox);
        println!("Sandbox: {}", sandbox.describe());
        if sandbox.confines() {
            println!(
                "Limits: {}; {}",
                crate::sandbox::limits::summary(&config.tools.exec.limits),
                crate::sandbox::cgroup_line()
            );
        }
    }
    if !home.db_file.exists() {
        println!("No data yet (run `pincer chat` or `pincer run`).");
        return Ok(ExitCode::SUCCESS);
    }
    let store = Store::open(&home.db_file)?;
    let health = store.health().await?;
    if health.is_empty() {
        println!("Channels and MCP servers: none has run yet");
    }
    for (channel, state, at) in health {
        let age = (now_ms() - at).max(0) / 1000;
        println!("  {channel:<10} {state}  (reported {age}s ago)");
    }
    let midnight = crate::clock::utc()
        .with_timezone(&chrono::Local)
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .and_then(|t| t.and_local_timezone(chrono::Local).earliest())
        .map(|t| t.timestamp_millis())
        .unwrap_or(0);
    let (usage, cost) = store.usage_since(midnight).await?;
    println!(
        "Today: {} tokens in, {} out, {} cached read, {} cache writes; ${cost:.4}",
        usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens
    );
    let sessions = store.sessions().await?;
    println!(
        "Sessions: {} ({} current)",
        sessions.len(),
        sessions.iter().filter(|s| s.current).count()
    );
    Ok(ExitCode::SUCCESS)
}
