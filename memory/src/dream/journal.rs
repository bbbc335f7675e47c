//! The dream's journal: before a dream writes anything, it records every file it is
//! about to touch (its text before and after) and the revision it started from. A
//! dream that dies part-way leaves the journal behind; the next one rolls the files
//! back to how they were (unless the owner changed them since, or the commit had
//! already been made) and starts again. Each file is written whole (temp + rename),
//! so a file is always either before or after, never half.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{MemoryError, atomic};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    /// HEAD when the dream started; a HEAD that moved means it committed.
    pub head: Option<String>,
    pub files: Vec<Touched>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Touched {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

pub fn path(root: &Path) -> PathBuf {
    root.join(crate::STATE_DIR).join("dream-journal.json")
}

pub fn write(root: &Path, journal: &Journal) -> Result<(), MemoryError> {
    let text = serde_json::to_string(journal)
        .map_err(|e| MemoryError::Invalid(format!("cannot record the dream's journal: {e}")))?;
    atomic::write(&path(root), &text)
}

pub fn clear(root: &Path) -> Result<(), MemoryError> {
    atomic::remove(&path(root))
}

/// Undo what an unfinished dream left, if anything. Returns what was rolled back.
pub fn recover(root: &Path, head: Option<&str>) -> Result<Vec<String>, MemoryError> {
    let Some(text) = atomic::read(&path(root))? else {
        return Ok(Vec::new());
    };
    let Ok(journal) = serde_json::from_str::<Journal>(&text) else {
        tracing::warn!("the dream journal is unreadable; removing it");
        clear(root)?;
        return Ok(Vec::new());
    };
    let mut undone = Vec::new();
    if journal.head.as_deref() == head {
        for file in &journal.files {
            let full = root.join(&file.path);
            // What cannot be read (a folder in its place) is not the dream's to undo.
            let Ok(now) = atomic::read(&full) else {
                continue;
            };
            // Only a file still exactly as the dream left it is rolled back: anything
            // else was changed since by someone else, and their version wins.
            if now == file.after && now != file.before {
                match &file.before {
                    Some(text) => atomic::write(&full, text)?,
                    None => atomic::remove(&full)?,
                }
                undone.push(file.path.clone());
            }
        }
        if !undone.is_empty() {
            tracing::warn!(files = ?undone, "an unfinished dream was rolled back");
        }
    }
    clear(root)?;
    Ok(undone)
}
