//! # pincer-memory
//!
//! The assistant's curated memory as plain markdown files in the workspace. This
//! crate reads them for the system prompt; it knows nothing of channels or models.
//!
//! ## Layout
//! - `MEMORY.md` — the index, one line per entry, capped at 200 lines / 25 KB
//! - `SOUL.md`   — the persona
//! - `USER.md`   — what the assistant knows about its owner

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

/// The most of MEMORY.md that goes into a prompt.
pub const INDEX_MAX_LINES: usize = 200;
pub const INDEX_MAX_BYTES: usize = 25 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The memory files of one workspace.
#[derive(Debug, Clone)]
pub struct Memory {
    root: PathBuf,
}

/// The MEMORY.md index as it goes into the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    pub text: String,
    /// Set when the file was over the cap and only its head is used.
    pub truncated: bool,
}

impl Memory {
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            root: workspace.into(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The persona from SOUL.md, if the owner wrote one.
    pub fn persona(&self) -> Result<Option<String>, MemoryError> {
        self.read_optional("SOUL.md")
    }

    /// USER.md: facts about the owner.
    pub fn user_profile(&self) -> Result<Option<String>, MemoryError> {
        self.read_optional("USER.md")
    }

    /// The MEMORY.md index, capped at 200 lines and 25 KB (cut at a line boundary).
    pub fn index(&self) -> Result<Option<Index>, MemoryError> {
        let Some(text) = self.read_optional("MEMORY.md")? else {
            return Ok(None);
        };
        Ok(Some(cap_index(&text)))
    }

    fn read_optional(&self, name: &str) -> Result<Option<String>, MemoryError> {
        let path = self.root.join(name);
        match std::fs::read_to_string(&path) {
            Ok(text) if text.trim().is_empty() => Ok(None),
            Ok(text) => Ok(Some(text)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(MemoryError::Read { path, source }),
        }
    }
}

fn cap_index(text: &str) -> Index {
    let mut out = String::new();
    let mut truncated = false;
    for (n, line) in text.lines().enumerate() {
        if n >= INDEX_MAX_LINES || out.len() + line.len() + 1 > INDEX_MAX_BYTES {
            truncated = true;
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    if truncated {
        tracing::warn!(
            "MEMORY.md is over {INDEX_MAX_LINES} lines or {INDEX_MAX_BYTES} bytes; only its head is used — move detail into memory/<topic>.md files"
        );
    }
    Index {
        text: out,
        truncated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_is_capped_at_200_lines() {
        let text: String = (0..300).map(|n| format!("- entry {n}\n")).collect();
        let index = cap_index(&text);
        assert!(index.truncated);
        assert_eq!(index.text.lines().count(), 200);
    }

    #[test]
    fn index_is_capped_at_25_kb() {
        let line = "x".repeat(1000);
        let text: String = (0..50).map(|_| format!("{line}\n")).collect();
        let index = cap_index(&text);
        assert!(index.truncated);
        assert!(index.text.len() <= INDEX_MAX_BYTES);
    }

    #[test]
    fn missing_and_blank_files_are_none() {
        let dir = tempfile::tempdir().unwrap();
        let memory = Memory::new(dir.path());
        assert_eq!(memory.index().unwrap(), None);
        std::fs::write(dir.path().join("SOUL.md"), "  \n").unwrap();
        assert_eq!(memory.persona().unwrap(), None);
        std::fs::write(dir.path().join("MEMORY.md"), "- likes tea\n").unwrap();
        assert_eq!(memory.index().unwrap().unwrap().text, "- likes tea\n");
    }
}
