//! Finding memories: an SQLite FTS5 index over the typed files and the daily logs,
//! kept in `memory.db` in the gateway's state folder and brought up to date (by each file's
//! size and modification time) before every search, so hand edits are found at once.
//! The index is a cache: deleting it loses nothing but the dream's cursor.

use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use pincer_confine::FileType;
use rusqlite::{Connection, OptionalExtension, params};
use rustix::fs::AtFlags;

use crate::entry::{self, Entry};
use crate::{MemoryError, daily, files};

/// What the memory database holds, applied in order (`PRAGMA user_version`).
const SCHEMA: &[&str] = &["CREATE TABLE files (
        path  TEXT PRIMARY KEY,
        stamp TEXT NOT NULL
    );
    CREATE VIRTUAL TABLE docs USING fts5(
        path UNINDEXED, kind UNINDEXED, name, description, body,
        tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE TABLE state (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );"];

/// Words too common to say what a message is about.
const STOPWORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "are",
    "but",
    "not",
    "you",
    "your",
    "with",
    "have",
    "this",
    "that",
    "was",
    "were",
    "what",
    "when",
    "where",
    "who",
    "how",
    "why",
    "can",
    "could",
    "would",
    "should",
    "will",
    "about",
    "from",
    "into",
    "just",
    "like",
    "our",
    "out",
    "please",
    "tell",
    "know",
    "there",
    "their",
    "they",
    "them",
    "then",
    "than",
    "its",
    "his",
    "her",
    "she",
    "him",
    "has",
    "had",
    "did",
    "does",
    "get",
    "got",
    "also",
    "any",
    "all",
    "some",
    "more",
    "most",
    "very",
    "really",
    "yes",
    "okay",
    "thanks",
    "thank",
    "hello",
    "hey",
    "now",
    "today",
    "let",
    "want",
    "need",
    "make",
    "remember",
    "memory",
    "something",
];

/// Whether a hit is a typed memory file or a daily log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HitKind {
    Memory,
    Log,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// Relative to the workspace.
    pub path: String,
    pub kind: HitKind,
    pub name: String,
    pub description: String,
    /// The matching words in context.
    pub snippet: String,
    /// When the memory last changed (a log: its day).
    pub updated: Option<NaiveDate>,
}

/// The index's file in the state folder `state`.
pub(crate) fn db_path(state: &Path) -> PathBuf {
    state.join("memory.db")
}

/// Open (creating and migrating) the memory database in the state folder `state`.
pub(crate) fn open(state: &Path) -> Result<Connection, MemoryError> {
    let path = db_path(state);
    let failed = |e: rusqlite::Error| MemoryError::Index(format!("{}: {e}", path.display()));
    std::fs::create_dir_all(state).map_err(|source| MemoryError::Write {
        path: path.clone(),
        source,
    })?;
    let conn = Connection::open(&path).map_err(failed)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(failed)?;
    // WAL lets the gateway and a CLI command read and write side by side.
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(failed)?;
    // The connection lives as long as the gateway: a small page cache (KiB) keeps its
    // memory flat; the index is a few hundred KB for years of notes.
    conn.pragma_update(None, "cache_size", -256)
        .map_err(failed)?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(failed)?;
    for (n, step) in SCHEMA.iter().enumerate().skip(version.max(0) as usize) {
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {step}; PRAGMA user_version = {}; COMMIT;",
            n + 1
        ))
        .map_err(failed)?;
    }
    Ok(conn)
}

/// One file the index should hold.
struct OnDisk {
    path: String,
    kind: HitKind,
    stamp: String,
}

fn on_disk(root: &Path, include_logs: bool) -> Vec<OnDisk> {
    let mut found = Vec::new();
    let dirs: &[(&str, HitKind)] = if include_logs {
        &[(entry::DIR, HitKind::Memory), (daily::DIR, HitKind::Log)]
    } else {
        &[(entry::DIR, HitKind::Memory)]
    };
    for &(dir, kind) in dirs {
        // A link or file where the folder should be is not listed through.
        let Some(folder) = files::folder(root, dir) else {
            continue;
        };
        let Ok(entries) = folder.entries() else {
            continue;
        };
        for (name, file_type) in entries {
            if file_type != FileType::RegularFile || !name.ends_with(".md") || name.starts_with('.')
            {
                continue;
            }
            let Ok(stat) =
                rustix::fs::statat(folder.fd(), name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
            else {
                continue;
            };
            let modified =
                i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec);
            found.push(OnDisk {
                path: format!("{dir}/{name}"),
                kind,
                stamp: format!("{modified}:{}", stat.st_size),
            });
        }
    }
    found
}

/// Bring the index up to date with the files: the typed memories, and the daily logs
/// too when `include_logs`. (Recall runs every turn and searches typed files only, so
/// it leaves the day's log — which every turn grows — to be indexed when a search
/// wants it, instead of re-indexing it whole on every message.)
///
/// Writes only when a file changed, since recall runs this on every turn. Returns how
/// many files of the kinds synced are on disk.
pub(crate) fn sync(
    conn: &mut Connection,
    root: &Path,
    include_logs: bool,
) -> Result<usize, MemoryError> {
    let failed = |e: rusqlite::Error| MemoryError::Index(e.to_string());
    let files = on_disk(root, include_logs);
    let known: Vec<(String, String)> = {
        let mut stmt = conn
            .prepare_cached("SELECT path, stamp FROM files")
            .map_err(failed)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(failed)?;
        rows.collect::<Result<_, _>>().map_err(failed)?
    };
    let logs = format!("{}/", daily::DIR);
    let gone: Vec<&String> = known
        .iter()
        .map(|(path, _)| path)
        .filter(|path| {
            (include_logs || !path.starts_with(&logs)) && !files.iter().any(|f| &f.path == *path)
        })
        .collect();
    let changed: Vec<&OnDisk> = files
        .iter()
        .filter(|file| {
            !known
                .iter()
                .any(|(p, s)| p == &file.path && s.split('|').next() == Some(file.stamp.as_str()))
        })
        .collect();
    if gone.is_empty() && changed.is_empty() {
        return Ok(files.len());
    }
    let tx = conn.transaction().map_err(failed)?;
    for path in gone {
        tx.execute("DELETE FROM docs WHERE path = ?1", [path])
            .map_err(failed)?;
        tx.execute("DELETE FROM files WHERE path = ?1", [path])
            .map_err(failed)?;
    }
    for file in changed {
        // A file that vanished, or cannot be read (a link or a FIFO swapped in since
        // the listing), is left out.
        let max = match file.kind {
            HitKind::Memory => files::MAX_FILE_BYTES,
            HitKind::Log => files::MAX_LOG_BYTES,
        };
        let Ok(Some(text)) = files::read_capped(root, &file.path, max) else {
            continue;
        };
        let (kind, name, description, body) = match file.kind {
            HitKind::Memory => {
                let slug = file
                    .path
                    .trim_start_matches("memory/")
                    .trim_end_matches(".md");
                let entry = Entry::parse(slug, &text);
                let updated = entry.updated.or(entry.created).map(|d| d.to_string());
                (
                    "memory",
                    entry.name,
                    entry.description,
                    (entry.body, updated),
                )
            }
            HitKind::Log => {
                let day = file
                    .path
                    .trim_start_matches("memory/logs/")
                    .trim_end_matches(".md")
                    .to_string();
                ("log", day.clone(), String::new(), (text, Some(day)))
            }
        };
        tx.execute("DELETE FROM docs WHERE path = ?1", [&file.path])
            .map_err(failed)?;
        tx.execute(
            "INSERT INTO docs (path, kind, name, description, body) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![file.path, kind, name, description, body.0],
        )
        .map_err(failed)?;
        tx.execute(
            "INSERT INTO files (path, stamp) VALUES (?1, ?2)
             ON CONFLICT(path) DO UPDATE SET stamp = excluded.stamp",
            params![
                file.path,
                format!("{}|{}", file.stamp, body.1.unwrap_or_default())
            ],
        )
        .map_err(failed)?;
    }
    tx.commit().map_err(failed)?;
    Ok(files.len())
}

/// The FTS5 query for free text: its telling words, any of which may match.
pub fn query_of(text: &str) -> Option<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let word = word.to_lowercase();
        if word.chars().count() < 3 || STOPWORDS.contains(&word.as_str()) || words.contains(&word) {
            continue;
        }
        words.push(word);
        if words.len() == 16 {
            break;
        }
    }
    (!words.is_empty()).then(|| {
        words
            .iter()
            .map(|w| stem(w))
            .collect::<Vec<_>>()
            .join(" OR ")
    })
}

/// A word as a query term: long words by their stem as a prefix, so "allergies"
/// finds "allergic" and "peanut" finds "peanuts", in any language.
fn stem(word: &str) -> String {
    let n = word.chars().count();
    let keep = match n {
        0..=4 => return format!("\"{word}\""),
        5..=6 => n - 1,
        _ => (n - 3).max(5),
    };
    let prefix: String = word.chars().take(keep).collect();
    format!("\"{prefix}\"*")
}

/// The best matches for `text`, typed files only or logs too.
pub(crate) fn search(
    conn: &Connection,
    text: &str,
    include_logs: bool,
    limit: usize,
) -> Result<Vec<Hit>, MemoryError> {
    let Some(query) = query_of(text) else {
        return Ok(Vec::new());
    };
    let failed = |e: rusqlite::Error| MemoryError::Index(e.to_string());
    // Cached: recall runs this on every turn.
    let mut stmt = conn
        .prepare_cached(
            "SELECT d.path, d.kind, d.name, d.description,
                    snippet(docs, 4, '', '', '…', 16), f.stamp
             FROM docs d LEFT JOIN files f ON f.path = d.path
             WHERE docs MATCH ?1 AND (?2 OR d.kind = 'memory')
             ORDER BY bm25(docs, 0.0, 0.0, 4.0, 2.0, 1.0) LIMIT ?3",
        )
        .map_err(failed)?;
    let rows = stmt
        .query_map(params![query, include_logs, limit as i64], |r| {
            let kind: String = r.get(1)?;
            let stamp: Option<String> = r.get(5)?;
            Ok(Hit {
                path: r.get(0)?,
                kind: if kind == "log" {
                    HitKind::Log
                } else {
                    HitKind::Memory
                },
                name: r.get(2)?,
                description: r.get(3)?,
                snippet: r
                    .get::<_, String>(4)?
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
                updated: stamp
                    .as_deref()
                    .and_then(|s| s.rsplit('|').next())
                    .and_then(|d| d.parse().ok()),
            })
        })
        .map_err(failed)?;
    rows.collect::<Result<_, _>>().map_err(failed)
}

/// A value kept beside the index (the dream's cursor, hashes of the assistant's writes).
pub(crate) fn get_state(conn: &Connection, key: &str) -> Result<Option<String>, MemoryError> {
    conn.query_row("SELECT value FROM state WHERE key = ?1", [key], |r| {
        r.get(0)
    })
    .optional()
    .map_err(|e| MemoryError::Index(e.to_string()))
}

pub(crate) fn set_state(
    conn: &Connection,
    key: &str,
    value: Option<&str>,
) -> Result<(), MemoryError> {
    let result = match value {
        Some(value) => conn.execute(
            "INSERT INTO state (key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        ),
        None => conn.execute("DELETE FROM state WHERE key = ?1", [key]),
    };
    result
        .map(|_| ())
        .map_err(|e| MemoryError::Index(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_keep_the_telling_words() {
        assert_eq!(
            query_of("What do you know about my peanut allergy?").as_deref(),
            Some("\"peanu\"* OR \"aller\"*")
        );
        assert_eq!(query_of("hi"), None);
    }

    #[test]
    fn files_are_found_and_hand_edits_are_seen_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("memory/logs")).unwrap();
        std::fs::write(
            root.join("memory/peanuts.md"),
            "---\nname: peanuts\ndescription: allergic to peanuts\ntype: user\nupdated: 2026-10-06\n---\nCarries an EpiPen.\n",
        )
        .unwrap();
        std::fs::write(
            root.join("memory/logs/2026-11-22.md"),
            "- talked about bicycles\n",
        )
        .unwrap();
        let mut conn = open(root).unwrap();
        sync(&mut conn, root, true).unwrap();
        let hits = search(&conn, "any allergies?", false, 5).unwrap();
        assert_eq!(hits.len(), 1, "allergies finds allergic");
        assert_eq!(hits[0].path, "memory/peanuts.md");
        assert_eq!(hits[0].updated, "2026-10-06".parse().ok());
        assert!(search(&conn, "bicycles", false, 5).unwrap().is_empty());
        assert_eq!(
            search(&conn, "bicycles", true, 5).unwrap()[0].kind,
            HitKind::Log
        );
        std::fs::write(
            root.join("memory/peanuts.md"),
            "now about tulips, a longer text\n",
        )
        .unwrap();
        sync(&mut conn, root, true).unwrap();
        assert_eq!(search(&conn, "tulips", false, 5).unwrap().len(), 1);
        std::fs::remove_file(root.join("memory/peanuts.md")).unwrap();
        sync(&mut conn, root, true).unwrap();
        assert!(search(&conn, "tulips", false, 5).unwrap().is_empty());
    }

    #[test]
    fn recall_leaves_the_growing_daily_log_alone() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("memory/logs")).unwrap();
        let log = root.join("memory/logs/2026-11-22.md");
        std::fs::write(&log, "- talked about bicycles\n").unwrap();
        let mut conn = open(root).unwrap();
        sync(&mut conn, root, false).unwrap();
        assert!(
            search(&conn, "bicycles", true, 5).unwrap().is_empty(),
            "not indexed by recall"
        );
        sync(&mut conn, root, true).unwrap();
        assert_eq!(search(&conn, "bicycles", true, 5).unwrap().len(), 1);
        std::fs::write(&log, "- talked about bicycles\n- and kites\n").unwrap();
        sync(&mut conn, root, false).unwrap();
        // Neither re-indexed nor dropped by a recall's sync.
        assert_eq!(search(&conn, "bicycles", true, 5).unwrap().len(), 1);
        assert!(search(&conn, "kites", true, 5).unwrap().is_empty());
    }
}
