//! Writing files so a crash never leaves half of one: the new content goes to a
//! temporary file beside the target, is flushed to disk, and is renamed over it. A
//! failed write (disk full, permissions) leaves the old file untouched and says which
//! file could not be written.

use std::io::Write;
use std::path::Path;

use crate::MemoryError;

/// Replace `path` with `content` atomically, creating its folder if needed.
pub fn write(path: &Path, content: &str) -> Result<(), MemoryError> {
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
pub fn remove(path: &Path) -> Result<(), MemoryError> {
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
pub fn read(path: &Path) -> Result<Option<String>, MemoryError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(MemoryError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}
