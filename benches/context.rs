//! `cargo bench --bench context`: the size of the model request along a long
//! conversation, with and without compaction before the context limit. The release
//! `pincer chat` answers 300 piped messages; every turn reads a 1.5 KB file with a tool
//! and then answers, against the fake model. Printed: the request bytes of the first
//! model call of turns 10, 100 and 300, once with a window of 8,000 tokens (pruning and
//! summaries keep the request under 6,000) and once with 1,000,000 (nothing is
//! compacted); and how many summaries were made.
//!
//! It measures and prints; nothing is asserted.

mod support;

use std::io::Write as _;
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context as _, bail};
use pincer_fakes::{FakeModel, Step};
use serde_json::json;

const TURNS: usize = 300;
const SUMMARISER: &str = "You keep notes on a conversation";

fn main() -> ExitCode {
    support::main("context", bench())
}

/// Request sizes of the first call of each turn, and the number of summaries.
async fn conversation(window: u64) -> anyhow::Result<(Vec<usize>, usize)> {
    let model = FakeModel::start().await;
    model.answer_when_system_contains(
        SUMMARISER,
        Step::text(
            "Goals: keep the garden log. Decisions: water daily. Open: none. Files: garden.log.",
        ),
    );
    for n in 1..=TURNS {
        model.push(Step::tool_call("read_file", json!({"path": "garden.log"})));
        model.push(Step::text(format!("Turn {n}: the garden is fine.")));
    }
    let dir = tempfile::tempdir().context("cannot create a temporary home")?;
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "version = 1\n[router]\nlight = [\"fake/m\"]\n[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n[models.\"fake/m\"]\ncontext_tokens = {window}\n",
            model.openai_base()
        ),
    )?;
    std::fs::create_dir_all(dir.path().join("workspace"))?;
    std::fs::write(
        dir.path().join("workspace/garden.log"),
        "2026-11-20 watered the basil, 250 ml; soil damp, leaves fine\n".repeat(24),
    )?;
    let mut child = Command::new(support::pincer_binary())
        .arg("--home")
        .arg(dir.path())
        .arg("chat")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start pincer chat")?;
    let mut input = String::new();
    for n in 1..=TURNS {
        input.push_str(&format!("message {n}: how is the garden today?\n"));
    }
    child
        .stdin
        .take()
        .context("no stdin")?
        .write_all(input.as_bytes())?;
    let status = tokio::task::spawn_blocking(move || child.wait()).await??;
    if !status.success() {
        bail!("pincer chat failed ({status})");
    }
    let requests = model.requests();
    let summaries = requests
        .iter()
        .filter(|r| r.body.to_string().contains(SUMMARISER))
        .count();
    let firsts: Vec<usize> = requests
        .iter()
        .map(|r| r.body.to_string())
        .filter(|b| !b.contains(SUMMARISER))
        .step_by(2)
        .map(|b| b.len())
        .collect();
    Ok((firsts, summaries))
}

async fn bench() -> anyhow::Result<()> {
    let (small, summaries) = conversation(8_000).await?;
    let (large, none) = conversation(1_000_000).await?;
    println!("| request bytes at turn | 10 | 100 | 300 | summaries |");
    println!("| --- | --- | --- | --- | --- |");
    for (label, sizes, made) in [
        ("8,000-token window (compaction)", &small, summaries),
        ("1,000,000-token window (none)", &large, none),
    ] {
        let at = |turn: usize| sizes.get(turn - 1).copied().unwrap_or(0);
        println!(
            "| {label} | {} | {} | {} | {made} |",
            at(10),
            at(100),
            at(300)
        );
    }
    Ok(())
}
