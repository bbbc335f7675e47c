//! The gateway's own file operations in the workspace. The gateway runs unconfined,
//! with the secrets and the database in reach, and any sandboxed command may have
//! written the workspace just before: so what the gateway reads, writes or removes
//! there is opened beneath the workspace with no symlink followed at any component
//! ([`Follow::Never`]), must be a regular file with no other hard links where it reads
//! or appends, and is replaced whole (temp file + rename in the same folder) where it
//! writes. A link or a file standing where a folder should be is an error, which the
//! caller logs with [`crate::explain`] — never followed.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::open::{DIR_FLAGS, Follow};
use crate::{Rel, Root};

const READ: OFlags = OFlags::RDONLY
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOCTTY)
    .union(OFlags::CLOEXEC);

/// Tells temporary files of one process apart.
static TEMP: AtomicU64 = AtomicU64::new(0);

/// Open the regular file `rel` for reading; `None` when there is nothing by that name.
/// A link, FIFO, device, folder or hard-linked file is an error.
pub fn open(root: &Root, rel: &Rel) -> io::Result<Option<(File, u64)>> {
    let fd = match root.open_strict(rel, READ, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(err) => return Err(err.into()),
    };
    let size = regular(&fd)?;
    Ok(Some((File::from(fd), size)))
}

/// The bytes of the regular file `rel`, at most `max` of them (a longer file is an
/// error, not cut); `None` when it does not exist.
pub fn read(root: &Root, rel: &Rel, max: u64) -> io::Result<Option<Vec<u8>>> {
    let Some((file, size)) = open(root, rel)? else {
        return Ok(None);
    };
    if size > max {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("{} is larger than {max} bytes", rel.path()),
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("{} grew past {max} bytes", rel.path()),
        ));
    }
    Ok(Some(bytes))
}

/// `read`, as UTF-8 text.
pub fn read_text(root: &Root, rel: &Rel, max: u64) -> io::Result<Option<String>> {
    read(root, rel, max)?
        .map(|bytes| {
            String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
        })
        .transpose()
}

/// Replace `rel` with `bytes` whole: written to a new temporary file in the same folder
/// (made beneath, no links), flushed, and renamed over the name, which replaces
/// whatever entry was there (a link is replaced, never followed). A crash leaves the
/// old file or the new one, never half.
pub fn write(root: &Root, rel: &Rel, bytes: &[u8]) -> io::Result<()> {
    let (parent, name) = rel.split_last().ok_or(Errno::ISDIR)?;
    let dir = Folder {
        fd: root.make_dir(&parent, Follow::Never)?,
    };
    dir.write(name, bytes)
}

/// Append `bytes` to the regular file `rel`, making it (and its folders) when missing.
pub fn append(root: &Root, rel: &Rel, bytes: &[u8]) -> io::Result<()> {
    root.make_parents(rel, Follow::Never)?;
    let flags = OFlags::WRONLY
        | OFlags::APPEND
        | OFlags::CREATE
        | OFlags::NONBLOCK
        | OFlags::NOCTTY
        | OFlags::CLOEXEC;
    let fd = root.open_strict(rel, flags, Mode::from_raw_mode(0o600))?;
    regular(&fd)?;
    File::from(fd).write_all(bytes)
}

/// Make the new file `rel` (and its folders); an existing entry of that name is an
/// error (`AlreadyExists`).
pub fn create_new(root: &Root, rel: &Rel) -> io::Result<File> {
    Ok(root.create_new(rel, Follow::Never)?)
}

/// Remove the file (or link) `rel`; `false` when there was none. A folder is an error.
pub fn remove(root: &Root, rel: &Rel) -> io::Result<bool> {
    let (parent, name) = rel.split_last().ok_or(Errno::ISDIR)?;
    let dir = match root.open_strict(&parent, DIR_FLAGS, Mode::empty()) {
        Ok(dir) => dir,
        Err(Errno::NOENT) => return Ok(false),
        Err(err) => return Err(err.into()),
    };
    match rustix::fs::unlinkat(&dir, name, AtFlags::empty()) {
        Ok(()) => Ok(true),
        Err(Errno::NOENT) => Ok(false),
        Err(err) => Err(err.into()),
    }
}

/// Check that `fd` is a regular file with no other names; its size.
fn regular(fd: &OwnedFd) -> io::Result<u64> {
    let stat = rustix::fs::fstat(fd)?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {}
        FileType::Directory => return Err(Errno::ISDIR.into()),
        _ => return Err(Errno::NXIO.into()),
    }
    #[allow(clippy::useless_conversion)] // the field width differs between targets
    if u64::from(stat.st_nlink) > 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the file has other hard links (it may be a second name for a file elsewhere)",
        ));
    }
    Ok(u64::try_from(stat.st_size).unwrap_or(0))
}

/// A folder opened beneath the workspace without following links, for walking and
/// tidying by descriptor: every entry is named relative to the folder's descriptor,
/// so a folder swapped for a link while it is walked cannot lead anywhere.
#[derive(Debug)]
pub struct Folder {
    fd: OwnedFd,
}

impl Folder {
    /// The workspace folder itself.
    pub fn root(root: &Root) -> io::Result<Folder> {
        let fd = rustix::fs::openat(root.fd(), ".", DIR_FLAGS, Mode::empty())?;
        Ok(Folder { fd })
    }

    /// The folder `rel`; `None` when it does not exist. A link or file there is an error.
    pub fn open(root: &Root, rel: &Rel) -> io::Result<Option<Folder>> {
        match root.open_strict(rel, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => Ok(Some(Folder { fd })),
            Err(Errno::NOENT) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    /// The entries, by name, with their type (a link is a link, not what it points to).
    pub fn entries(&self) -> io::Result<Vec<(String, FileType)>> {
        let mut names = Vec::new();
        for entry in Dir::read_from(&self.fd)? {
            let entry = entry?;
            let bytes = entry.file_name().to_bytes();
            if matches!(bytes, b"." | b"..") {
                continue;
            }
            let Ok(name) = std::str::from_utf8(bytes) else {
                // Not a name the gateway ever makes; skipped, never guessed at.
                continue;
            };
            let kind = match entry.file_type() {
                FileType::Unknown => rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
                    .map_or(FileType::Unknown, |s| FileType::from_raw_mode(s.st_mode)),
                known => known,
            };
            names.push((name.to_string(), kind));
        }
        names.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(names)
    }

    /// The folder `name` inside this one (not through a link).
    pub fn folder(&self, name: &str) -> io::Result<Folder> {
        let flags = DIR_FLAGS | OFlags::NOFOLLOW;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::empty())?;
        Ok(Folder { fd })
    }

    /// When `name` was last modified (the entry itself, a link not followed).
    pub fn modified(&self, name: &str) -> io::Result<SystemTime> {
        let stat = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)?;
        let secs = u64::try_from(stat.st_mtime).unwrap_or(0);
        Ok(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs))
    }

    /// Remove the file or link `name`.
    pub fn remove_file(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }

    /// Remove the empty folder `name`.
    pub fn remove_dir(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)?)
    }

    /// What `name` is, itself (a link is not followed).
    pub fn stat(&self, name: &str) -> io::Result<rustix::fs::Stat> {
        Ok(rustix::fs::statat(
            &self.fd,
            name,
            AtFlags::SYMLINK_NOFOLLOW,
        )?)
    }

    /// The target of the link `name`.
    pub fn read_link(&self, name: &str) -> io::Result<std::path::PathBuf> {
        let target = rustix::fs::readlinkat(&self.fd, name, Vec::new())?;
        let bytes = target.into_bytes();
        Ok(std::path::PathBuf::from(
            <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(bytes),
        ))
    }

    /// Make the link `name` pointing at `target` (the link's text; nothing is followed).
    pub fn symlink(&self, target: &std::path::Path, name: &str) -> io::Result<()> {
        Ok(rustix::fs::symlinkat(target, &self.fd, name)?)
    }

    /// Make the folder `name` here (not through a link) and open it.
    pub fn make_folder(&self, name: &str) -> io::Result<Folder> {
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(err) => return Err(err.into()),
        }
        self.folder(name)
    }

    /// Remove `name` whatever it is: a folder with everything in it (walked by
    /// descriptor, links removed as themselves), or a file, link or anything else.
    pub fn remove_tree(&self, name: &str) -> io::Result<()> {
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) => return Ok(()),
            Err(Errno::ISDIR | Errno::PERM) => {}
            Err(Errno::NOENT) => return Ok(()),
            Err(err) => return Err(err.into()),
        }
        let inner = self.folder(name)?;
        for (child, _) in inner.entries()? {
            inner.remove_tree(&child)?;
        }
        drop(inner);
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(err) => Err(err.into()),
        }
    }

    /// Replace `name` with `bytes` whole (temp file beside it, then rename), readable by
    /// its owner only (0600, as `create_new`).
    pub fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let temp = format!(
            ".{name}.tmp-{}-{}",
            std::process::id(),
            TEMP.fetch_add(1, Ordering::Relaxed)
        );
        let flags = OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::EXCL
            | OFlags::NOFOLLOW
            | OFlags::NONBLOCK
            | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, temp.as_str(), flags, Mode::from_raw_mode(0o600))?;
        let written = (|| {
            let mut file = File::from(fd);
            file.write_all(bytes)?;
            file.sync_all()?;
            rustix::fs::renameat(&self.fd, temp.as_str(), &self.fd, name)?;
            Ok(())
        })();
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, temp.as_str(), AtFlags::empty());
        }
        written
    }

    /// Open the regular file `name` in this folder for reading (no link, one name).
    pub fn open_file(&self, name: &str) -> io::Result<(File, u64)> {
        let fd = rustix::fs::openat(&self.fd, name, READ | OFlags::NOFOLLOW, Mode::empty())?;
        let size = regular(&fd)?;
        Ok((File::from(fd), size))
    }

    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn rel(path: &str) -> Rel {
        Rel::parse(path).unwrap()
    }

    #[test]
    fn whole_writes_replace_a_planted_link_and_never_write_through_one() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("precious");
        std::fs::write(&target, "precious").unwrap();
        std::fs::create_dir(ws.path().join("memory")).unwrap();
        symlink(&target, ws.path().join("memory/cat.md")).unwrap();
        let root = Root::open(ws.path()).unwrap();
        write(&root, &rel("memory/cat.md"), b"Mochi").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        assert_eq!(
            std::fs::read_to_string(ws.path().join("memory/cat.md")).unwrap(),
            "Mochi"
        );
        // What the gateway writes is the owner's to read, whatever the umask.
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &str| {
            let meta = std::fs::metadata(ws.path().join(p)).unwrap();
            meta.permissions().mode() & 0o777
        };
        assert_eq!(mode("memory/cat.md"), 0o600);
        create_new(&root, &rel("inbox-new.txt")).unwrap();
        assert_eq!(mode("inbox-new.txt"), 0o600);
        // A folder that is a link: refused, nothing made outside.
        symlink(out.path(), ws.path().join("inbox")).unwrap();
        let err = write(&root, &rel("inbox/telegram/x.txt"), b"guest's").unwrap_err();
        assert!(crate::explain(&err).contains("symlink"), "{err}");
        assert!(!out.path().join("telegram").exists());
        let err = create_new(&root, &rel("inbox/y.txt")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(Errno::LOOP.raw_os_error()));
        assert!(!out.path().join("y.txt").exists());
        // No temporary file is left behind by a refused write.
        let left: Vec<_> = std::fs::read_dir(ws.path().join("memory"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["cat.md"]);
    }

    #[test]
    fn reads_and_appends_take_only_a_regular_file_with_one_name() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let secret = out.path().join("secret");
        std::fs::write(&secret, "s3cr3t").unwrap();
        let root = Root::open(ws.path()).unwrap();
        assert_eq!(read(&root, &rel("missing.md"), 100).unwrap(), None);
        symlink(&secret, ws.path().join("link.md")).unwrap();
        assert!(read(&root, &rel("link.md"), 100).is_err());
        assert!(append(&root, &rel("link.md"), b"x").is_err());
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "s3cr3t");
        std::fs::hard_link(&secret, ws.path().join("hard.md")).unwrap();
        assert!(read(&root, &rel("hard.md"), 100).is_err());
        assert!(append(&root, &rel("hard.md"), b"x").is_err());
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "s3cr3t");
        append(&root, &rel("memory/logs/d.md"), b"one\n").unwrap();
        append(&root, &rel("memory/logs/d.md"), b"two\n").unwrap();
        assert_eq!(
            read_text(&root, &rel("memory/logs/d.md"), 100).unwrap(),
            Some("one\ntwo\n".into())
        );
        assert!(
            read(&root, &rel("memory/logs/d.md"), 3).is_err(),
            "over max"
        );
        assert!(remove(&root, &rel("link.md")).unwrap());
        assert!(secret.exists(), "the link went, not what it named");
        assert!(!remove(&root, &rel("link.md")).unwrap());
    }

    #[test]
    fn a_folder_walked_by_descriptor_never_lists_through_a_link() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("theirs"), "x").unwrap();
        std::fs::create_dir_all(ws.path().join("inbox/telegram")).unwrap();
        std::fs::write(ws.path().join("inbox/telegram/a.jpg"), "a").unwrap();
        symlink(out.path(), ws.path().join("inbox/slack")).unwrap();
        let root = Root::open(ws.path()).unwrap();
        let inbox = Folder::open(&root, &rel("inbox")).unwrap().unwrap();
        let entries = inbox.entries().unwrap();
        assert_eq!(
            entries,
            [
                ("slack".to_string(), FileType::Symlink),
                ("telegram".to_string(), FileType::Directory)
            ]
        );
        assert!(inbox.folder("slack").is_err());
        let telegram = inbox.folder("telegram").unwrap();
        assert!(telegram.open_file("a.jpg").is_ok());
        telegram.remove_file("a.jpg").unwrap();
        inbox.remove_dir("telegram").unwrap();
        assert!(out.path().join("theirs").exists());
        assert!(Folder::open(&root, &rel("inbox/slack")).is_err());
        assert!(Folder::open(&root, &rel("nothing")).unwrap().is_none());
    }
}
