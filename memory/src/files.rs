//! The memory's files, read and written as the gateway must treat a workspace that any
//! sandboxed command may have written: every path is opened beneath the workspace with
//! no symlink followed at any component (`pincer-confine`), reads take only a regular
//! file with one name, and writes replace a file whole (temp + rename beside it, flushed
//! first), so a crash leaves the old file or the new one and a planted link is replaced,
//! never written through. A failed write leaves the old file untouched and says which
//! file and why.
//!
//! `state` is the gateway's own folder (`$PINCER_HOME/state`), which no command can
//! reach: plain paths there.

use std::io::Write;
use std::path::Path;

use pincer_confine::{Rel, Root, gateway};

use crate::MemoryError;

/// The largest memory file read: MEMORY.md is capped far lower for the prompt, a typed
/// memory's body at 16 KB; anything this big was not written by Pincer.
pub(crate) const MAX_FILE_BYTES: u64 = 1 << 20;
/// The largest daily log read.
pub(crate) const MAX_LOG_BYTES: u64 = 64 << 20;

/// The error for `rel`, with the reason a link or non-file stood in the way.
fn failed(root: &Path, rel: &str, write: bool, err: std::io::Error) -> MemoryError {
    let path = root.join(rel);
    let source = std::io::Error::new(err.kind(), pincer_confine::explain(&err));
    if write {
        MemoryError::Write { path, source }
    } else {
        MemoryError::Read { path, source }
    }
}

fn open(root: &Path, rel: &str, write: bool) -> Result<(Root, Rel), MemoryError> {
    let parsed = Rel::plain(rel).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let dir = Root::open(root).map_err(|e| failed(root, "", write, e))?;
    Ok((dir, parsed))
}

/// The text of `rel`, `None` when it does not exist. A link, or anything but a regular
/// file with one name, is an error.
pub(crate) fn read(root: &Path, rel: &str) -> Result<Option<String>, MemoryError> {
    read_capped(root, rel, MAX_FILE_BYTES)
}

/// `read` with another size cap.
pub(crate) fn read_capped(root: &Path, rel: &str, max: u64) -> Result<Option<String>, MemoryError> {
    let (dir, parsed) = open(root, rel, false)?;
    gateway::read_text(&dir, &parsed, max).map_err(|e| failed(root, rel, false, e))
}

/// The bytes of `rel` (any encoding), at most `max`; `None` when it does not exist.
pub(crate) fn read_bytes(root: &Path, rel: &str, max: u64) -> Result<Option<Vec<u8>>, MemoryError> {
    let (dir, parsed) = open(root, rel, false)?;
    gateway::read(&dir, &parsed, max).map_err(|e| failed(root, rel, false, e))
}

/// Whether `rel` exists as a regular file with one name (`false`: nothing there); a
/// link or anything else there is an error. Nothing is read.
pub(crate) fn probe(root: &Path, rel: &str) -> Result<bool, MemoryError> {
    let (dir, parsed) = open(root, rel, false)?;
    gateway::open(&dir, &parsed)
        .map(|file| file.is_some())
        .map_err(|e| failed(root, rel, false, e))
}

/// Replace `rel` with `content` whole, making its folders (beneath, no links).
pub(crate) fn write(root: &Path, rel: &str, content: &str) -> Result<(), MemoryError> {
    let (dir, parsed) = open(root, rel, true)?;
    gateway::write(&dir, &parsed, content.as_bytes()).map_err(|e| failed(root, rel, true, e))
}

/// Remove `rel` (a link there is removed as itself); a file already gone is fine.
pub(crate) fn remove(root: &Path, rel: &str) -> Result<(), MemoryError> {
    let (dir, parsed) = open(root, rel, true)?;
    gateway::remove(&dir, &parsed)
        .map(drop)
        .map_err(|e| failed(root, rel, true, e))
}

/// Append `bytes` to the regular file `rel` (made with its folders when missing).
pub(crate) fn append(root: &Path, rel: &str, bytes: &[u8]) -> Result<(), MemoryError> {
    let (dir, parsed) = open(root, rel, true)?;
    gateway::append(&dir, &parsed, bytes).map_err(|e| failed(root, rel, true, e))
}

/// The folder `rel`, opened beneath without links; `None` when missing or when a link
/// or file stands there (logged: the gateway never lists through one).
pub(crate) fn folder(root: &Path, rel: &str) -> Option<gateway::Folder> {
    let (dir, parsed) = open(root, rel, false).ok()?;
    match gateway::Folder::open(&dir, &parsed) {
        Ok(folder) => folder,
        Err(err) => {
            tracing::warn!(
                path = %root.join(rel).display(),
                "not read: {}",
                pincer_confine::explain(&err)
            );
            None
        }
    }
}

/// Files in the gateway's own state folder, out of every command's reach.
pub(crate) mod state {
    use super::*;

    /// Replace `path` with `content` atomically, creating its folder if needed.
    pub(crate) fn write(path: &Path, content: &str) -> Result<(), MemoryError> {
        let failed = |source| MemoryError::Write {
            path: path.to_path_buf(),
            source,
        };
        let dir = path.parent().unwrap_or_else(|| Path::new("."));
        std::fs::create_dir_all(dir).map_err(failed)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        let result = (|| {
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(content.as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temp, path)
        })();
        if let Err(err) = result {
            // The temporary file is ours; the target is untouched either way.
            let _ = std::fs::remove_file(&temp);
            return Err(failed(err));
        }
        Ok(())
    }

    /// Remove `path`; a file that is already gone is fine.
    pub(crate) fn remove(path: &Path) -> Result<(), MemoryError> {
        match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(MemoryError::Write {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// The file's text, `None` when it does not exist.
    pub(crate) fn read(path: &Path) -> Result<Option<String>, MemoryError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Some(text)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(MemoryError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }
}
