//! The dream, the memory side: `prepare` takes the dream lock, rolls back what an
//! unfinished dream left, repairs the index from the files, and gathers what the model
//! needs (the memory files — marking those the owner edited by hand since the last
//! dream — and the daily logs since the cursor); `finish` checks the model's
//! operations, applies the good ones under a journal, commits, and only then moves the
//! cursor. A file that changed while the model was thinking is not touched: the
//! owner's edit wins.

mod journal;
pub mod ops;

use std::collections::BTreeMap;
use std::fs::File;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

pub use ops::{Change, MAX_OPS, Op};

use crate::daily::{self, LogCursor, LogsSince};
use crate::entry::Entry;
use crate::repo::{Commit, Repo};
use crate::{Memory, MemoryError, blob_hash, files, index, search};

pub(crate) const CURSOR_KEY: &str = "dream.cursor";

/// Where an unfinished dream's journal is kept in the state folder `state`.
#[cfg(test)]
pub(crate) fn journal_path(state: &std::path::Path) -> std::path::PathBuf {
    journal::path(state)
}

/// How far the dream has read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub logs: LogCursor,
    /// Transcript messages up to this time (unix ms) were read.
    pub transcript_ms: i64,
    /// When the last dream finished (unix ms), 0 before the first.
    pub last_dream_ms: i64,
}

/// One memory file as the dream sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileView {
    pub path: String,
    pub text: String,
    /// Changed by the owner since the last dream (not by the assistant's own writes).
    pub hand_edited: bool,
    /// Shown to the model. A file left out (over the dream's token cap) is not changed.
    pub shown: bool,
}

/// A dream in progress: holds the lock until finished or dropped.
pub struct Prepared {
    _lock: File,
    pub cursor: Cursor,
    pub logs: LogsSince,
    pub files: Vec<FileView>,
    /// Files an unfinished earlier dream had changed and that were put back.
    pub rolled_back: Vec<String>,
    /// The index disagreed with the files and was repaired.
    pub repaired_index: bool,
}

impl Prepared {
    /// Whether anything changed in the memory files since the last dream.
    pub fn anything_edited(&self) -> bool {
        self.files.iter().any(|f| f.hand_edited)
    }
}

/// What a dream did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub commit: Option<Commit>,
    /// "created memory/tea.md", "updated USER.md", "deleted memory/old.md".
    pub applied: Vec<String>,
    /// Operations refused, with the reason.
    pub refused: Vec<String>,
    /// Operations on files that changed while the dream ran.
    pub skipped: Vec<String>,
}

/// Where `finish` stops, for the crash tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Never,
    /// Return right after writing this many files, as if the process died there.
    AfterWrites(usize),
}

impl Memory {
    /// The dream's cursor (the default before the first dream).
    pub fn dream_cursor(&self) -> Result<Cursor, MemoryError> {
        let conn = search::open(self.state())?;
        Ok(search::get_state(&conn, CURSOR_KEY)?
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default())
    }

    /// Put the memory files back as they were at `rev`, as a new commit (edits not yet
    /// committed are committed first). Waits for no dream: refused while one runs.
    pub fn restore(&self, rev: &str) -> Result<Option<Commit>, MemoryError> {
        let _lock = self.lock()?;
        let repo = self.repo()?;
        journal::recover(self.root(), self.state(), repo.head()?.as_deref())?;
        repo.restore(rev)
    }

    /// Roll back what a dream that died part-way left, if anything (the gateway does it
    /// as it starts, so the memory is whole before any turn reads it). Returns the files
    /// put back; `Busy` while a dream runs.
    pub fn recover(&self) -> Result<Vec<String>, MemoryError> {
        let _lock = self.lock()?;
        let head = match journal::pending(self.state()) {
            true => self.repo()?.head()?,
            false => return Ok(Vec::new()),
        };
        journal::recover(self.root(), self.state(), head.as_deref())
    }

    /// The dream lock: one dream (or restore) at a time per workspace, released when
    /// the file is dropped or the process dies.
    fn lock(&self) -> Result<File, MemoryError> {
        let lock_path = self.state().join("dream.lock");
        let failed = |source| MemoryError::Write {
            path: lock_path.clone(),
            source,
        };
        std::fs::create_dir_all(self.state()).map_err(failed)?;
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(failed)?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(MemoryError::Busy),
            Err(std::fs::TryLockError::Error(source)) => return Err(failed(source)),
        }
        Ok(lock)
    }

    /// Start a dream. `max_log_bytes` caps how much of the logs it reads (the rest
    /// waits for the next dream).
    pub fn prepare_dream(&self, max_log_bytes: usize) -> Result<Prepared, MemoryError> {
        let root = self.root();
        let lock = self.lock()?;
        let repo = self.repo()?;
        let rolled_back = journal::recover(root, self.state(), repo.head()?.as_deref())?;
        let entries = self.entries()?;
        let current_index = files::read(root, index::FILE)?.unwrap_or_default();
        let repaired_index = match index::reconcile(&current_index, &entries) {
            Some(fixed) => {
                tracing::info!("MEMORY.md disagreed with the memory files; repaired it");
                files::write(root, index::FILE, &fixed)?;
                true
            }
            None => false,
        };
        let cursor = self.dream_cursor()?;
        let logs = daily::since(root, cursor.logs.clone(), max_log_bytes)?;
        let files = self.views(&repo, &entries)?;
        Ok(Prepared {
            _lock: lock,
            cursor,
            logs,
            files,
            rolled_back,
            repaired_index,
        })
    }

    /// The memory files with their hand-edit marks.
    fn views(&self, repo: &Repo, entries: &[Entry]) -> Result<Vec<FileView>, MemoryError> {
        let changed = repo.changed()?;
        let conn = search::open(self.state())?;
        let mut paths: Vec<String> = vec![index::FILE.into(), "SOUL.md".into(), "USER.md".into()];
        paths.extend(entries.iter().map(Entry::path));
        let mut views = Vec::new();
        for path in paths {
            let Some(text) = files::read(self.root(), &path)? else {
                continue;
            };
            let written = search::get_state(&conn, &format!("written:{path}"))?;
            let hand_edited =
                changed.contains(&path) && written.as_deref() != Some(blob_hash(&text).as_str());
            views.push(FileView {
                path,
                text,
                hand_edited,
                shown: true,
            });
        }
        Ok(views)
    }

    /// Check, apply and commit the dream's operations, then move the cursor to `next`.
    pub fn finish_dream(
        &self,
        prepared: Prepared,
        ops: &[Op],
        today: NaiveDate,
        next: Cursor,
    ) -> Result<Outcome, MemoryError> {
        self.finish(prepared, ops, today, next, Stop::Never)
    }

    pub(crate) fn finish(
        &self,
        prepared: Prepared,
        ops: &[Op],
        today: NaiveDate,
        next: Cursor,
        stop: Stop,
    ) -> Result<Outcome, MemoryError> {
        let root = self.root();
        let mut outcome = Outcome::default();
        let seen: BTreeMap<&str, &FileView> = prepared
            .files
            .iter()
            .map(|f| (f.path.as_str(), f))
            .collect();
        let read = |path: &str| files::read(root, path).ok().flatten();
        let hand_edited = |path: &str| seen.get(path).is_some_and(|f| f.hand_edited);
        // The planned text of each touched file (None: deleted).
        let mut plan: BTreeMap<String, Option<String>> = BTreeMap::new();
        let mut entries: BTreeMap<String, Entry> = self
            .entries()?
            .into_iter()
            .map(|e| (e.slug.clone(), e))
            .collect();
        for (n, op) in ops.iter().enumerate() {
            let label = format!(
                "{} {}",
                op.op,
                op.path.as_deref().or(op.name.as_deref()).unwrap_or("")
            );
            if n >= MAX_OPS {
                outcome
                    .refused
                    .push(format!("{label}: over the limit of {MAX_OPS} operations"));
                continue;
            }
            let change = match ops::check(op, today, &read, &hand_edited) {
                Ok(change) => change,
                Err(reason) => {
                    tracing::warn!("dream operation refused: {label}: {reason}");
                    outcome.refused.push(format!("{}: {reason}", label.trim()));
                    continue;
                }
            };
            let path = change.path().to_string();
            if seen.get(path.as_str()).is_some_and(|f| !f.shown) {
                outcome.refused.push(format!(
                    "{}: the file was not shown to this dream (over its token cap)",
                    label.trim()
                ));
                continue;
            }
            let before = seen.get(path.as_str()).map(|f| f.text.clone());
            if read(&path) != before {
                outcome.skipped.push(format!(
                    "{path}: changed while the dream ran; the newer version is kept"
                ));
                continue;
            }
            match change {
                Change::Write { text, entry, .. } => {
                    if let Some(entry) = entry {
                        entries.insert(entry.slug.clone(), entry);
                    }
                    plan.insert(path, Some(text));
                }
                Change::Delete { .. } => {
                    let slug = path.trim_start_matches("memory/").trim_end_matches(".md");
                    entries.remove(slug);
                    plan.insert(path, None);
                }
            }
        }
        // The index follows the files: the entry lines of written and deleted files.
        let mut index_text = plan
            .get(index::FILE)
            .cloned()
            .flatten()
            .unwrap_or_else(|| read(index::FILE).unwrap_or_default());
        for (path, text) in &plan {
            let Some(slug) = path
                .strip_prefix("memory/")
                .and_then(|p| p.strip_suffix(".md"))
            else {
                continue;
            };
            index_text = match (text, entries.get(slug)) {
                (Some(_), Some(entry)) => index::upsert(&index_text, entry),
                _ => index::remove(&index_text, slug),
            };
        }
        let all: Vec<Entry> = entries.into_values().collect();
        if let Some(fixed) = index::reconcile(&index_text, &all) {
            index_text = fixed;
        }
        // No index yet and nothing to list: none is created.
        if !(index_text.trim().is_empty() && read(index::FILE).is_none()) {
            plan.insert(index::FILE.into(), Some(index_text));
        }
        let files: Vec<journal::Touched> = plan
            .into_iter()
            .map(|(path, after)| journal::Touched {
                before: read(&path),
                path,
                after,
            })
            .filter(|t| t.before != t.after)
            .collect();
        if !files.is_empty() {
            let repo = self.repo()?;
            let head = repo.head()?;
            journal::write(
                self.state(),
                &journal::Journal {
                    head: head.clone(),
                    files: files.clone(),
                },
            )?;
            for (n, file) in files.iter().enumerate() {
                if stop == Stop::AfterWrites(n) {
                    return Ok(outcome);
                }
                let written = match &file.after {
                    Some(text) => files::write(root, &file.path, text),
                    None => files::remove(root, &file.path),
                };
                if let Err(err) = written {
                    // Disk full, permissions: put back what was written, so the error's
                    // "nothing was changed" holds. What cannot be put back now is put
                    // back by the next dream, from the journal.
                    if let Err(undo) = journal::recover(root, self.state(), head.as_deref()) {
                        tracing::error!("cannot roll the dream back yet: {undo}");
                    }
                    return Err(err);
                }
                outcome.applied.push(format!(
                    "{} {}",
                    match (&file.before, &file.after) {
                        (None, _) => "created",
                        (_, None) => "deleted",
                        _ => "updated",
                    },
                    file.path
                ));
            }
            outcome.commit = repo.commit("Dream")?;
            journal::clear(self.state())?;
        }
        let conn = search::open(self.state())?;
        let text = serde_json::to_string(&next)
            .map_err(|e| MemoryError::Invalid(format!("cannot save the dream's cursor: {e}")))?;
        search::set_state(&conn, CURSOR_KEY, Some(&text))?;
        if outcome.commit.is_some() {
            // Committed: from here on, a change is the owner's or the assistant's anew.
            conn.execute("DELETE FROM state WHERE key LIKE 'written:%'", [])
                .map_err(|e| MemoryError::Index(e.to_string()))?;
        }
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests;
