//! `cargo bench --bench e2e`: the release `pincer run` against in-process fakes of the
//! model and of Telegram, Discord and Slack, and a real Synapse for Matrix
//! (`scripts/install-synapse.sh`), measured from outside as a user would see it. On
//! Matrix each new user's direct room is opened (a first message, answered) before the
//! measured one, so room creation and the bot's join are not counted; its figures
//! include Synapse's own handling and sync delivery, so Pincer's own share is measured
//! apart at the proxy between the bot and Synapse: the sync carrying the message reaches
//! the bot → request at the model, and request at the model → the bot's request
//! carrying the reply leaves it. Prints a table:
//! - start → ready: process spawn until every channel is connected;
//! - idle RSS with every channel connected, and peak RSS after the load below;
//! - harness overhead per platform, p50/p95/p99 over `N` messages, each from a new
//!   user (so no chat's pacing applies) and `GAP` after the last (far below any
//!   channel-wide limit): message injected at the fake platform →
//!   request at the fake model, and request at the model → reply shown at the platform
//!   (the instant fake model streams its short echo in well under a millisecond);
//! - RSS growth per session, from the `N` sessions those messages opened;
//! - one chat answering once a second, per platform: 20 messages in one chat on a fixed
//!   schedule (not after each reply), exactly a second apart and then about a second
//!   apart (`ABOUT`: 0.5–1.5 s, a second on average, as a person answers), request at
//!   the model → reply shown, p50/p99 — what a quick back-and-forth waits for pacing;
//!   on Matrix also Pincer's own share each way, at the proxy as above.
//!   The sender is let write 120 messages a minute (`access.rate_per_minute`).
//!
//! `E2E_PLATFORMS=matrix` (names, comma-separated) measures those platforms alone;
//! `BENCH_GATEWAY_LOG=<RUST_LOG filter>` runs the gateway with that log filter and keeps
//! its log (`pincer-e2e-gateway.log` in the temporary folder): with
//! `info,matrix_sdk_base=info` it holds the SDK's "Processed a sync response in …".
//!
//! It measures and prints; nothing is asserted about speed.

mod support;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use pincer_fakes::FakeModel;
use pincer_fakes::discord::FakeDiscord;
use pincer_fakes::platform::FakePlatform;
use pincer_fakes::slack::FakeSlack;
use pincer_fakes::synapse::{MatrixPlatform, Proxy};
use pincer_fakes::telegram::FakeTelegram;
use support::{Gateway, mib, ms, percentile, seen};

/// Messages measured per platform.
const N: u64 = 200;
/// Messages before measuring (connections, SQLite pages, allocator).
const WARM_UP: u64 = 10;
/// Pause between messages, as between a person's messages.
const GAP: Duration = Duration::from_millis(60);
/// The pauses (ms) between the 20 messages of each one-chat scenario.
const STEADY: [u64; 19] = [1000; 19];
const ABOUT: [u64; 19] = [
    700, 1300, 900, 600, 1400, 1000, 800, 1200, 500, 1500, 1200, 900, 700, 1300, 1000, 800, 1200,
    600, 1400,
];
const SCHEDULES: [(&str, [u64; 19]); 2] = [
    ("a message each second", STEADY),
    ("a message about each second", ABOUT),
];

fn main() -> ExitCode {
    support::main("e2e", bench())
}

struct Spans {
    name: &'static str,
    inbound: Vec<Duration>,
    outbound: Vec<Duration>,
    /// Matrix only: the same without Synapse (sync delivered → request; request → send).
    own_inbound: Vec<Duration>,
    own_outbound: Vec<Duration>,
}

impl Spans {
    fn new(name: &'static str) -> Spans {
        Spans {
            name,
            inbound: Vec::new(),
            outbound: Vec::new(),
            own_inbound: Vec::new(),
            own_outbound: Vec::new(),
        }
    }

    /// One measured message: sent → request → shown, and (Matrix) the same from the sync
    /// reaching the bot to its reply leaving it.
    fn note(
        &mut self,
        sent: Instant,
        request_at: Instant,
        shown: Instant,
        own: Option<(Instant, Instant)>,
    ) {
        let since = |from: Instant, to: Instant| to.saturating_duration_since(from);
        self.inbound.push(since(sent, request_at));
        self.outbound.push(since(request_at, shown));
        if let Some((delivered, replied)) = own {
            self.own_inbound.push(since(delivered, request_at));
            self.own_outbound.push(since(request_at, replied));
        }
    }
}

async fn bench() -> anyhow::Result<()> {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let discord = FakeDiscord::start().await;
    let slack = FakeSlack::start().await;
    let matrix = MatrixPlatform::start().await;
    let mut platforms: Vec<&dyn FakePlatform> = vec![&telegram, &discord, &slack, &matrix];
    if let Ok(only) = std::env::var("E2E_PLATFORMS") {
        platforms.retain(|p| only.split(',').any(|o| o == p.name()));
        anyhow::ensure!(
            !platforms.is_empty(),
            "E2E_PLATFORMS={only:?} names none of telegram, discord, slack, matrix"
        );
    }
    // Above the 20 messages a scenario's one sender writes in 20 s.
    let gateway = Gateway::start(&model, &platforms, "[access]\nrate_per_minute = 120")?;
    let ready = gateway.ready(&platforms).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (idle_rss, _) = gateway.memory();

    let mut results = Vec::new();
    let mut user = 1000;
    for platform in &platforms {
        let mut spans = Spans::new(platform.name());
        let proxy = (platform.name() == "matrix").then(|| matrix.proxy());
        for i in 0..WARM_UP + N {
            user += 1;
            if platform.name() == "matrix" {
                let open = format!("open {user}");
                round_trip(&gateway, &model, *platform, user, &open).await?;
            }
            let text = format!("bench {} {i}", platform.name());
            let sent = Instant::now();
            let (request_at, shown, own) =
                watched_trip(&gateway, &model, *platform, proxy, user, &text).await?;
            if i >= WARM_UP {
                spans.note(sent, request_at, shown, own);
            }
            tokio::time::sleep(GAP).await;
        }
        model.reset();
        results.push(spans);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (loaded_rss, peak) = gateway.memory();
    let sessions = (WARM_UP + N) * platforms.len() as u64;
    // (Matrix's sessions each held an opening message too.)

    let mut paced = Vec::new();
    for (schedule, pauses) in SCHEDULES {
        for platform in &platforms {
            user += 1;
            if platform.name() == "matrix" {
                let open = format!("open {user}");
                round_trip(&gateway, &model, *platform, user, &open).await?;
            }
            let proxy = (platform.name() == "matrix").then(|| matrix.proxy());
            let mut spans = one_chat(&gateway, &model, *platform, proxy, user, &pauses).await?;
            for values in [
                &mut spans.outbound,
                &mut spans.own_inbound,
                &mut spans.own_outbound,
            ] {
                values.sort_unstable();
            }
            paced.push((schedule, spans));
            model.reset();
        }
    }

    println!();
    println!(
        "Pincer end to end: release `pincer run`, in-process fakes on 127.0.0.1 ({}), {N} messages per platform after {WARM_UP} warm-up",
        platforms
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!();
    println!("| measure | result |");
    println!("| --- | --- |");
    println!("| start → every channel connected | {} ms |", ms(ready));
    println!(
        "| idle RSS, every channel connected | {} MiB |",
        mib(idle_rss)
    );
    for spans in &mut results {
        for (label, values) in [
            ("message at platform → request at model", &mut spans.inbound),
            (
                "request at model → reply shown at platform",
                &mut spans.outbound,
            ),
            (
                "Pincer's own: sync reaches the bot → request at model",
                &mut spans.own_inbound,
            ),
            (
                "Pincer's own: request at model → the reply leaves the bot",
                &mut spans.own_outbound,
            ),
        ] {
            if values.is_empty() {
                continue;
            }
            values.sort_unstable();
            println!(
                "| {}: {label} | p50 {} ms, p95 {} ms, p99 {} ms |",
                spans.name,
                ms(percentile(values, 0.50)),
                ms(percentile(values, 0.95)),
                ms(percentile(values, 0.99)),
            );
        }
    }
    println!(
        "| RSS after {sessions} sessions | {} MiB ({:.1} KiB per session over idle) |",
        mib(loaded_rss),
        loaded_rss.saturating_sub(idle_rss) as f64 / sessions as f64
    );
    println!("| peak RSS | {} MiB |", mib(peak));
    for (schedule, spans) in &paced {
        let name = spans.name;
        for (label, values) in [
            ("request at model → reply shown", &spans.outbound),
            (
                "Pincer's own: sync reaches the bot → request at model",
                &spans.own_inbound,
            ),
            (
                "Pincer's own: request at model → the reply leaves the bot",
                &spans.own_outbound,
            ),
        ] {
            if values.is_empty() {
                continue;
            }
            println!(
                "| {name}: one chat, {schedule}: {label} | p50 {} ms, p99 {} ms, max {} ms |",
                ms(percentile(values, 0.50)),
                ms(percentile(values, 0.99)),
                ms(values.last().copied().unwrap_or_default()),
            );
        }
    }
    if std::env::var_os("BENCH_GATEWAY_LOG").is_some() {
        let kept = std::env::temp_dir().join("pincer-e2e-gateway.log");
        std::fs::write(&kept, gateway.log())?;
        println!("\nThe gateway's log: {}", kept.display());
    }
    Ok(())
}

/// `user` writes in one chat, a message at first and one after each pause, on a fixed
/// schedule (each reply is awaited before the next message is due, so one late reply
/// makes the next message late too); sent → request at the model → reply shown for
/// each, and on Matrix Pincer's own share each way.
async fn one_chat(
    gateway: &Gateway,
    model: &FakeModel,
    platform: &dyn FakePlatform,
    proxy: Option<&Proxy>,
    user: u64,
    pauses: &[u64],
) -> anyhow::Result<Spans> {
    let mut due = tokio::time::Instant::now();
    let mut spans = Spans::new(platform.name());
    for (i, pause) in std::iter::once(0).chain(pauses.iter().copied()).enumerate() {
        due += Duration::from_millis(pause);
        tokio::time::sleep_until(due).await;
        let text = format!("paced {} {user} {i}", platform.name());
        let sent = Instant::now();
        let (request_at, shown, own) =
            watched_trip(gateway, model, platform, proxy, user, &text).await?;
        spans.note(sent, request_at, shown, own);
    }
    Ok(spans)
}

/// `round_trip`, and with the `proxy` between the bot and Synapse also when the sync
/// carrying `text` reached the bot and when the bot's reply left it.
async fn watched_trip(
    gateway: &Gateway,
    model: &FakeModel,
    platform: &dyn FakePlatform,
    proxy: Option<&Proxy>,
    user: u64,
    text: &str,
) -> anyhow::Result<(Instant, Instant, Option<(Instant, Instant)>)> {
    // The sync's JSON holds the text quoted; the reply is the model's echo.
    let (delivered, reply) = (format!("\"{text}\""), format!("echo: {text}"));
    if let Some(proxy) = proxy {
        proxy.watch(&delivered);
        proxy.watch(&reply);
    }
    let (request_at, shown) = round_trip(gateway, model, platform, user, text).await?;
    let Some(proxy) = proxy else {
        return Ok((request_at, shown, None));
    };
    let (Some(delivered), _) = proxy.seen(&delivered) else {
        anyhow::bail!("the proxy did not see {text:?} reach the bot");
    };
    let (_, Some(replied)) = proxy.seen(&reply) else {
        anyhow::bail!("the proxy did not see the bot send {reply:?}");
    };
    Ok((request_at, shown, Some((delivered, replied))))
}

/// Send `text` as `user` in a DM and wait for its echo: when the model got the
/// request, and when the reply was shown.
async fn round_trip(
    gateway: &Gateway,
    model: &FakeModel,
    platform: &dyn FakePlatform,
    user: u64,
    text: &str,
) -> anyhow::Result<(Instant, Instant)> {
    let chat = platform.dm(user, text).await;
    let shown = seen(
        platform,
        &chat,
        &format!("echo: {text}"),
        Duration::from_secs(15),
    )
    .await
    .with_context(|| format!("gateway log:\n{}", gateway.log()))?;
    let request = model
        .requests()
        .into_iter()
        .find(|r| r.last_user_text() == text)
        .context("the fake model saw no request")?;
    Ok((request.at, shown))
}
