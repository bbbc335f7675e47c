//! `cargo bench --bench soak`: the release `pincer run` under steady load for
//! `SOAK_SECS` (default 600): a message every 200 ms from a rotating pool of users on
//! every fake platform (sessions opened, answered, left idle and reaped after 10 s,
//! ended by `/new` every 30 messages a user),
//! and every platform's connection cut for 3 s once a minute. RSS is sampled every
//! 10 s, split into `RssAnon` (heap and stacks) and `RssFile` (the binary's pages,
//! bounded by its size); the report is the samples, the growth over the second half (a
//! straight-line fit, KiB per minute) and whether every message was answered exactly once. Growth
//! is a bug to fix, not a number to report.

mod support;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use pincer_fakes::FakeModel;
use pincer_fakes::discord::FakeDiscord;
use pincer_fakes::platform::FakePlatform;
use pincer_fakes::slack::FakeSlack;
use pincer_fakes::telegram::FakeTelegram;
use support::{Gateway, mib};

/// Users per platform (`SOAK_USERS`, default 50); each message comes from the next one.
/// A large number makes every message open a new session with no history.
const USERS: u64 = 50;
const EVERY: Duration = Duration::from_millis(200);
const SAMPLE: Duration = Duration::from_secs(10);
/// How often every connection is cut for 3 s (`SOAK_CUT_EVERY`, seconds; 0 never).
const CUT_EVERY: Duration = Duration::from_secs(60);
/// Each user starts a new conversation (`/new`) every this many messages
/// (`SOAK_NEW_EVERY`; 0 never), so conversations are created and ended as well as
/// reaped when idle.
const NEW_EVERY: u64 = 30;
/// A message sent this soon after a cut began may meet a connection still coming back.
const NEAR_CUT: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    support::main("soak", soak())
}

async fn soak() -> anyhow::Result<()> {
    let secs = setting("SOAK_SECS", 600);
    let users = setting("SOAK_USERS", USERS).max(1);
    let new_every = setting("SOAK_NEW_EVERY", NEW_EVERY);
    let cut_every = Duration::from_secs(setting("SOAK_CUT_EVERY", CUT_EVERY.as_secs()));
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let discord = FakeDiscord::start().await;
    let slack = FakeSlack::start().await;
    let platforms: Vec<&dyn FakePlatform> = vec![&telegram, &discord, &slack];
    let gateway = Gateway::start(&model, &platforms, "idle_session_secs = 10")?;
    gateway.ready(&platforms).await?;
    eprintln!("soak: {secs} s; RSS every {} s", SAMPLE.as_secs());

    let started = Instant::now();
    let end = started + Duration::from_secs(secs);
    // (seconds, RSS, RssAnon, RssFile), KiB.
    let mut samples: Vec<(f64, u64, u64, u64)> = Vec::new();
    let mut next_sample = started;
    // Never, when `SOAK_CUT_EVERY=0`.
    let mut next_cut = if cut_every.is_zero() {
        end
    } else {
        started + cut_every
    };
    let mut sent = 0u64;
    let mut cuts = 0;
    // Which messages went out while a connection was cut or coming back.
    let mut near_cut: Vec<bool> = Vec::new();
    // Which messages were `/new` (answered without the model, not counted).
    let mut command: Vec<bool> = Vec::new();
    let mut cut_at: Option<Instant> = None;
    while Instant::now() < end {
        let now = Instant::now();
        if now >= next_sample {
            let (rss, _) = gateway.memory();
            if rss == 0 {
                anyhow::bail!("pincer run died; log:\n{}", gateway.log());
            }
            let (anon, file) = gateway.rss_parts();
            samples.push((now.duration_since(started).as_secs_f64(), rss, anon, file));
            next_sample += SAMPLE;
        }
        if now >= next_cut {
            for platform in &platforms {
                platform.disconnect(Duration::from_secs(3)).await;
            }
            cuts += 1;
            cut_at = Some(now);
            next_cut += cut_every;
        }
        near_cut.push(cut_at.is_some_and(|at| at.elapsed() < NEAR_CUT));
        let nth = sent / users + 1;
        let new = new_every > 0 && nth.is_multiple_of(new_every);
        command.push(new);
        for platform in &platforms {
            let user = 1000 + sent % users;
            let text = if new {
                "/new".to_string()
            } else {
                format!("soak {sent}")
            };
            platform.dm(user, &text).await;
        }
        sent += 1;
        // Keep the fake model's request log from growing in this process.
        if sent.is_multiple_of(500) {
            model.reset();
        }
        tokio::time::sleep(EVERY).await;
    }
    // Let the last replies arrive.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let (rss, peak) = gateway.memory();
    let (anon, file) = gateway.rss_parts();
    samples.push((started.elapsed().as_secs_f64(), rss, anon, file));

    println!();
    println!(
        "Pincer soak: {secs} s, {} platform(s), a message every {} ms each from {users} users, `/new` every {new_every} messages a user, {cuts} connection cuts",
        platforms.len(),
        EVERY.as_millis()
    );
    println!();
    println!("| t (s) | RSS (MiB) | RssAnon | RssFile |");
    println!("| ---: | ---: | ---: | ---: |");
    for (t, rss, anon, file) in &samples {
        println!(
            "| {t:.0} | {} | {} | {} |",
            mib(*rss),
            mib(*anon),
            mib(*file)
        );
    }
    let half = |pick: fn(&(f64, u64, u64, u64)) -> u64| -> Vec<(f64, u64)> {
        samples
            .iter()
            .filter(|s| s.0 >= secs as f64 / 2.0)
            .map(|s| (s.0, pick(s)))
            .collect()
    };
    println!();
    println!(
        "growth over the second half: RSS {:+.1} KiB/min (RssAnon {:+.1}, RssFile {:+.1}); peak RSS {} MiB",
        slope(&half(|s| s.1)) * 60.0,
        slope(&half(|s| s.2)) * 60.0,
        slope(&half(|s| s.3)) * 60.0,
        mib(peak)
    );
    for platform in &platforms {
        let shown = platform.shown();
        let mut missing = 0;
        let mut missing_near_cut = 0;
        let mut doubled = 0;
        for n in (0..sent).filter(|n| !command[*n as usize]) {
            let needle = format!("echo: soak {n}");
            match shown.iter().filter(|m| m.text == needle).count() {
                0 => {
                    missing += 1;
                    if near_cut[n as usize] {
                        missing_near_cut += 1;
                    }
                }
                1 => {}
                _ => doubled += 1,
            }
        }
        println!(
            "{}: {sent} messages sent ({} of them `/new`), {missing} unanswered ({missing_near_cut} of them sent within {} s of a cut), {doubled} answered more than once",
            platform.name(),
            command.iter().filter(|c| **c).count(),
            NEAR_CUT.as_secs()
        );
    }
    // Stuck detection must never fire on ordinary traffic.
    let log = gateway.log();
    println!(
        "stuck detection: {} noted, {} stopped",
        log.matches("telling the model").count(),
        log.matches("stopping the turn").count()
    );
    Ok(())
}

/// A whole number from the environment, or `default` when unset or not a number.
fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Least-squares slope of (t, KiB): KiB per second.
fn slope(points: &[(f64, u64)]) -> f64 {
    let n = points.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let mean_t = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_v = points.iter().map(|p| p.1 as f64).sum::<f64>() / n;
    let num: f64 = points
        .iter()
        .map(|p| (p.0 - mean_t) * (p.1 as f64 - mean_v))
        .sum();
    let den: f64 = points.iter().map(|p| (p.0 - mean_t).powi(2)).sum();
    if den == 0.0 { 0.0 } else { num / den }
}
