//! `pincer memory show | search <Q> | dream | log | restore <REV>`: the assistant's
//! memory from the command line. Works while the gateway runs (one dream or restore
//! at a time; the other is told to wait).

use std::process::ExitCode;
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use pincer_memory::{HitKind, Memory, repo::short};
use tokio::sync::{Notify, mpsc};

use super::{ensure_home, env_vars, load};
use crate::home::Home;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print MEMORY.md, the index of what the assistant remembers
    Show,
    /// Search the memory files and the daily logs
    Search {
        #[arg(value_name = "QUERY", required = true)]
        query: Vec<String>,
    },
    /// Tidy the memory now: read what happened since the last dream, apply the model's
    /// edits, commit them
    Dream,
    /// Every change to the memory files: dreams, restores, with the revision before each
    Log {
        /// How many revisions to show
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Put the memory files back as they were at REV, as a new commit
    Restore {
        #[arg(value_name = "REV")]
        rev: String,
    },
}

pub(super) async fn run(home: &Home, command: Command) -> anyhow::Result<ExitCode> {
    let (config, secrets) = load(home)?;
    ensure_home(home)?;
    let memory = Memory::new(home.workspace(&config), home.state_dir());
    match command {
        Command::Show => match memory.index_text()? {
            Some(text) if !text.trim().is_empty() => {
                print!("{text}");
                if memory.index()?.is_some_and(|i| i.truncated) {
                    eprintln!(
                        "note: MEMORY.md is over {} lines / {} KB; the assistant sees only its head",
                        pincer_memory::index::MAX_LINES,
                        pincer_memory::index::MAX_BYTES / 1024
                    );
                }
            }
            _ => println!(
                "No memories yet ({} is empty or missing).",
                memory.root().join("MEMORY.md").display()
            ),
        },
        Command::Search { query } => {
            let query = query.join(" ");
            let hits = blocking(move || memory.search(&query, 20)).await?;
            if hits.is_empty() {
                println!("Nothing matches.");
            }
            for hit in hits {
                match hit.kind {
                    HitKind::Memory => {
                        println!("{}: {} — {}", hit.path, hit.description, hit.snippet)
                    }
                    HitKind::Log => println!("{}: {}", hit.path, hit.snippet),
                }
            }
        }
        Command::Dream => {
            let env = env_vars();
            let (outbound, _unused) = mpsc::channel(1);
            let agent = crate::start::build_agent(
                home,
                &config,
                &secrets,
                &env,
                outbound,
                Arc::new(Notify::new()),
                Default::default(),
            )?;
            return match crate::memory::dream(&agent, config.memory.dream_max_tokens).await {
                Ok(dreamt) => {
                    println!("{}", dreamt.describe());
                    Ok(ExitCode::SUCCESS)
                }
                Err(err) => anyhow::bail!("the dream failed: {err}"),
            };
        }
        Command::Log { limit } => {
            let revisions = blocking(move || memory.repo()?.log(limit)).await?;
            if revisions.is_empty() {
                println!("No memory revisions yet.");
            }
            for revision in revisions {
                let when = Utc
                    .timestamp_opt(revision.time, 0)
                    .single()
                    .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
                    .unwrap_or_default();
                let mut lines = revision.message.lines();
                let title = lines.next().unwrap_or_default();
                let before = revision
                    .parent
                    .as_deref()
                    .map(|p| format!("  (before: {})", short(p)))
                    .unwrap_or_default();
                println!("{} {when}  {title}{before}", short(&revision.id));
                for line in lines.filter(|l| !l.trim().is_empty()) {
                    println!("    {line}");
                }
            }
        }
        Command::Restore { rev } => {
            let wanted = rev.clone();
            match blocking(move || memory.restore(&wanted)).await? {
                Some(commit) => {
                    println!(
                        "Restored the memory files as of {rev} in a new commit {}:",
                        short(&commit.id)
                    );
                    for change in &commit.changes {
                        println!("    {change}");
                    }
                }
                None => println!("The memory files are already as they were at {rev}."),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, pincer_memory::MemoryError> + Send + 'static,
) -> anyhow::Result<T> {
    Ok(tokio::task::spawn_blocking(work).await??)
}
