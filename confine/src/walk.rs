//! Opening beneath a folder without `openat2` (kernels before 5.6, other systems): one
//! component at a time with `O_NOFOLLOW`, each from the descriptor of the folder
//! before it. A symlink met on the way is read and its target walked the same way:
//! an absolute target, or `..` above the starting folder, is refused with `EXDEV`
//! (what `openat2` answers); under [`Follow::Never`] any symlink is refused with
//! `ELOOP`. Folders are held open while walking, so renaming or swapping one for a
//! symlink meanwhile cannot redirect the walk outside.

use std::collections::VecDeque;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::open::{DIR_FLAGS, Follow};

/// The most symlinks followed in one open, as Linux allows.
const MAX_LINKS: usize = 40;

/// Open `path` beneath `root` like `openat2(…, RESOLVE_BENEATH)` would.
pub(crate) fn open(
    root: BorrowedFd<'_>,
    path: &str,
    flags: OFlags,
    mode: Mode,
    follow: Follow,
) -> rustix::io::Result<OwnedFd> {
    let mut pending: VecDeque<String> = components(path);
    // The folders walked into below `root`; the last is where the walk is.
    let mut folders: Vec<OwnedFd> = Vec::new();
    let mut links = 0;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            folders.pop().ok_or(Errno::XDEV)?;
            continue;
        }
        let here = folders.last().map_or(root, |fd| fd.as_fd());
        let last = pending.is_empty();
        let how = if last { flags } else { DIR_FLAGS } | OFlags::NOFOLLOW;
        match rustix::fs::openat(here, name.as_str(), how, mode) {
            Ok(fd) if last => return Ok(fd),
            Ok(fd) => folders.push(fd),
            Err(err @ (Errno::LOOP | Errno::NOTDIR)) => {
                // Perhaps a symlink, which O_NOFOLLOW refused.
                let Ok(target) = rustix::fs::readlinkat(here, name.as_str(), Vec::new()) else {
                    return Err(err);
                };
                if follow == Follow::Never {
                    return Err(Errno::LOOP);
                }
                links += 1;
                if links > MAX_LINKS {
                    return Err(Errno::LOOP);
                }
                let target = target.to_string_lossy().into_owned();
                if target.starts_with('/') {
                    return Err(Errno::XDEV);
                }
                for part in components(&target).into_iter().rev() {
                    pending.push_front(part);
                }
            }
            Err(err) => return Err(err),
        }
    }
    // The path named the starting folder itself (or walked back to it).
    let here = folders.last().map_or(root, |fd| fd.as_fd());
    rustix::fs::openat(here, ".", flags, mode)
}

/// The components of a relative path, `.` and empty ones dropped.
fn components(path: &str) -> VecDeque<String> {
    path.split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    const READ: OFlags = OFlags::RDONLY.union(OFlags::CLOEXEC);

    #[test]
    fn the_walk_follows_links_inside_and_refuses_links_out() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join("a/b")).unwrap();
        std::fs::write(ws.path().join("a/b/f"), "f").unwrap();
        std::fs::write(out.path().join("secret"), "s").unwrap();
        symlink("../a/b", ws.path().join("a/up")).unwrap();
        symlink(out.path(), ws.path().join("abs")).unwrap();
        symlink("../../..", ws.path().join("a/b/climb")).unwrap();
        symlink("loop", ws.path().join("loop")).unwrap();
        let root = rustix::fs::open(ws.path(), DIR_FLAGS, Mode::empty()).unwrap();
        let at = |path: &str, flags| {
            open(
                root.as_fd(),
                path,
                flags,
                Mode::from_raw_mode(0o644),
                Follow::Inside,
            )
        };
        assert!(at("a/up/f", READ).is_ok());
        assert!(at("a/b/../b/f", READ).is_ok());
        assert!(at(".", READ | OFlags::DIRECTORY).is_ok());
        assert_eq!(at("abs/secret", READ).unwrap_err(), Errno::XDEV);
        assert_eq!(at("a/b/climb/x", READ).unwrap_err(), Errno::XDEV);
        assert_eq!(at("..", READ).unwrap_err(), Errno::XDEV);
        assert_eq!(at("loop", READ).unwrap_err(), Errno::LOOP);
        assert_eq!(at("a/missing", READ).unwrap_err(), Errno::NOENT);
        // A dangling symlink to an inside name creates the file there; to outside, nothing.
        symlink("made", ws.path().join("to-made")).unwrap();
        let create = OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC;
        assert!(at("to-made", create).is_ok());
        assert!(ws.path().join("made").exists());
        symlink(out.path().join("planted"), ws.path().join("to-out")).unwrap();
        assert_eq!(at("to-out", create).unwrap_err(), Errno::XDEV);
        assert!(!out.path().join("planted").exists());
        let strict = |path: &str| open(root.as_fd(), path, READ, Mode::empty(), Follow::Never);
        assert!(strict("a/b/f").is_ok());
        assert_eq!(strict("a/up/f").unwrap_err(), Errno::LOOP);
        assert_eq!(strict("to-made").unwrap_err(), Errno::LOOP);
    }
}

#[cfg(test)]
mod race {
    use super::*;
    use crate::testing::Swapper;
    use std::io::Read;

    /// The fallback walk under the attack `openat2` stops: a folder swapped for a
    /// symlink to outside over and over while it is opened.
    #[test]
    fn a_folder_swapped_for_a_symlink_never_leads_the_walk_outside() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("d")).unwrap();
        std::fs::write(ws.path().join("d/f"), "inside").unwrap();
        std::fs::write(out.path().join("f"), "OUTSIDE").unwrap();
        std::os::unix::fs::symlink(out.path(), ws.path().join("alt")).unwrap();
        let root = rustix::fs::open(ws.path(), DIR_FLAGS, Mode::empty()).unwrap();
        let swapper = Swapper::start(ws.path().join("d"), ws.path().join("alt"));
        while swapper.swaps() == 0 {
            std::thread::yield_now();
        }
        let (mut inside, mut refused) = (0, 0);
        // At least 400 tries, and on until both states of the folder were met.
        while inside + refused < 400 || inside == 0 || refused == 0 {
            assert!(inside + refused < 1_000_000, "the race never ran");
            let Ok(fd) = open(
                root.as_fd(),
                "d/f",
                OFlags::RDONLY,
                Mode::empty(),
                Follow::Inside,
            ) else {
                refused += 1;
                continue;
            };
            let mut text = String::new();
            std::fs::File::from(fd).read_to_string(&mut text).unwrap();
            assert_eq!(text, "inside", "the walk was led outside");
            inside += 1;
        }
    }
}
