//! `cargo bench --bench panel`: what the web panel costs. The release `pincer run`
//! with the fake Telegram and model, three times with `[web] enabled = false` and three
//! times with it on:
//! - idle RSS two seconds after every channel connected (median of the three starts);
//! - with the panel on, the time to first byte of the overview page (`GET /` with the
//!   login cookie) over 300 requests one after another: min, median, p99, max.
//!
//! It measures and prints; nothing is asserted.

mod support;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use pincer_fakes::FakeModel;
use pincer_fakes::platform::FakePlatform;
use pincer_fakes::telegram::FakeTelegram;
use support::{Gateway, mib, ms, percentile};

const STARTS: usize = 3;
const REQUESTS: usize = 300;

fn main() -> ExitCode {
    support::main("panel", bench())
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Start the gateway with the panel on or off; its idle RSS (KiB) and, when on, the
/// panel's address.
async fn start(
    model: &FakeModel,
    telegram: &FakeTelegram,
    web: bool,
) -> anyhow::Result<(Gateway, u64, Option<String>)> {
    let port = free_port()?;
    let extra = format!("[web]\nenabled = {web}\nlisten = \"127.0.0.1:{port}\"");
    let platforms: Vec<&dyn FakePlatform> = vec![telegram];
    let gateway = Gateway::start(model, &platforms, &extra)?;
    gateway.ready(&platforms).await?;
    let base = format!("http://127.0.0.1:{port}");
    if web {
        let deadline = Instant::now() + Duration::from_secs(30);
        while reqwest::get(format!("{base}/healthz")).await.is_err() {
            anyhow::ensure!(
                Instant::now() < deadline,
                "the panel never answered:\n{}",
                gateway.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss, _) = gateway.memory();
    Ok((gateway, rss, web.then_some(base)))
}

/// The token the gateway wrote for a loopback panel started without one.
fn token(gateway: &Gateway) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(gateway.dir.path().join(".security.yml"))?;
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("token: "))
        .context("no web.token written")?;
    Ok(line.trim_matches('"').to_string())
}

async fn bench() -> anyhow::Result<()> {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let mut off = Vec::new();
    let mut on = Vec::new();
    let mut ttfb = Vec::new();
    for _ in 0..STARTS {
        let (gateway, rss, _) = start(&model, &telegram, false).await?;
        off.push(rss);
        drop(gateway);
        let (gateway, rss, base) = start(&model, &telegram, true).await?;
        on.push(rss);
        let base = base.context("no panel address")?;
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let login = client
            .get(format!("{base}/login?token={}", token(&gateway)?))
            .send()
            .await?;
        let cookie = login
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .context("the login set no cookie")?
            .to_string();
        for _ in 0..REQUESTS {
            let began = Instant::now();
            let response = client.get(&base).header("cookie", &cookie).send().await?;
            ttfb.push(began.elapsed());
            anyhow::ensure!(
                response.status().is_success(),
                "GET / said {}",
                response.status()
            );
            response.bytes().await?;
        }
        drop(gateway);
    }
    off.sort_unstable();
    on.sort_unstable();
    ttfb.sort_unstable();
    let (off, on) = (off[STARTS / 2], on[STARTS / 2]);
    println!("idle RSS, panel off: {} MiB", mib(off));
    println!(
        "idle RSS, panel on:  {} MiB (+{} MiB)",
        mib(on),
        mib(on.saturating_sub(off))
    );
    println!(
        "overview time to first byte over {} requests (ms): min {}  median {}  p99 {}  max {}",
        ttfb.len(),
        ms(ttfb[0]),
        ms(percentile(&ttfb, 0.5)),
        ms(percentile(&ttfb, 0.99)),
        ms(ttfb[ttfb.len() - 1])
    );
    Ok(())
}
