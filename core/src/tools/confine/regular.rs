//! Opening a workspace path for a file tool, and the errors the model sees. Files are
//! regular files only: a FIFO, socket or device is refused as soon as it is opened
//! (with `O_NONBLOCK`, so opening a FIFO never waits for a writer), and so is a file
//! with other hard links: a hard link can be a second name for a file outside the
//! workspace, and nothing at open time can tell where its other names are.

use std::fs::File;
use std::os::fd::OwnedFd;

use rustix::fs::{FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use super::{Rel, Root, ToolError, outside};
use pincer_confine::DIR_FLAGS;

/// What a file is opened for. Files are never truncated or created by opening:
/// the caller checks what it opened first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    /// Read, then write back (edit_file).
    Update,
}

impl Access {
    pub fn flags(self) -> OFlags {
        let base = OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
        base | match self {
            Self::Read => OFlags::RDONLY,
            Self::Write => OFlags::WRONLY,
            Self::Update => OFlags::RDWR,
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Update => "edit",
        }
    }
}

/// An open regular file with its size and identity.
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    pub size: u64,
    /// Device and inode: which file it really is, whatever name reached it.
    pub id: (u64, u64),
}

/// Open the existing regular file `rel` for `access`.
pub fn open_file(root: &Root, rel: &Rel, access: Access) -> Result<Opened, ToolError> {
    let fd = root
        .open_at(rel, access.flags(), Mode::empty())
        .map_err(|err| refuse(rel, access.verb(), err))?;
    regular(rel, fd)
}

/// Check that `fd`, opened for `rel`, is a regular file with no other hard links.
pub fn regular(rel: &Rel, fd: OwnedFd) -> Result<Opened, ToolError> {
    let given = rel.given();
    let stat = rustix::fs::fstat(&fd).map_err(|err| io_error("read", given, err.into()))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {}
        FileType::Directory => {
            return Err(ToolError::new(format!(
                "`{given}` is a folder, not a file; list_dir shows what is in it"
            )));
        }
        other => return Err(not_regular(given, kind(other))),
    }
    if links(&stat) > 1 {
        return Err(ToolError::new(format!(
            "`{given}` has other hard links; refused so a link cannot reach a file outside the workspace (copy it to a new file with exec if you need it)"
        )));
    }
    Ok(Opened {
        file: File::from(fd),
        size: u64::try_from(stat.st_size).unwrap_or(0),
        id: identity(&stat),
    })
}

/// Device and inode: which file `stat` describes.
#[allow(clippy::useless_conversion)] // the field widths differ between targets
pub(super) fn identity(stat: &Stat) -> (u64, u64) {
    (u64::from(stat.st_dev), u64::from(stat.st_ino))
}

/// How many names the file has.
#[allow(clippy::useless_conversion)] // the field width differs between targets
pub(super) fn links(stat: &Stat) -> u64 {
    u64::from(stat.st_nlink)
}

/// Open the folder `rel`.
pub fn open_dir(root: &Root, rel: &Rel) -> Result<OwnedFd, ToolError> {
    root.open_at(rel, DIR_FLAGS, Mode::empty())
        .map_err(|err| match err {
            Errno::NOTDIR => ToolError::new(format!(
                "`{}` is a file, not a folder; read_file reads it",
                rel.given()
            )),
            err => refuse(rel, "list", err),
        })
}

/// The error for a failed open of `rel`, worded for the model.
pub fn refuse(rel: &Rel, what: &str, err: Errno) -> ToolError {
    let given = rel.given();
    match err {
        Errno::XDEV => outside(given),
        Errno::LOOP => ToolError::new(format!(
            "`{given}` goes through too many symlinks (or a /proc link); give the real path inside the workspace"
        )),
        Errno::NXIO => not_regular(given, "FIFO or socket"),
        Errno::ISDIR => ToolError::new(format!("`{given}` is a folder, not a file")),
        err => io_error(what, given, err.into()),
    }
}

fn not_regular(given: &str, kind: &str) -> ToolError {
    ToolError::new(format!(
        "`{given}` is a {kind}, not a regular file; file tools only open regular files"
    ))
}

fn kind(file_type: FileType) -> &'static str {
    match file_type {
        FileType::Fifo => "FIFO (named pipe)",
        FileType::Socket => "socket",
        FileType::CharacterDevice | FileType::BlockDevice => "device",
        _ => "special file",
    }
}

/// An I/O error on `rel`, with a hint where one helps.
pub fn io_error(what: &str, rel: &str, err: std::io::Error) -> ToolError {
    let hint = match err.kind() {
        std::io::ErrorKind::NotFound => " (no such file; list_dir shows what exists)",
        std::io::ErrorKind::StorageFull => " (the disk is full)",
        _ => "",
    };
    ToolError::new(format!("cannot {what} `{rel}`: {err}{hint}"))
}
