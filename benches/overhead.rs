//! `cargo bench --bench overhead`: the time Pincer itself adds to a turn, measured
//! in-process against the fake model on 127.0.0.1 so no network or real model is in the
//! way. For each message it prints two spans:
//! - **message in → model request out**: from just before `inbound.send` to the instant
//!   the fake recorded the chat request (gate, store, session worker, prompt assembly,
//!   HTTP client; it includes the fake receiving and parsing the body).
//! - **message in → TurnEnd**: the whole round trip, including the streamed echo reply.
//!
//! Two runs: every message in one session (`terminal:dm:local`, so the history the
//! prompt carries grows), and every message in a session of its own. This measures and
//! prints; it asserts nothing about speed.

use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, bail};
use pincer_channels::{ChatKind, InboundMessage, OutboundBody, Sender, Terminal};
use pincer_fakes::FakeModel;
use tokio_util::sync::CancellationToken;

/// Messages sent before measuring (connections, SQLite pages, allocator).
const WARM_UP: usize = 20;
/// Messages measured per run.
const N: usize = 300;
/// A turn that takes longer than this means something is broken, not slow.
const TURN_TIMEOUT: Duration = Duration::from_secs(30);

/// One measured turn.
struct Sample {
    to_request: Duration,
    to_turn_end: Duration,
    body_bytes: usize,
}

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("overhead: cannot start the tokio runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(bench()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("overhead: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn bench() -> anyhow::Result<()> {
    let fake = FakeModel::start().await;
    let dir = tempfile::tempdir().context("cannot create a temporary home")?;
    let home = pincer::Home::resolve(Some(dir.path().to_path_buf()), None);
    let toml = format!(
        "version = 1\n[router]\nlight = [\"fake/m\"]\n\n[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n",
        fake.openai_base()
    );
    let config = pincer_config::load_str(&toml, &home.config_file, &home.security_file, &[])?;
    let secrets = pincer_config::Secrets::default();
    let shutdown = CancellationToken::new();
    let mut running = pincer::start(&home, &config, &secrets, &[], shutdown.clone())?;

    let terminal = Terminal::new(false);
    for i in 0..WARM_UP {
        let text = format!("warm-up {i}");
        turn(&fake, &mut running, terminal.message(text.clone()), &text).await?;
    }
    let mut one_session = Vec::with_capacity(N);
    for i in 0..N {
        let text = format!("same session {i}");
        one_session.push(turn(&fake, &mut running, terminal.message(text.clone()), &text).await?);
    }
    let mut own_session = Vec::with_capacity(N);
    for i in 0..N {
        let text = format!("own session {i}");
        own_session.push(turn(&fake, &mut running, session_message(i, &text), &text).await?);
    }

    shutdown.cancel();
    // The core stopping badly would not change the figures already taken.
    let _ = running.task.await;
    report(&one_session, &own_session);
    Ok(())
}

/// A terminal message in session `terminal:dm:bench-<i>`.
fn session_message(i: usize, text: &str) -> InboundMessage {
    let id = format!("bench-{i}");
    InboundMessage {
        channel: "terminal".into(),
        account: "default".into(),
        chat_id: id.clone(),
        chat_kind: ChatKind::Dm,
        thread_id: None,
        sender: Sender {
            raw_id: id.clone(),
            canonical: format!("terminal:{id}"),
            display_name: "bench".into(),
        },
        message_id: format!("bench-message-{i}"),
        text: text.to_string(),
        media: Vec::new(),
        reply_to: None,
        addressed: true,
        received_at: SystemTime::now(),
        deliver_to: None,
        scheduled: None,
    }
}

/// Send one message, wait for its TurnEnd, and find the model request it caused.
async fn turn(
    fake: &FakeModel,
    running: &mut pincer::Running,
    message: InboundMessage,
    text: &str,
) -> anyhow::Result<Sample> {
    fake.reset();
    let sent = Instant::now();
    running
        .inbound
        .send(message.into())
        .await
        .context("the core stopped taking messages")?;
    loop {
        let out = tokio::time::timeout(TURN_TIMEOUT, running.outbound.recv())
            .await
            .with_context(|| format!("no TurnEnd within {TURN_TIMEOUT:?} for {text:?}"))?
            .context("the core closed its outbound channel")?;
        match out.body {
            OutboundBody::Done | OutboundBody::Chunk(pincer_channels::Chunk::Finish { .. }) => {
                break;
            }
            OutboundBody::Error(err)
            | OutboundBody::Chunk(pincer_channels::Chunk::Error { error_text: err }) => {
                bail!("the turn for {text:?} failed: {err}")
            }
            _ => {}
        }
    }
    let to_turn_end = sent.elapsed();
    let request = fake
        .requests()
        .into_iter()
        .find(|r| r.last_user_text() == text)
        .with_context(|| format!("the fake saw no request carrying {text:?}"))?;
    Ok(Sample {
        to_request: request.at.saturating_duration_since(sent),
        to_turn_end,
        body_bytes: request.body.to_string().len(),
    })
}

fn report(one_session: &[Sample], own_session: &[Sample]) {
    println!();
    println!(
        "Pincer harness overhead: in-process core, fake model on 127.0.0.1, {N} turns per run after {WARM_UP} warm-up turns"
    );
    println!();
    println!("| run | span | p50 ms | p90 ms | p99 ms | max ms |");
    println!("|---|---|---:|---:|---:|---:|");
    for (run, samples) in [
        ("one session", one_session),
        ("new session each", own_session),
    ] {
        let mut to_request: Vec<Duration> = samples.iter().map(|s| s.to_request).collect();
        let mut to_end: Vec<Duration> = samples.iter().map(|s| s.to_turn_end).collect();
        row(run, "message in → model request out", &mut to_request);
        row(run, "message in → TurnEnd", &mut to_end);
    }
    println!();
    for (run, samples) in [
        ("one session", one_session),
        ("new session each", own_session),
    ] {
        if let (Some(first), Some(last)) = (samples.first(), samples.last()) {
            println!(
                "request body, {run}: first {} B, last {} B",
                first.body_bytes, last.body_bytes
            );
        }
    }
}

fn row(run: &str, span: &str, durations: &mut [Duration]) {
    durations.sort_unstable();
    let ms = |q: f64| percentile(durations, q).as_secs_f64() * 1000.0;
    println!(
        "| {run} | {span} | {:.3} | {:.3} | {:.3} | {:.3} |",
        ms(0.50),
        ms(0.90),
        ms(0.99),
        ms(1.0)
    );
}

/// Nearest-rank percentile of sorted `durations`; zero for none.
fn percentile(durations: &[Duration], q: f64) -> Duration {
    if durations.is_empty() {
        return Duration::ZERO;
    }
    // Nearest rank: the smallest value with at least q of the samples at or below it.
    let rank = (q * durations.len() as f64).ceil() as usize;
    durations[rank.clamp(1, durations.len()) - 1]
}
