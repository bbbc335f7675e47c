//! `pincer backup FILE [--with-secrets]` and `pincer restore FILE`: a home in one
//! archive (tar, gzip), taken while the gateway runs, and put back into an empty home.
//!
//! The archive holds `pincer-backup.json` (what made it: the format, Pincer's version,
//! the database schema, whether secrets are in), `config.toml`, `.security.yml` (only
//! with `--with-secrets`), `pincer.db` (SQLite's online backup: the database as of one
//! moment, while the gateway keeps writing), `state/` (the memory's git history, its
//! index by online backup, the dream's journal, kept attachments) and `workspace/`
//! (the agent's workspace, wherever `agent.workspace` puts it). Not in it: the gateway
//! lock, logs, the MCP servers' folders.
//!
//! - `write`   — making the archive (`pincer backup`)
//! - `restore` — putting one back (`pincer restore`)
//! - `check`   — what an archive may hold; every entry is checked before anything is
//!   written, since an archive is hostile input

mod check;
mod restore;
mod write;

use std::path::PathBuf;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

use crate::home::Home;

#[derive(Debug, clap::Args)]
pub struct BackupArgs {
    /// The archive to write (a new file; `.tar.gz` is the usual name)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Put .security.yml (the keys and tokens) in the archive too
    #[arg(long)]
    pub with_secrets: bool,
}

#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// An archive written by `pincer backup`
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// The archive's first entry, `pincer-backup.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Manifest {
    /// The archive's layout; a restore refuses one it does not know.
    format: u32,
    /// The Pincer that wrote it.
    pincer: String,
    /// When (RFC 3339, UTC).
    created: String,
    /// `pincer.db`'s schema (the number of migrations applied); 0 without a database.
    schema: i64,
    /// Whether `.security.yml` is in.
    secrets: bool,
}

/// The layout this build writes and reads.
const FORMAT: u32 = 1;

pub(super) async fn backup(home: &Home, args: BackupArgs) -> anyhow::Result<ExitCode> {
    let (config, _) = super::load(home)?;
    let plan = write::Plan::new(home, &config, args)?;
    let done = tokio::task::spawn_blocking(move || plan.write()).await??;
    println!("{done}");
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn restore(home: &Home, args: RestoreArgs) -> anyhow::Result<ExitCode> {
    let done = tokio::task::spawn_blocking({
        let home = home.clone();
        move || restore::restore(&home, &args.file)
    })
    .await??;
    // The database is migrated now, as the next command would, so a problem shows here.
    if home.db_file.exists() {
        let store = crate::store::Store::open(&home.db_file)?;
        let sessions = store.sessions().await?;
        println!("{done}; {} sessions", sessions.len());
    } else {
        println!("{done}");
    }
    Ok(ExitCode::SUCCESS)
}
