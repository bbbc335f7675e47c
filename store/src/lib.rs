//! # pincer-store
//!
//! The session store, and nothing else: SQLite (WAL) holding sessions, messages, their
//! parts and model usage, with the jobs, tasks, grants and pairings the core keeps. It
//! knows no agent, channel adapter or model client; it stores the provider's message
//! parts in its own form, and what it reports goes to an observer handed in at start-up
//! (`UsageObserver`), never to a global.
//!
//! The user's message is committed before the model is called; replies and tool results
//! as they complete. One writer on the blocking pool runs every call on the one
//! connection; callers wait for their answer as tasks, and what queues up while a call
//! runs is committed together (`writer`).
//!
//! ## Layout
//! `lib.rs` holds only the `Store` handle: opening, and running work on the connection.
//! Each concern has its own file:
//!
//! - `error`      — `StoreError`, what every call returns
//! - `kinds`      — `Role` and `Status`, the enums stored as text
//! - `clock`      — the wall clock, read in one place
//! - `conn`       — the connection's settings and its statement cache
//! - `batch`      — one worker over a queue, taking what waits together (the writer's,
//!   and the core's memory scribe's)
//! - `writer`     — the one writer on the connection: group commit
//! - `migrations` — the numbered schema migrations (`schema_version`: the newest)
//! - `snapshot`   — a copy of a database as of one moment, while the gateway writes
//!   (`pincer backup`)
//! - `session`    — sessions: the current one per key, `/new`, forks, pin, summary, pruning
//! - `messages`   — messages and their parts, the transcript, what was left unanswered
//! - `parts`      — `StoredPart`, the store's own JSON form of a message part
//! - `repair`     — closing tool calls a crash left without a result
//! - `recent`     — what was said since a moment, for the dream
//! - `search`     — full-text search over what was said (FTS5)
//! - `usage`      — token totals and cost read back
//! - `spend`      — recording each call's usage, and the day's spend for the budgets
//! - `observe`    — `UsageObserver`: who hears of each call's usage (the metrics)
//! - `grants`     — the owner's "always" answers to tool approvals
//! - `pairing`    — pairing codes and approved senders
//! - `health`     — each channel's last health and last event, for `pincer status`;
//!   the watchdog's `ping`
//! - `outbox`     — what a person is to see, stored before it is sent and settled when
//!   the platform has it; the channel manager's `Ledger`
//! - `cron`       — scheduled jobs and their runs
//! - `tasks`      — subagent tasks
//! - `panel`      — what only the web panel reads

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod batch;
mod clock;
mod conn;
mod cron;
mod error;
mod grants;
mod health;
mod kinds;
mod messages;
mod migrations;
mod observe;
mod outbox;
mod pairing;
mod panel;
mod parts;
mod recent;
mod repair;
mod search;
mod session;
mod snapshot;
mod spend;
mod tasks;
mod usage;
mod writer;

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use conn::{Cached, connect};

pub use clock::now_ms;
pub use cron::{Job, NewJob};
pub use error::{Result, StoreError};
pub use health::ChannelHealth;
pub use kinds::{Role, Status};
pub use messages::{Received, StoredMessage, Unanswered};
pub use migrations::latest as schema_version;
pub use observe::UsageObserver;
pub use outbox::{Booking, Item, StoredFile, Unsent};
pub use pairing::{Approved, PendingCode};
pub use panel::UsageRow;
pub use recent::Said;
pub use repair::INTERRUPTED;
pub use search::{Hit, MAX_HITS, SearchQuery};
pub use session::{SessionInfo, SessionMeta};
pub use snapshot::snapshot;
pub use spend::Spender;
pub use tasks::TaskRow;

/// The handle every part of Pincer shares; cheap to clone.
#[derive(Clone)]
pub struct Store {
    /// The one connection, and the queue of calls its writer commits together.
    writer: writer::Writer,
    /// The day's spend, kept up to date by `record_usage`: the budget gate asks before
    /// every model call, and summing the day's usage rows each time grew with the day.
    spent: Arc<Mutex<Option<spend::Spent>>>,
    /// Hears of each call's usage (the process's metrics); counts nothing until
    /// `with_observer`.
    usage: Arc<dyn UsageObserver>,
}

impl Store {
    /// Open (creating with mode 0600) and migrate the database.
    pub fn open(path: &Path) -> Result<Store> {
        let open_err = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let fresh = !path.exists();
        let mut conn = connect(path).map_err(open_err)?;
        if fresh {
            restrict_mode(path);
        }
        migrations::apply(&mut conn).map_err(|err| match err {
            migrations::MigrateError::Newer { found, known } => StoreError::Newer {
                path: path.to_path_buf(),
                found,
                known,
            },
            migrations::MigrateError::Sql(source) => open_err(source),
        })?;
        Ok(Store {
            writer: writer::Writer::new(conn),
            spent: Arc::default(),
            usage: Arc::new(pincer_provider::Unobserved),
        })
    }

    /// Tell `observer` of each model call's usage from now on (this handle and its
    /// clones made after).
    pub fn with_observer(mut self, observer: Arc<dyn UsageObserver>) -> Store {
        self.usage = observer;
        self
    }

    /// Run database work on the writer; answered once it is committed.
    async fn run<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        self.writer.run(work).await
    }
}

#[cfg(unix)]
pub(crate) fn restrict_mode(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Err(err) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
        tracing::warn!("cannot make {} private (chmod 600): {err}", path.display());
    }
}

#[cfg(not(unix))]
pub(crate) fn restrict_mode(_path: &Path) {}

#[cfg(test)]
mod tests;
