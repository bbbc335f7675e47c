//! `cargo bench --bench throughput`: how many messages a second the core gets through
//! with many conversations at once, and what an idle conversation costs in memory.
//! In-process: the real dispatcher, store and agent; `SESSIONS` conversations each send
//! `PER_SESSION` messages as fast as the bus takes them. Twice: first with the real
//! provider client against the instant fake model on 127.0.0.1 (and the memory
//! figures), then with an instant model inside the process (`pincer::Wiring`), which
//! leaves out the HTTP of both sides. Measures and prints; asserts nothing about speed.

mod support;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use pincer::provider::{ChatRequest, ChatResponse, Part, Provider, ProviderError, StopReason};
use pincer::provider::{StreamEvent, Usage};
use pincer_channels::{ChatKind, InboundMessage, OutboundBody, Sender};
use pincer_fakes::FakeModel;
use tokio_util::sync::CancellationToken;

const SESSIONS: usize = 1000;
const PER_SESSION: usize = 5;

fn main() -> ExitCode {
    support::main("throughput", bench())
}

fn message(session: usize, n: usize) -> InboundMessage {
    let id = format!("load-{session}");
    InboundMessage {
        channel: "terminal".into(),
        account: "default".into(),
        chat_id: id.clone(),
        chat_kind: ChatKind::Dm,
        thread_id: None,
        sender: Sender {
            raw_id: id.clone(),
            canonical: format!("terminal:{id}"),
            display_name: "load".into(),
        },
        message_id: format!("load-{session}-{n}"),
        text: format!("message {n} of session {session}"),
        media: Vec::new(),
        reply_to: None,
        addressed: true,
        received_at: SystemTime::now(),
        deliver_to: None,
        scheduled: None,
    }
}

fn rss_kib() -> u64 {
    support::memory_of(std::process::id()).0
}

/// The instant model without HTTP: one text delta, then the reply.
struct InstantModel;

#[async_trait::async_trait]
impl Provider for InstantModel {
    async fn stream(
        &self,
        _req: &ChatRequest,
        on_event: &mut (dyn for<'a> FnMut(StreamEvent<'a>) + Send),
    ) -> Result<ChatResponse, ProviderError> {
        on_event(StreamEvent::Text("ok"));
        Ok(ChatResponse {
            parts: vec![Part::Text { text: "ok".into() }],
            stop: StopReason::EndTurn,
            usage: Usage::default(),
        })
    }
}

/// One run's figures.
struct Run {
    elapsed: Duration,
    /// RSS before the sessions, after them, and after `malloc_trim`.
    rss: (u64, u64, u64),
}

async fn bench() -> anyhow::Result<()> {
    let fake = FakeModel::start().await;
    // The fake shares this process: its request log must not count as Pincer's memory.
    fake.keep_bodies(false);
    // `THROUGHPUT_MODEL=http` or `=process` runs only that one (for a profiler).
    let only = std::env::var("THROUGHPUT_MODEL").ok();
    if let Some(only) = only.as_deref().filter(|o| !["http", "process"].contains(o)) {
        anyhow::bail!("THROUGHPUT_MODEL is `http` or `process`, not `{only}`");
    }
    let wanted = |name: &str| only.as_deref().is_none_or(|only| only == name);
    let http = match wanted("http") {
        true => Some(run(&fake, pincer::Wiring::default()).await?),
        false => None,
    };
    let local = match wanted("process") {
        true => {
            let mut wiring = pincer::Wiring::default();
            let provider: Arc<dyn Provider> = Arc::new(InstantModel);
            wiring.providers.insert("fake".into(), provider);
            Some(run(&fake, wiring).await?)
        }
        false => None,
    };
    let total = SESSIONS * PER_SESSION;
    let rate = |run: &Run| {
        format!(
            "{:.2} s, {:.0} messages/s",
            run.elapsed.as_secs_f64(),
            total as f64 / run.elapsed.as_secs_f64()
        )
    };

    println!();
    println!("Pincer core throughput: in-process, {SESSIONS} sessions × {PER_SESSION} messages");
    println!();
    println!("| measure | result |");
    println!("| --- | --- |");
    if let Some(http) = &http {
        println!(
            "| {total} messages answered, instant fake model over HTTP on 127.0.0.1 | {} |",
            rate(http)
        );
    }
    if let Some(local) = &local {
        println!(
            "| {total} messages answered, instant model in the process (no HTTP) | {} |",
            rate(local)
        );
    }
    let Some((before, after, trimmed)) = http.or(local).map(|run| run.rss) else {
        anyhow::bail!("no run");
    };
    println!(
        "| RSS before / after, {SESSIONS} sessions idle (the first run) | {} / {} MiB ({:.1} KiB per session) |",
        support::mib(before),
        support::mib(after),
        after.saturating_sub(before) as f64 / SESSIONS as f64
    );
    println!(
        "| … after free pages are handed back (`malloc_trim`, as `pincer run` does each minute) | {} MiB ({:.1} KiB per session) |",
        support::mib(trimmed),
        trimmed.saturating_sub(before) as f64 / SESSIONS as f64
    );
    Ok(())
}

/// Start a core in a home of its own with `wiring`, send it every message, stop it.
async fn run(fake: &FakeModel, wiring: pincer::Wiring) -> anyhow::Result<Run> {
    let dir = tempfile::tempdir().context("cannot create a temporary home")?;
    let home = pincer::Home::resolve(Some(dir.path().to_path_buf()), None);
    let toml = format!(
        "version = 1\n[agent]\nqueue_mode = \"followup\"\n[router]\nlight = [\"fake/m\"]\n\n[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n",
        fake.openai_base()
    );
    let config = pincer_config::load_str(&toml, &home.config_file, &home.security_file, &[])?;
    let shutdown = CancellationToken::new();
    let mut running = pincer::start_wired(
        &home,
        &config,
        &pincer_config::Secrets::default(),
        &[],
        wiring,
        shutdown.clone(),
    )?;
    // Warm up: one turn opens connections and the database.
    running.inbound.send(message(usize::MAX, 0).into()).await?;
    wait_turn_ends(&mut running, 1).await?;
    fake.reset();
    let before = rss_kib();

    let total = SESSIONS * PER_SESSION;
    let inbound = running.inbound.clone();
    let started = Instant::now();
    let feeder = tokio::spawn(async move {
        for n in 0..PER_SESSION {
            for session in 0..SESSIONS {
                if inbound.send(message(session, n).into()).await.is_err() {
                    return;
                }
            }
        }
    });
    wait_turn_ends(&mut running, total).await?;
    let elapsed = started.elapsed();
    feeder.await?;
    fake.reset();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss_kib();
    // What `pincer run` does once a minute: free pages go back to the system. What is
    // left is what the idle sessions hold, not the peak of the burst.
    // SAFETY: malloc_trim takes the allocator's own locks; safe at any time.
    #[allow(
        unsafe_code,
        reason = "what `pincer run` does, done here as it does it"
    )]
    unsafe {
        libc::malloc_trim(0);
    }
    let trimmed = rss_kib();
    shutdown.cancel();
    let _ = running.task.await;
    Ok(Run {
        elapsed,
        rss: (before, after, trimmed),
    })
}

/// Receive outbound messages until `n` turns have ended.
async fn wait_turn_ends(running: &mut pincer::Running, n: usize) -> anyhow::Result<()> {
    let mut ended = 0;
    while ended < n {
        let out = tokio::time::timeout(Duration::from_secs(60), running.outbound.recv())
            .await
            .with_context(|| format!("stuck after {ended} of {n} turns"))?
            .context("the core closed its outbound channel")?;
        match out.body {
            OutboundBody::Done | OutboundBody::Chunk(pincer_channels::Chunk::Finish { .. }) => {
                ended += 1
            }
            OutboundBody::Error(err)
            | OutboundBody::Chunk(pincer_channels::Chunk::Error { error_text: err }) => {
                anyhow::bail!("a turn failed: {err}")
            }
            _ => {}
        }
    }
    Ok(())
}
