//! Walking a workspace folder for glob and grep by descriptors. Each folder is opened
//! from its parent's descriptor with `O_NOFOLLOW`, so a folder swapped for a symlink
//! mid-walk is skipped, never followed out. Symlinks are not followed at all, `.git`
//! folders are skipped, and only regular files are visited; a visited file opens the
//! same way (no FIFO, device or hard-linked file is ever read).

use std::ffi::CString;
use std::fs::File;
use std::ops::ControlFlow;
use std::os::fd::{AsFd, BorrowedFd};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};

use super::{Rel, Root, ToolError, open_dir};
use pincer_confine::DIR_FLAGS;

/// Deepest folder nesting walked; deeper folders are not searched.
const MAX_DEPTH: usize = 64;

/// A regular file met on the walk.
pub struct Entry<'a> {
    from: From<'a>,
    /// The path below the folder walked (`notes/a.md`).
    pub below: &'a str,
    /// The path below the workspace.
    pub path: &'a str,
}

/// Where an entry opens from.
enum From<'a> {
    /// A name in a folder met on the walk: opened without following a symlink.
    Listed {
        dir: BorrowedFd<'a>,
        name: &'a CString,
    },
    /// The path the tool was given, when it names a file: opened beneath the workspace.
    Given { root: &'a Root, rel: &'a Rel },
}

impl Entry<'_> {
    /// Open the file for reading if it is still a regular file with one link and at
    /// most `max_bytes` long; none otherwise.
    pub fn open(&self, max_bytes: u64) -> Option<File> {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = match &self.from {
            From::Listed { dir, name } => rustix::fs::openat(
                *dir,
                name.as_c_str(),
                flags | OFlags::NOFOLLOW,
                Mode::empty(),
            ),
            From::Given { root, rel } => root.open_at(rel, flags, Mode::empty()),
        }
        .ok()?;
        let stat = rustix::fs::fstat(&fd).ok()?;
        let links = super::regular::links(&stat);
        let fits = u64::try_from(stat.st_size).is_ok_and(|size| size <= max_bytes);
        (FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile && links == 1 && fits)
            .then(|| File::from(fd))
    }
}

/// Visit every regular file under `rel` (or `rel` itself when it is one), in name order,
/// until `visit` breaks.
pub fn walk(
    root: &Root,
    rel: &Rel,
    visit: &mut dyn FnMut(&Entry) -> ControlFlow<()>,
) -> Result<(), ToolError> {
    let base = if rel.parts().is_empty() {
        String::new()
    } else {
        rel.path()
    };
    match open_dir(root, rel) {
        Ok(dir) => {
            let _ = folder(dir.as_fd(), &base, "", 0, visit);
            Ok(())
        }
        Err(not_a_folder) => {
            let entry = Entry {
                from: From::Given { root, rel },
                below: "",
                path: &base,
            };
            // A single file: visited when it is a regular one.
            if entry.open(u64::MAX).is_none() {
                return Err(not_a_folder);
            }
            let _ = visit(&entry);
            Ok(())
        }
    }
}

fn folder(
    dir: BorrowedFd<'_>,
    base: &str,
    below: &str,
    depth: usize,
    visit: &mut dyn FnMut(&Entry) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let Ok(entries) = Dir::read_from(dir) else {
        return ControlFlow::Continue(());
    };
    let mut names: Vec<(CString, FileType)> = entries
        .filter_map(Result::ok)
        .filter(|e| !matches!(e.file_name().to_bytes(), b"." | b".."))
        .map(|e| (e.file_name().to_owned(), e.file_type()))
        .collect();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, hint) in &names {
        let shown = name.to_string_lossy();
        let below = join(below, &shown);
        let path = join(base, &below);
        match file_type(dir, name, *hint) {
            FileType::Directory if shown != ".git" && depth < MAX_DEPTH => {
                let flags = DIR_FLAGS | OFlags::NOFOLLOW;
                // Gone or swapped for a symlink since it was listed: skipped.
                let Ok(inner) = rustix::fs::openat(dir, name.as_c_str(), flags, Mode::empty())
                else {
                    continue;
                };
                folder(inner.as_fd(), base, &below, depth + 1, visit)?;
            }
            FileType::RegularFile => {
                let entry = Entry {
                    from: From::Listed { dir, name },
                    below: &below,
                    path: &path,
                };
                visit(&entry)?;
            }
            _ => {}
        }
    }
    ControlFlow::Continue(())
}

/// The type of `name` in `dir`, asking the disk when the listing did not say.
fn file_type(dir: BorrowedFd<'_>, name: &CString, hint: FileType) -> FileType {
    match hint {
        FileType::Unknown => rustix::fs::statat(dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
            .map_or(FileType::Unknown, |s| FileType::from_raw_mode(s.st_mode)),
        known => known,
    }
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}/{b}"),
    }
}

/// The entries of the folder `rel`, sorted, folders ending with `/` (symlinks are not
/// followed to tell).
pub fn list(root: &Root, rel: &Rel) -> Result<Vec<String>, ToolError> {
    let dir = open_dir(root, rel)?;
    let entries =
        Dir::read_from(&dir).map_err(|err| super::io_error("list", rel.given(), err.into()))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| super::io_error("list", rel.given(), err.into()))?;
        let name = entry.file_name().to_owned();
        if matches!(name.to_bytes(), b"." | b"..") {
            continue;
        }
        let mut shown = name.to_string_lossy().into_owned();
        if file_type(dir.as_fd(), &name, entry.file_type()) == FileType::Directory {
            shown.push('/');
        }
        names.push(shown);
    }
    names.sort();
    Ok(names)
}
