//! The files the system prompt is built from — SOUL.md, USER.md, MEMORY.md and every
//! file under memory/ — which write_file and edit_file must not change: they change
//! only through the memory tools and the dream, which keep the index and its history
//! right. Refused by name before opening, and again by what the open really reached
//! (a symlink, or another spelling on a case-insensitive disk). A write that reaches
//! skills/ or HEARTBEAT.md only through a symlink or another name is refused too, so the
//! owner's approval for them (`permissions`) cannot be side-stepped.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use rustix::fs::AtFlags;

use super::{Opened, Rel, Root, ToolError};

/// The prompt's files at the workspace root.
pub const FILES: [&str; 3] = ["SOUL.md", "USER.md", pincer_memory::index::FILE];
/// The folder of memory entries.
pub const DIR: &str = pincer_memory::entry::DIR;
/// The skills folder; writing there needs the owner's approval.
pub const SKILLS: &str = "skills";
/// The heartbeat's orders, run as the owner; writing them needs the owner's approval.
pub const HEARTBEAT: &str = "HEARTBEAT.md";

/// What a write is about to change.
pub enum Target<'a> {
    /// An existing file, opened (not yet changed).
    File(&'a Opened),
    /// A file to be made with this name in this folder (opened beneath the workspace).
    New { dir: BorrowedFd<'a>, name: &'a str },
}

/// Whether these workspace path components name a prompt file.
pub fn is_prompt_file(parts: &[String]) -> bool {
    match parts {
        [] => false,
        [only] => only == DIR || FILES.contains(&only.as_str()),
        [first, ..] => first == DIR,
    }
}

/// Refuse writing `rel` when its name is a prompt file.
pub fn refuse_by_name(rel: &Rel) -> Result<(), ToolError> {
    if is_prompt_file(rel.parts()) {
        return Err(refusal(rel.given()));
    }
    Ok(())
}

/// Refuse writing `target` when it really is a prompt file, or lies in skills/ while
/// `rel` does not say so.
pub fn refuse_reached(root: &Root, rel: &Rel, target: &Target) -> Result<(), ToolError> {
    if let Target::File(opened) = target {
        let same = FILES
            .iter()
            .any(|name| identity(root.fd(), name) == Some(opened.id));
        if same {
            return Err(refusal(rel.given()));
        }
    }
    let real = match target {
        Target::File(opened) => real_parts(root, opened.file.as_fd()),
        Target::New { dir, name } => real_parts(root, *dir).map(|mut parts| {
            parts.push((*name).to_string());
            parts
        }),
    };
    let Some(real) = real else {
        // Where the file lies is unknown (no /proc): its name was checked already.
        return Ok(());
    };
    let first = real.first().map(String::as_str).unwrap_or_default();
    if is_prompt_file(&real) || same_entry(root.fd(), first, DIR) {
        return Err(refusal(rel.given()));
    }
    let into_skills = first == SKILLS || same_entry(root.fd(), first, SKILLS);
    if into_skills && rel.parts().first().map(String::as_str) != Some(SKILLS) {
        return Err(ToolError::new(format!(
            "`{}` leads into {SKILLS}/ through a symlink; write to `{SKILLS}/…` by its own path so the owner is asked first",
            rel.given()
        )));
    }
    let heartbeat = match target {
        Target::File(opened) => identity(root.fd(), HEARTBEAT) == Some(opened.id),
        Target::New { .. } => {
            real.len() == 1 && (first == HEARTBEAT || same_entry(root.fd(), first, HEARTBEAT))
        }
    };
    if heartbeat && rel.path() != HEARTBEAT {
        return Err(ToolError::new(format!(
            "`{}` is {HEARTBEAT} by another name; write `{HEARTBEAT}` by its own path so the owner is asked first",
            rel.given()
        )));
    }
    Ok(())
}

fn refusal(given: &str) -> ToolError {
    ToolError::new(format!(
        "`{given}` is part of the assistant's prompt (SOUL.md, USER.md, MEMORY.md, memory/); it changes only through the memory tools (memory_write / memory_forget) and the dream, not write_file or edit_file"
    ))
}

/// Device and inode of `name` in `dir` (symlinks followed).
fn identity(dir: BorrowedFd<'_>, name: &str) -> Option<(u64, u64)> {
    let stat = rustix::fs::statat(dir, name, AtFlags::empty()).ok()?;
    Some(super::regular::identity(&stat))
}

/// Whether the entries `a` and `b` of `dir` are the same (one may be another spelling
/// of the other on a case-insensitive disk).
fn same_entry(dir: BorrowedFd<'_>, a: &str, b: &str) -> bool {
    if a.is_empty() {
        return false;
    }
    let stat = |name| rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok();
    match (stat(a), stat(b)) {
        (Some(a), Some(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        _ => false,
    }
}

/// Where the open `fd` really is, as components below the workspace; none where the
/// kernel does not say (no /proc).
pub fn real_parts(root: &Root, fd: BorrowedFd<'_>) -> Option<Vec<String>> {
    let path = |fd: BorrowedFd<'_>| std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()));
    let (root, file) = (path(root.fd()).ok()?, path(fd).ok()?);
    let below = file.strip_prefix(&root).ok()?;
    Some(
        below
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect(),
    )
}
