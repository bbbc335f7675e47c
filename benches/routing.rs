//! `cargo bench --bench routing`: a scripted 20-turn mixed conversation in one session
//! against the fake model, in-process. Prints the share of turns the router sent to
//! the light chain, the input tokens sent per turn, and the share of input tokens the
//! (fake) provider reported as cache hits — counted per model in the providers' order,
//! tools → system → messages (`tests/fakes/src/cache.rs`); then the first request a
//! model with an 8K context window gets ("hi": its size and tools). Measures and
//! prints; asserts nothing. The figures in `docs/benchmarks.md` come from this run.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use pincer_channels::{OutboundBody, Terminal};
use pincer_fakes::FakeModel;
use tokio_util::sync::CancellationToken;

/// The conversation: chat, questions with code, long requests, follow-ups.
fn script() -> Vec<String> {
    let code = "```python\ndef total(items):\n    return sum(i.price for i in items)\n```";
    let long = "I am planning a two-week trip through Portugal in May with my partner. We like hiking, seafood and small towns, we do not want to drive more than three hours a day, and we would like a mix of coast and inland. ".repeat(3);
    let mut turns: Vec<String> = vec![
        "hi".into(),
        "what's the capital of Portugal?".into(),
        "thanks!".into(),
        format!("why does this return 0 for my cart?\n{code}"),
        "ok, and how would I add tax?".into(),
        long.clone(),
        "shorter please".into(),
        "what about Porto?".into(),
        format!("review this:\n{code}\nis it idiomatic?"),
        "cool".into(),
    ];
    let more: Vec<String> = turns.iter().map(|t| format!("{t} (again)")).collect();
    turns.extend(more);
    turns
}

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("routing: cannot start the tokio runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(bench()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("routing: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The core started in a temporary home (kept while the returned directory lives) with
/// `toml` as its configuration.
fn start(toml: &str) -> anyhow::Result<(tempfile::TempDir, pincer::Running, CancellationToken)> {
    let dir = tempfile::tempdir().context("cannot create a temporary home")?;
    let home = pincer::Home::resolve(Some(dir.path().to_path_buf()), None);
    let config = pincer_config::load_str(toml, &home.config_file, &home.security_file, &[])?;
    let shutdown = CancellationToken::new();
    let running = pincer::start(
        &home,
        &config,
        &pincer_config::Secrets::default(),
        &[],
        shutdown.clone(),
    )?;
    Ok((dir, running, shutdown))
}

async fn bench() -> anyhow::Result<()> {
    let fake = FakeModel::start().await;
    let toml = format!(
        "version = 1\n[router]\nlight = [\"fake/light\"]\nheavy = [\"fake/heavy\"]\n\n[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n",
        fake.openai_base()
    );
    let (_dir, mut running, shutdown) = start(&toml)?;
    let terminal = Terminal::new(false);
    let turns = script();
    for text in &turns {
        running
            .inbound
            .send(terminal.message(text.clone()).into())
            .await?;
        loop {
            let message = tokio::time::timeout(Duration::from_secs(30), running.outbound.recv())
                .await
                .context("a turn took over 30 s")?
                .context("the core stopped")?;
            match message.body {
                OutboundBody::Done | OutboundBody::Chunk(pincer_channels::Chunk::Finish { .. }) => {
                    break;
                }
                OutboundBody::Error(err)
                | OutboundBody::Chunk(pincer_channels::Chunk::Error { error_text: err }) => {
                    bail!("a turn failed: {err}")
                }
                _ => {}
            }
        }
    }
    let requests = fake.requests();
    let light = requests.iter().filter(|r| r.model() == "light").count();
    let (usage, _) = running.agent.store().usage_since(0).await?;
    let input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
    println!(
        "| measure ({} turns, one conversation) | result |",
        turns.len()
    );
    println!("| --- | --- |");
    println!(
        "| turns routed light | {light} of {} ({:.0}%) |",
        requests.len(),
        100.0 * light as f64 / requests.len() as f64
    );
    println!(
        "| input tokens sent per turn (mean) | {:.0} |",
        input as f64 / requests.len() as f64
    );
    println!(
        "| input tokens reported as cache hits | {:.0}% |",
        100.0 * usage.cache_read_tokens as f64 / input.max(1) as f64
    );
    shutdown.cancel();
    first_request_on_8k().await
}

/// The first request ("hi") a model with an 8,192-token window is sent: bytes,
/// tokens (bytes ÷ 4) and share of the window, and the tools offered.
async fn first_request_on_8k() -> anyhow::Result<()> {
    let fake = FakeModel::start().await;
    let toml = format!(
        "version = 1\n[router]\nlight = [\"fake/small\"]\n\n[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n\n[models.\"fake/small\"]\ncontext_tokens = 8192\n",
        fake.openai_base()
    );
    let (_dir, mut running, shutdown) = start(&toml)?;
    running
        .inbound
        .send(Terminal::new(false).message("hi".into()).into())
        .await?;
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), running.outbound.recv())
            .await
            .context("the turn took over 30 s")?
            .context("the core stopped")?;
        if matches!(
            message.body,
            OutboundBody::Done | OutboundBody::Chunk(pincer_channels::Chunk::Finish { .. })
        ) {
            break;
        }
    }
    let request = fake.requests().into_iter().next().context("no request")?;
    let bytes = request.body.to_string().len();
    let tools: Vec<String> = request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect();
    println!(
        "| first request, 8K-window model (\"hi\") | {bytes} bytes, ~{} tokens ({:.0}% of the window); {} tools: {} |",
        bytes / 4,
        100.0 * (bytes / 4) as f64 / 8192.0,
        tools.len(),
        tools.join(", ")
    );
    shutdown.cancel();
    Ok(())
}
