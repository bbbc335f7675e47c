//! `pincer status`: whether the gateway runs, each channel's health as it last
//! reported it and when it last heard from its platform, the sandbox commands run in and their limits, and today's usage and cost.

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
    let now = now_ms();
    for row in health {
        let reported = ago(now, row.updated_at);
        match row.last_event_at {
            Some(at) => println!(
                "  {:<10} {}  last event {} ago  (reported {reported} ago)",
                row.channel,
                row.state,
                ago(now, at)
            ),
            None => println!(
                "  {:<10} {}  (reported {reported} ago)",
                row.channel, row.state
            ),
        }
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

/// How long before `now` the Unix-ms time `at` was, as "3 s", "4 min", "2 h".
fn ago(now: i64, at: i64) -> String {
    let secs = (now - at).max(0) / 1000;
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s => format!("{} h", s / 3600),
    }
}
