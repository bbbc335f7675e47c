//! The store's error type. Every store call returns it; a message a user can meet
//! names the fix (the command, the flag, the file).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the database {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "{path} was written by a newer Pincer (database schema {found}; this one knows up to {known}): upgrade pincer, or give this one its own home with --home"
    )]
    Newer {
        path: PathBuf,
        found: usize,
        known: usize,
    },
    #[error(
        "database error: {0} (if the disk is full, free space and retry; nothing stored so far is lost)"
    )]
    Sql(#[from] rusqlite::Error),
    /// Text in an enum's column this build does not know.
    #[error(
        "the database holds `{value}` in {table}.{column}, which this Pincer does not know: another program changed it or a newer Pincer wrote it; upgrade pincer, or restore pincer.db from a backup"
    )]
    Corrupt {
        table: &'static str,
        column: &'static str,
        value: String,
    },
    /// A `parts.body` that does not parse.
    #[error(
        "message {message_id} has a part this Pincer cannot read ({source}): another program changed the database or a newer Pincer wrote it; upgrade pincer, or restore pincer.db from a backup"
    )]
    BadPart {
        message_id: i64,
        source: serde_json::Error,
    },
    #[error("cannot encode a message part for the database: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("the database worker stopped: {0}")]
    Worker(String),
    #[error("no session {0}; see `pincer sessions list`")]
    NoSession(String),
    #[error("the conversation {0} exists already; fork into a new one (another --conversation-id)")]
    SessionExists(String),
    #[error(
        "a job named `{name}` exists already; pick another name or remove it first (`pincer cron remove {name}`)"
    )]
    JobExists { name: String },
}

impl StoreError {
    /// `value`, read from `table.column`, is not one this build knows.
    pub(super) fn corrupt(table: &'static str, column: &'static str, value: &str) -> StoreError {
        StoreError::Corrupt {
            table,
            column,
            value: value.to_string(),
        }
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;
