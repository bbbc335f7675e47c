//! Moving what older versions kept inside the workspace into the gateway's state
//! folder, once — at the first start of a Pincer that keeps state there, when the state
//! folder does not exist yet, before any command of this version can have run (never
//! later: a command could plant a `.pincer/` or `.git` for a later "migration" to
//! adopt). `.pincer/` held the recall index, the dream's cursor, lock and journal, and
//! `.git` the memory's history. Both sat where any sandboxed command could write them,
//! so nothing is taken over blindly:
//!
//! - the old index is not reused (any table of it could have been written); only the
//!   dream's cursor is read out of it, read-only and with SQLite's `trusted_schema`
//!   off, and checked as a cursor; the index is rebuilt from the files;
//! - an unfinished dream's journal is dropped, not rolled back: its "before" texts are
//!   whatever was written there;
//! - the history's objects are copied into the new bare repository (each read and
//!   written again by id, so what arrives is what the ids say) and HEAD's branch set;
//!   the old `.git` is removed only when it tracked nothing but the memory (a
//!   repository of the owner's own is left where it is).
//!
//! What it cannot know: whether the old history or cursor was already tampered with
//! before the upgrade. The memory files themselves are what the prompt reads, and those
//! were protected all along.

use std::path::Path;

use git2::Repository;

use crate::dream::Cursor;
use crate::{MemoryError, OLD_STATE_DIR, dream, repo, search};

/// Make the state folder `state` (private to the user) and move into it what an older
/// version kept in the workspace `root`: `.pincer/` and `.git`. The caller calls this
/// only when `state` does not exist yet.
pub fn first_start(root: &Path, state: &Path) -> Result<(), MemoryError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(state)
        .map_err(|source| MemoryError::Write {
            path: state.to_path_buf(),
            source,
        })?;
    self::state(root, state)?;
    if real_dir(&root.join(".git")) {
        crate::repo::Repo::open_with(root, state, |repo| history(root, repo))?;
    }
    Ok(())
}

/// Move the old `.pincer/` of `root` into `state`, if there is one. Returns whether
/// anything was moved.
fn state(root: &Path, state: &Path) -> Result<bool, MemoryError> {
    let old = root.join(OLD_STATE_DIR);
    if !real_dir(&old) {
        return Ok(false);
    }
    let cursor = old_cursor(&old.join("memory.db"));
    let conn = search::open(state)?;
    if let Some(cursor) = cursor {
        let text = serde_json::to_string(&cursor)
            .map_err(|e| MemoryError::Invalid(format!("cannot save the dream's cursor: {e}")))?;
        search::set_state(&conn, dream::CURSOR_KEY, Some(&text))?;
    }
    if std::fs::symlink_metadata(old.join("dream-journal.json")).is_ok() {
        tracing::warn!(
            "an unfinished dream's journal from an older version was dropped, not rolled back (its contents were writable by commands); check `pincer memory log`"
        );
    }
    // `remove_dir_all` removes a link as itself, never what it points to.
    std::fs::remove_dir_all(&old).map_err(|source| MemoryError::Write { path: old, source })?;
    tracing::info!(
        "moved the memory's state from the workspace's {OLD_STATE_DIR}/ to {}",
        state.display()
    );
    Ok(true)
}

/// The dream's cursor in an old index, if it can be read as one.
fn old_cursor(db: &Path) -> Option<Cursor> {
    use rusqlite::{Connection, OpenFlags};
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(db, flags).ok()?;
    conn.pragma_update(None, "trusted_schema", "OFF").ok()?;
    let text: String = conn
        .query_row(
            "SELECT value FROM state WHERE key = ?1",
            [dream::CURSOR_KEY],
            |row| row.get(0),
        )
        .ok()?;
    serde_json::from_str(&text).ok()
}

/// A folder that is really one, not a link to one.
fn real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir())
}

/// Copy the history of the workspace's old `.git` into `into` (a new, empty bare
/// repository). Returns whether there was a history to copy.
pub(crate) fn history(root: &Path, into: &Repository) -> Result<bool, MemoryError> {
    let dir = root.join(".git");
    if !real_dir(&dir) {
        return Ok(false);
    }
    let git = |err: git2::Error| {
        MemoryError::Git(format!(
            "moving the history out of {}: {}",
            dir.display(),
            err.message()
        ))
    };
    let Ok(old) = Repository::open_bare(&dir) else {
        return Ok(false);
    };
    let Ok(head) = old.head() else {
        return Ok(false); // no commit yet: nothing to keep
    };
    let (Some(branch), Ok(commit)) = (head.name().ok().map(str::to_string), head.peel_to_commit())
    else {
        return Ok(false);
    };
    let (from, to) = (old.odb().map_err(git)?, into.odb().map_err(git)?);
    let mut failed = None;
    from.foreach(|id| {
        let copied = from
            .read(*id)
            .and_then(|object| to.write(object.kind(), object.data()));
        match copied {
            Ok(_) => true,
            Err(err) => {
                failed = Some(err);
                false
            }
        }
    })
    .map_err(git)?;
    if let Some(err) = failed {
        return Err(git(err));
    }
    into.reference(&branch, commit.id(), true, "moved from the workspace")
        .map_err(git)?;
    into.set_head(&branch).map_err(git)?;
    let ours = commit
        .tree()
        .map(|tree| repo::tracks_only_memory(&tree))
        .unwrap_or(false);
    if ours {
        std::fs::remove_dir_all(&dir).map_err(|source| MemoryError::Write { path: dir, source })?;
    } else {
        tracing::warn!(
            "the memory's history was copied out of {}, which also tracks other files: left in place (Pincer no longer uses it)",
            dir.display()
        );
    }
    tracing::info!("the memory's history now lives in the gateway's state folder");
    Ok(true)
}
