//! # pincer-memory
//!
//! The assistant's memory as plain markdown files in the workspace, which the owner
//! can open, edit and undo. This crate reads and writes those files, finds the ones
//! that matter for a turn, keeps the daily logs, and applies and commits the dream's
//! edits. It knows nothing of channels or models: the core asks the model and hands
//! the proposed operations here.
//!
//! ## Files (relative to the workspace)
//! - `MEMORY.md`          — the index, one line per memory; the prompt gets 200 lines / 25 KB
//! - `memory/<slug>.md`   — typed memories: frontmatter `name`, `description`, `type`, dates
//! - `SOUL.md`, `USER.md` — the persona, and what the assistant knows about its owner
//! - `memory/logs/*.md`   — daily logs, one line per speaker per turn (not in git)
//!
//! ## The state folder (`$PINCER_HOME/state`, out of every command's reach)
//! - `memory.db`          — the search index, the dream's cursor and hand-edit marks
//! - `dream.lock`, `dream-journal.json` — one dream at a time; crash recovery
//! - `memory.git`         — the memory's history (a bare repository)
//!
//! Any sandboxed command may write the workspace, so nothing the gateway relies on
//! lives there, and the memory files themselves are opened beneath it with no link
//! followed (`files`); a path read back from state is checked before it is opened.
//!
//! ## Layout
//! - `entry`   — the typed file format, names and slugs, size caps
//! - `index`   — MEMORY.md: its cap and warning, its lines, repair from the files
//! - `dates`   — relative dates made absolute
//! - `daily`   — the daily logs
//! - `search`  — the FTS5 index over memory files and logs; recall
//! - `repo`    — the git repository of the curated memory
//! - `dream`   — checking, applying and committing the dream's operations; crash recovery
//! - `files`   — the memory files opened beneath the workspace, no links; whole-file writes
//! - `migrate` — moving a workspace's old `.pincer/` and `.git` into the state folder, once

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod daily;
pub mod dates;
pub mod dream;
pub mod entry;
mod files;
pub mod index;
pub mod migrate;
pub mod repo;
pub mod search;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::NaiveDate;

pub use daily::{LogCursor, Said};
pub use dream::{Cursor, FileView, Op, Outcome, Prepared};
pub use entry::{Entry, Kind};
pub use index::Index;
pub use repo::{Commit, Repo, Revision};
pub use search::{Hit, HitKind};

/// Where older versions kept their state inside the workspace (moved out by `migrate`).
pub const OLD_STATE_DIR: &str = ".pincer";
/// Recalled files added to one turn, at most.
pub const RECALL_MAX_FILES: usize = 5;
/// How much recalled text one turn gets, at most.
const RECALL_MAX_BYTES: usize = 8 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source} (nothing was changed)")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Bad input, worded so the model (or the owner) can fix it.
    #[error("{0}")]
    Invalid(String),
    #[error("no memory named `{name}`; {known}")]
    NotFound { name: String, known: String },
    #[error("memory search index: {0}")]
    Index(String),
    #[error("memory repository: {0}")]
    Git(String),
    #[error("another dream is running on this workspace; try again when it has finished")]
    Busy,
}

/// The memory files of one workspace.
#[derive(Debug, Clone)]
pub struct Memory {
    root: PathBuf,
    /// The gateway's own folder for the index, the dream's lock and journal and the
    /// history: never inside the workspace, where commands write.
    state: PathBuf,
    /// The search index's connection, opened on first use and kept: recall runs on
    /// every turn, and opening SQLite each time cost more than the query.
    index_db: Arc<Mutex<Option<rusqlite::Connection>>>,
    /// Set once an older workspace's `.pincer/` was looked for and moved (`migrate`).
    migrated: Arc<std::sync::OnceLock<()>>,
}

/// What `write` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub entry: Entry,
    /// False when it replaced an existing memory.
    pub created: bool,
    /// Relative dates that were made absolute, (as written, as stored).
    pub dates: Vec<(String, String)>,
    /// Lines in MEMORY.md now.
    pub index_lines: usize,
}

impl Memory {
    /// The memory of `workspace`, with its index, lock, journal and history in `state`.
    pub fn new(workspace: impl Into<PathBuf>, state: impl Into<PathBuf>) -> Self {
        Self {
            root: workspace.into(),
            state: state.into(),
            index_db: Arc::default(),
            migrated: Arc::default(),
        }
    }

    /// Run `work` on the search index, opening it if this is the first use or the
    /// file was removed since (it is rebuilt from the files on the next sync).
    fn with_index<T>(
        &self,
        work: impl FnOnce(&mut rusqlite::Connection) -> Result<T, MemoryError>,
    ) -> Result<T, MemoryError> {
        let mut slot = self
            .index_db
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.is_some() && !search::db_path(self.state()).exists() {
            *slot = None;
        }
        let conn = match slot.as_mut() {
            Some(conn) => conn,
            None => slot.insert(search::open(self.state())?),
        };
        work(conn)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The gateway's own folder for this memory's state. The first call of a process
    /// makes it; when it did not exist yet — the first start of a Pincer that keeps its
    /// state there, before any command of it could run — what an older version kept in
    /// the workspace (`.pincer/`, `.git`) is moved there (`migrate`). Once it exists
    /// nothing in the workspace is ever taken over again.
    pub fn state(&self) -> &Path {
        self.migrated.get_or_init(|| {
            if self.state.exists() {
                return;
            }
            if let Err(err) = migrate::first_start(&self.root, &self.state) {
                tracing::warn!("the memory's old state could not be moved: {err}");
            }
        });
        &self.state
    }

    /// The persona from SOUL.md, if the owner wrote one.
    pub fn persona(&self) -> Result<Option<String>, MemoryError> {
        self.read_optional("SOUL.md")
    }

    /// USER.md: facts about the owner.
    pub fn user_profile(&self) -> Result<Option<String>, MemoryError> {
        self.read_optional("USER.md")
    }

    /// The MEMORY.md index, capped at 200 lines and 25 KB (cut at a line boundary, with
    /// a warning line for the model when cut).
    pub fn index(&self) -> Result<Option<Index>, MemoryError> {
        let Some(text) = self.read_optional(index::FILE)? else {
            return Ok(None);
        };
        Ok(Some(index::cap(&text)))
    }

    fn read_optional(&self, name: &str) -> Result<Option<String>, MemoryError> {
        Ok(files::read(&self.root, name)?.filter(|t| !t.trim().is_empty()))
    }

    /// Every typed memory, by slug. Only regular files with one name count: a link or
    /// anything else in `memory/` is skipped (and logged), never followed.
    pub fn entries(&self) -> Result<Vec<Entry>, MemoryError> {
        let mut entries = Vec::new();
        let Some(folder) = files::folder(&self.root, entry::DIR) else {
            return Ok(entries);
        };
        let listing = folder.entries().map_err(|source| MemoryError::Read {
            path: self.root.join(entry::DIR),
            source,
        })?;
        for (name, kind) in listing {
            let Some(slug) = name.strip_suffix(".md") else {
                continue;
            };
            if name.starts_with('.') || kind != pincer_confine::FileType::RegularFile {
                continue;
            }
            match files::read(&self.root, &entry::path_of(slug)) {
                Ok(Some(text)) => entries.push(Entry::parse(slug, &text)),
                Ok(None) => {}
                Err(err) => tracing::warn!("a memory file was skipped: {err}"),
            }
        }
        entries.sort_by(|a, b| a.slug.cmp(&b.slug));
        Ok(entries)
    }

    /// One typed memory by name (or `memory/<slug>.md`).
    pub fn read(&self, name: &str) -> Result<Entry, MemoryError> {
        let slug = entry::slug(name)?;
        match files::read(&self.root, &entry::path_of(&slug))? {
            Some(text) => Ok(Entry::parse(&slug, &text)),
            None => Err(self.not_found(name)),
        }
    }

    fn not_found(&self, name: &str) -> MemoryError {
        let names: Vec<String> = self
            .entries()
            .unwrap_or_default()
            .into_iter()
            .map(|e| e.slug)
            .take(30)
            .collect();
        MemoryError::NotFound {
            name: name.to_string(),
            known: if names.is_empty() {
                "there are no memories yet".into()
            } else {
                format!("the memories are: {}", names.join(", "))
            },
        }
    }

    /// Create or replace a typed memory and its index line. Relative dates in the
    /// description and content are stored as absolute ones (against `today`).
    pub fn write(
        &self,
        name: &str,
        kind: &str,
        description: &str,
        content: &str,
        today: NaiveDate,
    ) -> Result<Written, MemoryError> {
        let slug = entry::slug(name)?;
        let kind = Kind::parse(kind).ok_or_else(|| {
            MemoryError::Invalid(format!(
                "`type` must be one of {}; got `{kind}`",
                Kind::NAMES.join(", ")
            ))
        })?;
        let (description, mut dates) = dates::absolute(description, today);
        let description = entry::check_description(&description)?;
        let (body, more) = dates::absolute(content.trim(), today);
        dates.extend(more);
        if body.is_empty() {
            return Err(MemoryError::Invalid(
                "`content` is empty; write what to remember (to remove a memory use memory_forget)"
                    .into(),
            ));
        }
        entry::check_body(&body)?;
        let path = entry::path_of(&slug);
        // A link or other non-file in the memory's place is replaced, never read through.
        let existing = self.read_replacing(&path).map(|t| Entry::parse(&slug, &t));
        let entry = Entry {
            slug: slug.clone(),
            name: name.trim().to_string(),
            description,
            kind,
            created: existing.as_ref().and_then(|e| e.created).or(Some(today)),
            updated: Some(today),
            body,
        };
        let text = entry.render();
        files::write(&self.root, &path, &text)?;
        let old_index = self.read_replacing(index::FILE).unwrap_or_default();
        let new_index = index::upsert(&old_index, &entry);
        files::write(&self.root, index::FILE, &new_index)?;
        self.note_written(&[(&path, Some(&text)), (index::FILE, Some(&new_index))]);
        Ok(Written {
            entry,
            created: existing.is_none(),
            dates,
            index_lines: new_index.lines().count(),
        })
    }

    /// A file about to be replaced whole: its text, or `None` when it is missing or is
    /// not a regular file (a planted link: logged, and the write replaces it).
    fn read_replacing(&self, rel: &str) -> Option<String> {
        files::read(&self.root, rel).unwrap_or_else(|err| {
            tracing::warn!("replacing what is not a regular file: {err}");
            None
        })
    }

    /// Delete a typed memory and its index line.
    pub fn forget(&self, name: &str) -> Result<Entry, MemoryError> {
        let entry = self.read(name)?;
        let path = entry.path();
        files::remove(&self.root, &path)?;
        let old_index = files::read(&self.root, index::FILE)?.unwrap_or_default();
        let new_index = index::remove(&old_index, &entry.slug);
        if new_index != old_index {
            files::write(&self.root, index::FILE, &new_index)?;
        }
        self.note_written(&[(&path, None), (index::FILE, Some(&new_index))]);
        Ok(entry)
    }

    /// Remember what the assistant itself wrote, so the dream can tell the owner's hand
    /// edits from the assistant's. Best effort: without it, the assistant's writes only
    /// count as the owner's (the safe side).
    fn note_written(&self, files: &[(&str, Option<&str>)]) {
        let _ = self.with_index(|conn| {
            for (path, text) in files {
                let hash = text.map_or_else(|| "deleted".to_string(), blob_hash);
                let _ = search::set_state(conn, &format!("written:{path}"), Some(&hash));
            }
            Ok(())
        });
    }

    /// Search the typed memories and the daily logs.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, MemoryError> {
        self.with_index(|conn| {
            search::sync(conn, &self.root, true)?;
            search::search(conn, query, true, limit)
        })
    }

    /// The typed memories that look relevant to `text`, rendered for the turn (at most
    /// 5 files, 8 KB), each older than a week with its age. `None` when nothing matched.
    pub fn recall(&self, text: &str, today: NaiveDate) -> Result<Option<String>, MemoryError> {
        self.recall_all(&[(text, today)]).remove(0)
    }

    /// `recall` for several messages at once: the index is brought up to date once for
    /// them all (turns that start together share one look at the files). One answer per
    /// message, in order.
    pub fn recall_all(
        &self,
        asked: &[(&str, NaiveDate)],
    ) -> Vec<Result<Option<String>, MemoryError>> {
        if asked
            .iter()
            .all(|(text, _)| search::query_of(text).is_none())
        {
            return asked.iter().map(|_| Ok(None)).collect();
        }
        let found = self.with_index(|conn| {
            if search::sync(conn, &self.root, false)? == 0 {
                return Ok(Vec::new()); // no memory files yet: nothing to recall
            }
            Ok(asked
                .iter()
                .map(|(text, _)| search::search(conn, text, false, RECALL_MAX_FILES))
                .collect())
        });
        match found {
            Ok(found) if found.is_empty() => asked.iter().map(|_| Ok(None)).collect(),
            Ok(found) => found
                .into_iter()
                .zip(asked)
                .map(|(hits, (_, today))| self.render_recalled(hits?, *today))
                .collect(),
            Err(err) => {
                let err = err.to_string();
                asked
                    .iter()
                    .map(|_| Err(MemoryError::Index(err.clone())))
                    .collect()
            }
        }
    }

    /// Recalled files as the turn gets them, read from the real files (a stale index
    /// row is skipped). The index lives out of commands' reach, but its rows are still
    /// only trusted as far as they name a typed memory file (`memory/<slug>.md`),
    /// opened beneath the workspace with no link followed: a row naming anything else
    /// is skipped and logged.
    fn render_recalled(
        &self,
        hits: Vec<Hit>,
        today: NaiveDate,
    ) -> Result<Option<String>, MemoryError> {
        let mut out = String::new();
        for hit in hits {
            let slug = match hit
                .path
                .strip_prefix("memory/")
                .and_then(|p| p.strip_suffix(".md"))
            {
                Some(slug) if !slug.is_empty() && !slug.contains('/') && !slug.starts_with('.') => {
                    slug
                }
                _ => {
                    tracing::warn!(path = %hit.path, "a recall index row that names no memory file; skipped");
                    continue;
                }
            };
            let file = match files::read(&self.root, &hit.path) {
                Ok(Some(file)) => file,
                Ok(None) => continue,
                Err(err) => {
                    tracing::warn!("a recalled memory file was skipped: {err}");
                    continue;
                }
            };
            let entry = Entry::parse(slug, &file);
            let age = entry
                .age_note(today)
                .map(|a| format!(", {a}"))
                .unwrap_or_default();
            let mut part = format!(
                "\n## {} — {} ({}{age})\n{}\n",
                hit.path,
                entry.description,
                entry.kind.as_str(),
                entry.body
            );
            if out.len() + part.len() > RECALL_MAX_BYTES {
                let room = RECALL_MAX_BYTES.saturating_sub(out.len());
                if room < 200 {
                    break;
                }
                let mut cut = room - 40;
                while !part.is_char_boundary(cut) {
                    cut -= 1;
                }
                part.truncate(cut);
                part.push_str("…\n(cut; memory_read has the rest)\n");
            }
            out.push_str(&part);
        }
        if out.is_empty() {
            return Ok(None);
        }
        Ok(Some(format!(
            "[Recalled from memory — files that may be relevant to this message; MEMORY.md lists the rest]{out}"
        )))
    }

    /// Append several turns, in order: one write to each day's log.
    pub fn log_turns(&self, turns: &[(chrono::NaiveDateTime, &[Said])]) -> Result<(), MemoryError> {
        daily::append(&self.root, turns)
    }

    /// Whether the memory's history exists yet (opening it with `repo` would create it):
    /// in the state folder, or still in an older workspace's `.git`.
    pub fn has_history(&self) -> bool {
        self.state().join(repo::GIT_DIR).exists()
            || std::fs::symlink_metadata(self.root.join(".git")).is_ok_and(|m| m.is_dir())
    }

    /// The memory's history, created on first use.
    pub fn repo(&self) -> Result<Repo, MemoryError> {
        Repo::open(&self.root, self.state())
    }

    /// The whole of MEMORY.md as the owner wrote it (for `pincer memory show`).
    pub fn index_text(&self) -> Result<Option<String>, MemoryError> {
        files::read(&self.root, index::FILE)
    }
}

/// The git blob id of a text: how the repository names that content.
pub(crate) fn blob_hash(text: &str) -> String {
    git2::Oid::hash_object(git2::ObjectType::Blob, text.as_bytes())
        .map(|id| id.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod hostile;
#[cfg(test)]
mod tests;
