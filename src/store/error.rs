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
    #[error("a stored message part is unreadable: {0}")]
    Corrupt(#[from] serde_json::Error),
    #[error("the database worker stopped: {0}")]
    Worker(String),
    #[error("no session {0}; see `pincer sessions list`")]
    NoSession(String),
    #[error("{0}")]
    Conflict(String),
}

pub type Result<T> = std::result::Result<T, StoreError>;
