//! Workspace confinement for the file tools. Every path the model gives is relative to
//! the workspace: here it is normalised without touching the disk (`.` dropped, `..`
//! folded, absolute paths and escapes refused), then opened *beneath* the workspace
//! folder at open time, so no symlink, folder swapped mid-call, FIFO or hard link can
//! lead a tool outside or hang it. Nothing here checks a path and opens it later: that
//! would race.
//!
//! - `open`    — the workspace folder held open; `openat2(RESOLVE_BENEATH)`; folders made beneath
//! - `walk`    — the component-by-component fallback for kernels without `openat2`
//! - `regular` — opening regular files only, and the errors a file tool reports
//! - `tree`    — walking a folder by descriptors, for glob and grep
//! - `prompt`  — the prompt's own files, which file tools may not write

mod open;
pub mod prompt;
mod regular;
pub mod tree;
mod walk;

use std::path::{Component, Path, PathBuf};

use super::ToolError;

pub use open::Root;
pub use prompt::real_parts as reached;
pub use regular::{Access, Opened, io_error, open_dir, open_file, refuse, regular};

/// The text of the regular file `rel` in `workspace`, opened beneath it (no link may
/// lead out), at most `max` bytes: for the gateway's own reads of files a sandboxed
/// command could have replaced with a link (skills, HEARTBEAT.md).
pub fn read_beneath(workspace: &Path, rel: &str, max: u64) -> Result<String, ToolError> {
    use std::io::Read;
    let rel = Rel::parse(rel)?;
    let root = Root::open(workspace)?;
    let opened = open_file(&root, &rel, Access::Read)?;
    let mut text = String::new();
    opened
        .file
        .take(max)
        .read_to_string(&mut text)
        .map_err(|e| io_error("read", rel.given(), e))?;
    Ok(text)
}

/// A workspace path as the model gave it, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rel {
    /// As the model wrote it, for messages.
    given: String,
    /// The normalised components; none for the workspace itself.
    parts: Vec<String>,
}

impl Rel {
    /// Normalise `given`; an absolute path or one that climbs out with `..` is an error.
    pub fn parse(given: &str) -> Result<Self, ToolError> {
        let trimmed = given.trim();
        let path = Path::new(if trimmed.is_empty() { "." } else { trimmed });
        if path.is_absolute() || path.has_root() {
            return Err(ToolError::new(format!(
                "`{trimmed}` is an absolute path; give a path relative to the workspace"
            )));
        }
        let mut parts: Vec<String> = Vec::new();
        for component in path.components() {
            match component {
                Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(outside(trimmed));
                    }
                }
                Component::Prefix(_) | Component::RootDir => return Err(outside(trimmed)),
            }
        }
        Ok(Self {
            given: trimmed.to_string(),
            parts,
        })
    }

    /// As the model wrote it.
    pub fn given(&self) -> &str {
        &self.given
    }

    /// The normalised components.
    pub fn parts(&self) -> &[String] {
        &self.parts
    }

    /// The normalised path (`notes/../a.md` → `a.md`); `.` for the workspace itself.
    pub fn path(&self) -> String {
        if self.parts.is_empty() {
            ".".into()
        } else {
            self.parts.join("/")
        }
    }

    /// The folder holding this path and the last component; none for the workspace.
    pub fn split_last(&self) -> Option<(Rel, &str)> {
        let (last, parent) = self.parts.split_last()?;
        Some((
            Rel {
                given: self.given.clone(),
                parts: parent.to_vec(),
            },
            last,
        ))
    }
}

fn outside(rel: &str) -> ToolError {
    ToolError::new(format!(
        "`{rel}` is outside the workspace; file tools only reach files inside it"
    ))
}

/// Where `rel` is inside `workspace`, by name only: `..` folded, absolute paths and
/// escapes refused. It does not look at the disk, so it says nothing about symlinks:
/// open through [`Root`], never through this path.
pub fn confine(workspace: &Path, rel: &str) -> Result<PathBuf, ToolError> {
    let rel = Rel::parse(rel)?;
    let mut path = workspace.to_path_buf();
    path.extend(rel.parts());
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised_inside_the_workspace() {
        let ws = Path::new("/ws");
        assert_eq!(confine(ws, "notes/a.md").unwrap(), ws.join("notes/a.md"));
        assert_eq!(confine(ws, "notes/../b.md").unwrap(), ws.join("b.md"));
        assert_eq!(
            confine(ws, "./new/dir/c.md").unwrap(),
            ws.join("new/dir/c.md")
        );
        assert_eq!(confine(ws, "").unwrap(), ws);
        assert_eq!(Rel::parse("a/../secrets/b").unwrap().path(), "secrets/b");
        assert_eq!(
            Rel::parse("./secrets/a.txt").unwrap().path(),
            "secrets/a.txt"
        );
        assert_eq!(Rel::parse(" . ").unwrap().path(), ".");
        for bad in ["/etc/passwd", "../x", "notes/../../x", "a/../../x"] {
            let err = confine(ws, bad).unwrap_err().to_string();
            assert!(err.contains("workspace"), "{bad}: {err}");
        }
        let err = confine(ws, "/etc/passwd").unwrap_err().to_string();
        assert!(err.contains("absolute path"), "{err}");
    }
}

/// For tests of races: two entries swapped over and over by another thread.
#[cfg(test)]
pub mod testing {
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::thread::JoinHandle;

    use rustix::fs::{CWD, RenameFlags, renameat_with};

    /// Swaps `a` and `b` atomically (`RENAME_EXCHANGE`) in a loop until dropped.
    pub struct Swapper {
        stop: Arc<AtomicBool>,
        swaps: Arc<AtomicUsize>,
        thread: Option<JoinHandle<()>>,
    }

    impl Swapper {
        pub fn start(a: PathBuf, b: PathBuf) -> Self {
            let stop = Arc::new(AtomicBool::new(false));
            let swaps = Arc::new(AtomicUsize::new(0));
            let thread = std::thread::spawn({
                let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
                move || {
                    while !stop.load(Ordering::Relaxed) {
                        renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).unwrap();
                        swaps.fetch_add(1, Ordering::Relaxed);
                        // Let the folder's lock go now and then, so the reader gets on.
                        std::thread::yield_now();
                    }
                }
            });
            Self {
                stop,
                swaps,
                thread: Some(thread),
            }
        }

        /// How many swaps were made so far.
        pub fn swaps(&self) -> usize {
            self.swaps.load(Ordering::Relaxed)
        }
    }

    impl Drop for Swapper {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            if let Some(thread) = self.thread.take() {
                thread.join().unwrap();
            }
        }
    }
}
