//! `cargo bench --bench store`: how many turns a second the store carries, without a
//! model, a prompt or a channel: 1,000 sessions × 5 messages, each message making the
//! store calls a turn makes (store the message in its session, take it, read the
//! session and its repaired transcript, append the reply with its usage, mark it done),
//! all sessions at once as the dispatcher runs them. Measures and prints; asserts
//! nothing about speed.

mod support;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use pincer::provider::{Part, Usage};
use pincer::store::{Spender, Status, Store};
use pincer_channels::SessionKey;

const SESSIONS: usize = 1000;
const PER_SESSION: usize = 5;

fn main() -> ExitCode {
    support::main("store", bench())
}

/// The store calls of one turn answering `n` in `session`.
async fn turn(store: &Store, session: usize, n: usize) -> anyhow::Result<()> {
    let key = SessionKey::direct("terminal", &format!("load-{session}"));
    let text = format!("message {n} of session {session}");
    let (id, message) = store
        .receive(&key, "terminal", &format!("{session}-{n}"), "load", &text)
        .await?;
    let message = message.context("a message was taken for a redelivery")?;
    store.take(id, vec![message], Status::Active).await?;
    let (_, history) = store.transcript(id).await?;
    anyhow::ensure!(history.len() == 2 * n + 1, "the transcript lost a message");
    let reply = vec![Part::Text { text: text.clone() }];
    let usage = Usage {
        input_tokens: 100,
        output_tokens: 10,
        ..Usage::default()
    };
    store
        .record_call(
            id,
            "fake/m",
            usage,
            0.0,
            &Spender::owner(),
            Some((reply, None)),
        )
        .await?;
    store.set_status(vec![message], Status::Done).await?;
    Ok(())
}

async fn bench() -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("cannot create a temporary home")?;
    let store = Arc::new(Store::open(&dir.path().join("pincer.db"))?);
    turn(&store, usize::MAX, 0).await?;
    let before = support::memory_of(std::process::id()).0;
    let started = Instant::now();
    let mut sessions = tokio::task::JoinSet::new();
    for session in 0..SESSIONS {
        let store = Arc::clone(&store);
        sessions.spawn(async move {
            for n in 0..PER_SESSION {
                turn(&store, session, n).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = sessions.join_next().await {
        done??;
    }
    let elapsed = started.elapsed();
    let total = SESSIONS * PER_SESSION;
    println!();
    println!(
        "Pincer store: the store calls of {SESSIONS} sessions × {PER_SESSION} turns, all at once"
    );
    println!();
    println!("| measure | result |");
    println!("| --- | --- |");
    println!(
        "| {total} turns stored | {:.2} s, {:.0} messages/s |",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64()
    );
    let after = support::memory_of(std::process::id()).0;
    println!(
        "| RSS before / after | {} / {} MiB |",
        support::mib(before),
        support::mib(after)
    );
    Ok(())
}
