//! Writing files that may hold secrets or be read back at start-up (`config.toml`,
//! `.security.yml`), so that a crash or a full disk never leaves a half-written file:
//! write a private temporary file beside the target, fsync it, rename it over the target.
//! Also `backup`, taken before any rewrite of an existing file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes temporary files of concurrent writes within one process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces `path` with `contents`, atomically, with mode 0600 on unix. On any error the
/// old file (if any) is untouched and the temporary file is removed.
pub fn write_private(path: &Path, contents: &str) -> io::Result<()> {
    let dir = parent_dir(path);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(
        ".{}.tmp.{}.{n}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = write_new(&tmp, contents.as_bytes(), 0o600).and_then(|()| {
        std::fs::rename(&tmp, path)?;
        sync_dir(&dir);
        Ok(())
    });
    if result.is_err() {
        // Best effort: the write already failed; a leftover temp file is harmless.
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Copies `path` to `path.bak`, or `path.bak.1`, `path.bak.2`, ... if taken, with the same
/// permissions, and returns the copy's path. Never overwrites an existing backup.
pub fn backup(path: &Path) -> io::Result<PathBuf> {
    let contents = std::fs::read(path)?;
    let mode = file_mode(path)?;
    let base = path.as_os_str().to_owned();
    for n in 0u32.. {
        let mut candidate = base.clone();
        if n == 0 {
            candidate.push(".bak");
        } else {
            candidate.push(format!(".bak.{n}"));
        }
        let candidate = PathBuf::from(candidate);
        match write_new(&candidate, &contents, mode) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free backup name"))
}

/// Creates `path` (which must not exist) with `contents` and exactly `mode`, fsynced.
fn write_new(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    let mut file = create_new(path)?;
    let written = file
        .write_all(contents)
        .and_then(|()| set_mode(&file, mode))
        .and_then(|()| file.sync_all());
    if written.is_err() {
        // Best effort: leave no partial file behind; the original error is what matters.
        let _ = std::fs::remove_file(path);
    }
    written
}

#[cfg(unix)]
fn create_new(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).open(path)
}

#[cfg(unix)]
fn set_mode(file: &File, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_file: &File, _mode: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn file_mode(path: &Path) -> io::Result<u32> {
    use std::os::unix::fs::PermissionsExt;
    Ok(std::fs::metadata(path)?.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn file_mode(_path: &Path) -> io::Result<u32> {
    Ok(0o600)
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Makes the rename durable. Best effort: some filesystems refuse to fsync a directory,
/// and the data itself is already safe.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}
