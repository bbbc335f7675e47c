//! # pincer-confine
//!
//! Opening files beneath one folder — the agent's workspace — so that nothing in it
//! can lead an open outside: not `..`, not an absolute path, not a symlink, not a
//! folder swapped for a link while the open runs. Every path is resolved at open time
//! (`openat2` with `RESOLVE_BENEATH`, or a component-by-component walk on kernels
//! without it), never checked first and opened later, which would race.
//!
//! Two strengths, because two kinds of code open workspace files:
//! - [`Follow::Inside`] — the model's file tools: a symlink may lead anywhere inside
//!   the folder, never out.
//! - [`Follow::Never`] — the gateway's own reads and writes (memory files, daily logs,
//!   attachments, saved tool output, retention): no symlink at any component. Any
//!   sandboxed command may have written the workspace, so what the gateway acts on
//!   there must be exactly the regular file it names.
//!
//! ## Layout
//! - `open`    — [`Root`], the folder held open; opening beneath it; folders made beneath
//! - `walk`    — the fallback walk for kernels without `openat2`
//! - `gateway` — the gateway's strict file operations: read, whole-file write, append,
//!   create, remove, list
//! - `testing` — (feature `testing`) two entries swapped over and over, for race tests
//!
//! It knows nothing of tools, models or messages: callers word their own errors.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod gateway;
mod open;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod walk;

use std::path::{Component, Path, PathBuf};

pub use open::{DIR_FLAGS, Follow, Root, beneath};
pub use rustix::fs::{FileType, Mode, OFlags};
pub use rustix::io::Errno;

/// A path given relative to the workspace, normalised without touching the disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rel {
    /// As it was given, for messages.
    given: String,
    /// The normalised components; none for the workspace itself.
    parts: Vec<String>,
}

/// Why a path is not a workspace path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelError {
    Absolute(String),
    Outside(String),
}

impl std::fmt::Display for RelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RelError::Absolute(given) => write!(
                f,
                "`{given}` is an absolute path; give a path relative to the workspace"
            ),
            RelError::Outside(given) => write!(
                f,
                "`{given}` is outside the workspace; file tools only reach files inside it"
            ),
        }
    }
}

impl std::error::Error for RelError {}

impl Rel {
    /// Normalise `given` (`.` dropped, `..` folded); an absolute path or one that climbs
    /// out with `..` is an error.
    pub fn parse(given: &str) -> Result<Self, RelError> {
        let trimmed = given.trim();
        let path = Path::new(if trimmed.is_empty() { "." } else { trimmed });
        if path.is_absolute() || path.has_root() {
            return Err(RelError::Absolute(trimmed.to_string()));
        }
        let mut parts: Vec<String> = Vec::new();
        for component in path.components() {
            match component {
                Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(RelError::Outside(trimmed.to_string()));
                    }
                }
                Component::Prefix(_) | Component::RootDir => {
                    return Err(RelError::Outside(trimmed.to_string()));
                }
            }
        }
        Ok(Self {
            given: trimmed.to_string(),
            parts,
        })
    }

    /// A path the gateway itself names, which must already be plain: relative, no `.`
    /// or `..`, no empty component. State a command could have written (an index row,
    /// a journal entry) goes through this, so `memory/../../x` is refused, not folded.
    pub fn plain(given: &str) -> Result<Self, RelError> {
        let plain = !given.is_empty()
            && !given.starts_with('/')
            && given
                .split('/')
                .all(|part| !part.is_empty() && part != "." && part != "..");
        if !plain {
            return Err(if given.starts_with('/') {
                RelError::Absolute(given.to_string())
            } else {
                RelError::Outside(given.to_string())
            });
        }
        Self::parse(given)
    }

    /// As it was given.
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

    /// `self` joined with more components (each a plain name).
    pub fn join(&self, name: &str) -> Rel {
        let mut parts = self.parts.clone();
        parts.extend(
            name.split('/')
                .filter(|p| !p.is_empty() && *p != ".")
                .map(str::to_string),
        );
        let given = if self.parts.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.path())
        };
        Rel { given, parts }
    }

    /// Where this path is below `root`, by name only (for messages and logs; never
    /// open it: that would follow whatever links are there).
    pub fn under(&self, root: &Path) -> PathBuf {
        let mut path = root.to_path_buf();
        path.extend(&self.parts);
        path
    }
}

/// Why an open beneath the workspace failed, in words for a log line or a message.
pub fn explain(err: &std::io::Error) -> String {
    match err.raw_os_error().map(Errno::from_raw_os_error) {
        Some(Errno::LOOP) => {
            "a symlink stands in the way (the gateway follows none in the workspace)".into()
        }
        Some(Errno::XDEV) => "it leads outside the workspace".into(),
        Some(Errno::NOTDIR) => "a file stands where a folder should be".into(),
        Some(Errno::NXIO) => "it is a FIFO or socket, not a regular file".into(),
        _ => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised_inside_the_workspace() {
        let ws = Path::new("/ws");
        let under = |p: &str| Rel::parse(p).map(|r| r.under(ws));
        assert_eq!(under("notes/a.md").unwrap(), ws.join("notes/a.md"));
        assert_eq!(under("notes/../b.md").unwrap(), ws.join("b.md"));
        assert_eq!(under("./new/dir/c.md").unwrap(), ws.join("new/dir/c.md"));
        assert_eq!(under("").unwrap(), ws);
        assert_eq!(Rel::parse("a/../secrets/b").unwrap().path(), "secrets/b");
        assert_eq!(Rel::parse(" . ").unwrap().path(), ".");
        for bad in ["/etc/passwd", "../x", "notes/../../x", "a/../../x"] {
            assert!(Rel::parse(bad).is_err(), "{bad}");
        }
        let err = Rel::parse("/etc/passwd").unwrap_err().to_string();
        assert!(err.contains("absolute path"), "{err}");
        let err = Rel::parse("../x").unwrap_err().to_string();
        assert!(err.contains("outside the workspace"), "{err}");
    }

    #[test]
    fn state_the_gateway_reads_back_must_name_plain_paths() {
        assert_eq!(Rel::plain("memory/cat.md").unwrap().path(), "memory/cat.md");
        for bad in [
            "",
            "/etc/passwd",
            "../.security.yml",
            "memory/../../x",
            "memory/../MEMORY.md",
            "./MEMORY.md",
            "memory//cat.md",
        ] {
            assert!(Rel::plain(bad).is_err(), "{bad:?}");
        }
    }
}
