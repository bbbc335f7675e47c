//! Workspace confinement for the file tools. Every path the model gives is relative to
//! the workspace: here it is normalised without touching the disk (`.` dropped, `..`
//! folded, absolute paths and escapes refused), then opened *beneath* the workspace
//! folder at open time, so no symlink, folder swapped mid-call, FIFO or hard link can
//! lead a tool outside or hang it. Nothing here checks a path and opens it later: that
//! would race.
//!
//! Opening beneath the workspace itself is the `pincer-confine` crate's (`Root`, `Rel`);
//! this module words its errors for the model.
//!
//! - `regular` — opening regular files only, and the errors a file tool reports
//! - `tree`    — walking a folder by descriptors, for glob and grep
//! - `prompt`  — the prompt's own files, which file tools may not write

pub mod prompt;
mod regular;
pub mod tree;

use std::path::{Path, PathBuf};

use super::ToolError;

pub use pincer_confine::{Rel, RelError, Root};
pub use prompt::real_parts as reached;
pub use regular::{Access, Opened, io_error, open_dir, open_file, refuse, regular};

impl From<RelError> for ToolError {
    fn from(err: RelError) -> Self {
        ToolError::new(err.to_string())
    }
}

/// The workspace folder, opened for one call.
pub fn root(workspace: &Path) -> Result<Root, ToolError> {
    Root::open(workspace).map_err(|err| {
        ToolError::new(format!(
            "the workspace {} is not usable: {err}; check [agent] workspace in config.toml",
            workspace.display()
        ))
    })
}

/// The text of the regular file `rel` in `workspace`, opened beneath it with no link
/// followed at all, at most `max` bytes (a longer file is cut): for the gateway's own
/// reads of files a sandboxed command could have replaced (skills, HEARTBEAT.md).
pub fn read_beneath(workspace: &Path, rel: &str, max: u64) -> Result<String, ToolError> {
    use std::io::Read;
    let rel = Rel::parse(rel)?;
    let root = root(workspace)?;
    let opened = match pincer_confine::gateway::open(&root, &rel) {
        Ok(Some((file, _))) => file,
        Ok(None) => {
            return Err(io_error(
                "read",
                rel.given(),
                std::io::ErrorKind::NotFound.into(),
            ));
        }
        Err(err) => {
            return Err(ToolError::new(format!(
                "cannot read `{}`: {}",
                rel.given(),
                pincer_confine::explain(&err)
            )));
        }
    };
    let mut text = String::new();
    opened
        .take(max)
        .read_to_string(&mut text)
        .map_err(|e| io_error("read", rel.given(), e))?;
    Ok(text)
}

fn outside(rel: &str) -> ToolError {
    ToolError::from(RelError::Outside(rel.to_string()))
}

/// Where `rel` is inside `workspace`, by name only: `..` folded, absolute paths and
/// escapes refused. It does not look at the disk, so it says nothing about symlinks:
/// open through [`Root`], never through this path.
pub fn confine(workspace: &Path, rel: &str) -> Result<PathBuf, ToolError> {
    Ok(Rel::parse(rel)?.under(workspace))
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
