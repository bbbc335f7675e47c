//! The dream's journal: before a dream writes anything, it records every file it is
//! about to touch (its text before and after) and the revision it started from. A
//! dream that dies part-way leaves the journal behind; the next one rolls the files
//! back to how they were (unless the owner changed them since, or the commit had
//! already been made) and starts again. Each file is written whole (temp + rename),
//! so a file is always either before or after, never half.
//!
//! The journal lives in the gateway's state folder, out of every command's reach;
//! still, recovery writes only what a dream may write: each path must be a memory
//! file the repository tracks (`MEMORY.md`, `SOUL.md`, `USER.md`, `memory/<name>.md`),
//! plain (no `..`, not absolute), and is opened beneath the workspace with no link
//! followed. Anything else in a journal is refused and logged, never written.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::{self, state};
use crate::{MemoryError, repo};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Journal {
    /// HEAD when the dream started; a HEAD that moved means it committed.
    pub head: Option<String>,
    pub files: Vec<Touched>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Touched {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// The journal's file in the state folder `state`.
pub(super) fn path(state: &Path) -> PathBuf {
    state.join("dream-journal.json")
}

pub(super) fn write(state: &Path, journal: &Journal) -> Result<(), MemoryError> {
    let text = serde_json::to_string(journal)
        .map_err(|e| MemoryError::Invalid(format!("cannot record the dream's journal: {e}")))?;
    state::write(&path(state), &text)
}

pub(super) fn clear(state: &Path) -> Result<(), MemoryError> {
    state::remove(&path(state))
}

/// Whether an unfinished dream left a journal.
pub(super) fn pending(state: &Path) -> bool {
    path(state).exists()
}

/// Undo what an unfinished dream left in the workspace `root`, if anything. Returns
/// what was rolled back.
pub(super) fn recover(
    root: &Path,
    state: &Path,
    head: Option<&str>,
) -> Result<Vec<String>, MemoryError> {
    let Some(text) = state::read(&path(state))? else {
        return Ok(Vec::new());
    };
    let Ok(journal) = serde_json::from_str::<Journal>(&text) else {
        tracing::warn!("the dream journal is unreadable; removing it");
        clear(state)?;
        return Ok(Vec::new());
    };
    let mut undone = Vec::new();
    if journal.head.as_deref() == head {
        for file in &journal.files {
            if !repo::is_tracked(&file.path) || file.path == ".gitignore" {
                tracing::warn!(path = %file.path, "the dream journal names a file no dream writes; refused");
                continue;
            }
            // What cannot be read (a folder or a link in its place) is not the dream's
            // to undo.
            let now = match files::read(root, &file.path) {
                Ok(now) => now,
                Err(err) => {
                    tracing::warn!("not rolled back: {err}");
                    continue;
                }
            };
            // Only a file still exactly as the dream left it is rolled back: anything
            // else was changed since by someone else, and their version wins.
            if now == file.after && now != file.before {
                match &file.before {
                    Some(text) => files::write(root, &file.path, text)?,
                    None => files::remove(root, &file.path)?,
                }
                undone.push(file.path.clone());
            }
        }
        if !undone.is_empty() {
            tracing::warn!(files = ?undone, "an unfinished dream was rolled back");
        }
    }
    clear(state)?;
    Ok(undone)
}
