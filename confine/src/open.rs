//! The workspace folder held open, and paths opened beneath it at open time: `openat2`
//! with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` (and `RESOLVE_NO_SYMLINKS` for
//! [`Follow::Never`]) where the kernel has it (Linux 5.6+), else the `walk` fallback.
//! Either way nothing leads out, whatever happens to the folders meanwhile. Folders are
//! made beneath too: one `mkdirat` at a time, on a folder that was itself opened
//! beneath.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
#[cfg(any(target_os = "linux", target_os = "android"))]
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::{Rel, walk};

/// How a folder is opened on the way down.
pub const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);

/// Which symlinks an open may follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Those that stay inside the folder (the model's file tools).
    Inside,
    /// None, at any component (the gateway's own files): a link is `ELOOP`.
    Never,
}

/// Set once `openat2` answered ENOSYS: this kernel lacks it, use the walk from then on.
#[cfg(any(target_os = "linux", target_os = "android"))]
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// How often a lookup that a concurrent rename disturbed (EAGAIN) is tried again.
#[cfg(any(target_os = "linux", target_os = "android"))]
const RETRIES: usize = 16;

/// The workspace folder, opened once; every path of an operation is opened from it.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
}

impl Root {
    /// Open the folder `dir` (following links on the way to it: the owner chose it).
    pub fn open(dir: &Path) -> std::io::Result<Self> {
        let fd = rustix::fs::open(dir, DIR_FLAGS, Mode::empty())?;
        Ok(Self { fd })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Open `rel` beneath the workspace with `flags` (`mode` only with `O_CREAT`),
    /// following links that stay inside.
    pub fn open_at(&self, rel: &Rel, flags: OFlags, mode: Mode) -> rustix::io::Result<OwnedFd> {
        beneath(self.fd(), &rel.path(), flags, mode, Follow::Inside)
    }

    /// Open `rel` beneath the workspace following no symlink at all.
    pub fn open_strict(&self, rel: &Rel, flags: OFlags, mode: Mode) -> rustix::io::Result<OwnedFd> {
        beneath(self.fd(), &rel.path(), flags, mode, Follow::Never)
    }

    /// Make the folders above `rel` that are missing. Each is made with `mkdirat` on its
    /// parent, which was opened beneath the workspace, and opened beneath again before
    /// going on, so a symlink planted on the way cannot move the next folder outside.
    pub fn make_parents(&self, rel: &Rel, follow: Follow) -> rustix::io::Result<()> {
        let Some((_, dirs)) = rel.parts().split_last() else {
            return Ok(());
        };
        self.make_dirs(dirs, follow).map(drop)
    }

    /// Make the folder `rel` and those above it; returns it open.
    pub fn make_dir(&self, rel: &Rel, follow: Follow) -> rustix::io::Result<OwnedFd> {
        match self.make_dirs(rel.parts(), follow)? {
            Some(dir) => Ok(dir),
            None => beneath(self.fd(), ".", DIR_FLAGS, Mode::empty(), follow),
        }
    }

    fn make_dirs(&self, dirs: &[String], follow: Follow) -> rustix::io::Result<Option<OwnedFd>> {
        let mut parent: Option<OwnedFd> = None;
        for (i, name) in dirs.iter().enumerate() {
            let prefix = dirs[..=i].join("/");
            let dir = match beneath(self.fd(), &prefix, DIR_FLAGS, Mode::empty(), follow) {
                Err(Errno::NOENT) => {
                    let at = parent.as_ref().map_or(self.fd(), |fd| fd.as_fd());
                    match rustix::fs::mkdirat(at, name.as_str(), Mode::from_raw_mode(0o777)) {
                        // Made meanwhile by someone else: opening it below checks what it is.
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(err) => return Err(err),
                    }
                    beneath(self.fd(), &prefix, DIR_FLAGS, Mode::empty(), follow)?
                }
                other => other?,
            };
            parent = Some(dir);
        }
        Ok(parent)
    }

    /// Make the new file `rel` (its folders too), beneath the workspace and never
    /// through a symlink at its last component; an existing file of that name is an
    /// error (EEXIST). The file is readable by its owner only (0600): what the gateway
    /// writes there (what people sent, what a tool printed) may be private, and the
    /// workspace may be a folder other users of the machine can list.
    pub fn create_new(&self, rel: &Rel, follow: Follow) -> rustix::io::Result<std::fs::File> {
        let (parent, name) = rel.split_last().ok_or(Errno::ISDIR)?;
        self.make_parents(rel, follow)?;
        let dir = beneath(self.fd(), &parent.path(), DIR_FLAGS, Mode::empty(), follow)?;
        let flags = OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::EXCL
            | OFlags::NOFOLLOW
            | OFlags::NONBLOCK
            | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&dir, name, flags, Mode::from_raw_mode(0o600))?;
        Ok(std::fs::File::from(fd))
    }
}

/// Open `path` (relative, normalised) beneath the folder `dir`.
pub fn beneath(
    dir: BorrowedFd<'_>,
    path: &str,
    flags: OFlags,
    mode: Mode,
    follow: Follow,
) -> rustix::io::Result<OwnedFd> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        use rustix::fs::ResolveFlags;
        let resolve = match follow {
            Follow::Inside => ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
            Follow::Never => {
                ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS | ResolveFlags::NO_SYMLINKS
            }
        };
        for _ in 0..RETRIES {
            match rustix::fs::openat2(dir, path, flags, mode, resolve) {
                Err(Errno::AGAIN) => continue,
                Err(Errno::NOSYS) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                    return walk::open(dir, path, flags, mode, follow);
                }
                // Some container seccomp profiles answer EPERM for system calls they do
                // not know; the walk gives the real answer.
                Err(Errno::PERM) => return walk::open(dir, path, flags, mode, follow),
                other => return other,
            }
        }
        return Err(Errno::AGAIN);
    }
    walk::open(dir, path, flags, mode, follow)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn rel(path: &str) -> Rel {
        Rel::parse(path).unwrap()
    }

    const READ: OFlags = OFlags::RDONLY.union(OFlags::CLOEXEC);

    #[test]
    fn symlinks_inside_are_followed_and_symlinks_out_are_refused() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("secret"), "s").unwrap();
        std::fs::create_dir(ws.path().join("notes")).unwrap();
        std::fs::write(ws.path().join("notes/a.md"), "a").unwrap();
        symlink(out.path(), ws.path().join("out")).unwrap();
        symlink("../notes/a.md", ws.path().join("notes/up")).unwrap();
        symlink("notes", ws.path().join("in")).unwrap();
        let root = Root::open(ws.path()).unwrap();
        assert!(root.open_at(&rel("in/a.md"), READ, Mode::empty()).is_ok());
        assert!(root.open_at(&rel("notes/up"), READ, Mode::empty()).is_ok());
        assert_eq!(
            root.open_at(&rel("out/secret"), READ, Mode::empty())
                .unwrap_err(),
            Errno::XDEV
        );
        let create = OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC;
        assert!(
            root.open_at(&rel("out/new"), create, Mode::from_raw_mode(0o644))
                .is_err()
        );
        assert!(!out.path().join("new").exists());
    }

    #[test]
    fn a_strict_open_follows_no_symlink_even_inside() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("notes")).unwrap();
        std::fs::write(ws.path().join("notes/a.md"), "a").unwrap();
        symlink("notes", ws.path().join("in")).unwrap();
        symlink("a.md", ws.path().join("notes/alias")).unwrap();
        let root = Root::open(ws.path()).unwrap();
        assert!(
            root.open_strict(&rel("notes/a.md"), READ, Mode::empty())
                .is_ok()
        );
        for linked in ["in/a.md", "notes/alias"] {
            assert_eq!(
                root.open_strict(&rel(linked), READ, Mode::empty())
                    .unwrap_err(),
                Errno::LOOP,
                "{linked}"
            );
        }
        let create = OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC;
        symlink("notes/made", ws.path().join("dangling")).unwrap();
        assert!(
            root.open_strict(&rel("dangling"), create, Mode::from_raw_mode(0o644))
                .is_err()
        );
        assert!(!ws.path().join("notes/made").exists());
    }

    #[test]
    fn parents_are_made_beneath_and_never_through_a_symlink_out() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let root = Root::open(ws.path()).unwrap();
        root.make_parents(&rel("a/b/c/file.txt"), Follow::Inside)
            .unwrap();
        assert!(ws.path().join("a/b/c").is_dir());
        symlink(out.path().join("gone"), ws.path().join("dangling")).unwrap();
        for follow in [Follow::Inside, Follow::Never] {
            assert!(
                root.make_parents(&rel("dangling/x/file.txt"), follow)
                    .is_err()
            );
        }
        assert!(!out.path().join("gone").exists());
        symlink("a", ws.path().join("inner")).unwrap();
        assert_eq!(
            root.make_parents(&rel("inner/b/new/f"), Follow::Never)
                .unwrap_err(),
            Errno::LOOP
        );
        assert!(!ws.path().join("a/b/new").exists());
    }
}
