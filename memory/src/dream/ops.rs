//! The dream's operations, as the model proposes them, and the checks each must pass
//! before anything is written: only `memory/<slug>.md`, `USER.md`, `SOUL.md` and the
//! index may be touched; `SOUL.md`, `USER.md` and `MEMORY.md` are never deleted; every
//! file stays under its size cap. A refused operation is reported, never applied.

use chrono::NaiveDate;
use serde::Deserialize;

use crate::entry::{self, Entry, Kind};
use crate::{MemoryError, dates, index};

/// The most operations one dream may apply.
pub const MAX_OPS: usize = 50;
/// The most SOUL.md or USER.md may hold.
pub const MAX_PROFILE_BYTES: usize = 16 * 1024;

/// One operation as the model wrote it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Op {
    /// create | update | delete | index
    #[serde(default)]
    pub op: String,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub content: Option<String>,
}

/// What a checked operation does to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Write this text to `path` (for typed files, with its index line).
    Write {
        path: String,
        text: String,
        entry: Option<Entry>,
    },
    Delete {
        path: String,
    },
}

impl Change {
    pub fn path(&self) -> &str {
        match self {
            Change::Write { path, .. } | Change::Delete { path } => path,
        }
    }
}

/// Why an operation is refused, worded for the dream's report (and the model).
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("unknown op `{0}`; use create, update, delete or index")]
    UnknownOp(String),
    #[error("it names no `path`")]
    NoPath,
    /// The `name` it gave makes no slug.
    #[error(transparent)]
    BadName(MemoryError),
    #[error("`{0}` is outside memory/")]
    Outside(String),
    #[error("`{0}` is not a memory file; use memory/<lower-case-slug>.md, USER.md or SOUL.md")]
    NotMemory(String),
    #[error("{0} is never deleted")]
    NeverDeleted(&'static str),
    #[error("{0} does not exist")]
    Missing(String),
    #[error("{0} was edited by the owner since the last dream; it is kept")]
    HandEdited(String),
    #[error("{0} would be emptied")]
    Emptied(&'static str),
    #[error("{name} would be {bytes} bytes, over the cap of {} KB", MAX_PROFILE_BYTES / 1024)]
    ProfileTooBig { name: &'static str, bytes: usize },
    #[error(
        "the index would be {lines} lines / {bytes} bytes, over its cap of {} lines / {} KB",
        index::MAX_LINES,
        index::MAX_BYTES / 1024
    )]
    IndexTooBig { lines: usize, bytes: usize },
    #[error("{0}: `content` is empty (to remove a memory, delete it)")]
    NoContent(String),
    /// The body or description breaks a rule of memory files.
    #[error("{path}: {source}")]
    Invalid { path: String, source: MemoryError },
    #[error("{path}: type `{kind}` is not one of {}", Kind::NAMES.join(", "))]
    UnknownType { path: String, kind: String },
    #[error("{0}: a new memory needs a `type`")]
    NoType(String),
    #[error("{0}: a new memory needs a `description`")]
    NoDescription(String),
}

/// Where an operation points, once checked.
enum Target {
    Typed(String),
    Profile(&'static str),
    Index,
}

fn target(op: &Op) -> Result<Target, Refused> {
    let given = match (&op.path, &op.name) {
        (Some(path), _) if !path.trim().is_empty() => path.trim().to_string(),
        (_, Some(name)) => entry::path_of(&entry::slug(name).map_err(Refused::BadName)?),
        _ => return Err(Refused::NoPath),
    };
    if given.contains("..") || given.starts_with('/') || given.contains('\\') || given.contains(':')
    {
        return Err(Refused::Outside(given));
    }
    match given.as_str() {
        "USER.md" => return Ok(Target::Profile("USER.md")),
        "SOUL.md" => return Ok(Target::Profile("SOUL.md")),
        index::FILE => return Ok(Target::Index),
        _ => {}
    }
    match given
        .strip_prefix("memory/")
        .and_then(|p| p.strip_suffix(".md"))
    {
        Some(slug) if entry::is_slug(slug) => Ok(Target::Typed(slug.to_string())),
        _ => Err(Refused::NotMemory(given)),
    }
}

/// Check one operation against the files as they are (`current` reads a file's text)
/// and turn it into a change. `Err` says why it is refused.
pub fn check(
    op: &Op,
    today: NaiveDate,
    current: &dyn Fn(&str) -> Option<String>,
    hand_edited: &dyn Fn(&str) -> bool,
) -> Result<Change, Refused> {
    let content = op.content.as_deref().unwrap_or_default();
    let verb = op.op.trim().to_ascii_lowercase();
    if verb == "index" {
        return index_change(content);
    }
    if !matches!(verb.as_str(), "create" | "update" | "delete") {
        return Err(Refused::UnknownOp(op.op.clone()));
    }
    let target = target(op)?;
    match (verb.as_str(), target) {
        ("delete", Target::Profile(name)) => Err(Refused::NeverDeleted(name)),
        ("delete", Target::Index) => Err(Refused::NeverDeleted(index::FILE)),
        ("delete", Target::Typed(slug)) => {
            let path = entry::path_of(&slug);
            if current(&path).is_none() {
                return Err(Refused::Missing(path));
            }
            if hand_edited(&path) {
                return Err(Refused::HandEdited(path));
            }
            Ok(Change::Delete { path })
        }
        (_, Target::Index) => index_change(content),
        (_, Target::Profile(name)) => {
            if content.trim().is_empty() {
                return Err(Refused::Emptied(name));
            }
            if content.len() > MAX_PROFILE_BYTES {
                return Err(Refused::ProfileTooBig {
                    name,
                    bytes: content.len(),
                });
            }
            let mut text = dates::absolute(content, today).0.trim_end().to_string();
            text.push('\n');
            Ok(Change::Write {
                path: name.to_string(),
                text,
                entry: None,
            })
        }
        (_, Target::Typed(slug)) => typed_change(op, &slug, content, today, current),
    }
}

fn index_change(content: &str) -> Result<Change, Refused> {
    if content.len() > index::MAX_BYTES || content.lines().count() > index::MAX_LINES {
        return Err(Refused::IndexTooBig {
            lines: content.lines().count(),
            bytes: content.len(),
        });
    }
    let mut text = content.trim_end().to_string();
    text.push('\n');
    Ok(Change::Write {
        path: index::FILE.into(),
        text,
        entry: None,
    })
}

fn typed_change(
    op: &Op,
    slug: &str,
    content: &str,
    today: NaiveDate,
    current: &dyn Fn(&str) -> Option<String>,
) -> Result<Change, Refused> {
    let path = entry::path_of(slug);
    let existing = current(&path).map(|text| Entry::parse(slug, &text));
    if content.trim().is_empty() {
        return Err(Refused::NoContent(path));
    }
    let invalid = |source| Refused::Invalid {
        path: path.clone(),
        source,
    };
    entry::check_body(content).map_err(invalid)?;
    let kind = match (&op.kind, &existing) {
        (Some(kind), _) => Kind::parse(kind).ok_or_else(|| Refused::UnknownType {
            path: path.clone(),
            kind: kind.clone(),
        })?,
        (None, Some(old)) => old.kind,
        (None, None) => return Err(Refused::NoType(path)),
    };
    let description = match (&op.description, &existing) {
        (Some(d), _) => entry::check_description(&dates::absolute(d, today).0).map_err(invalid)?,
        (None, Some(old)) if !old.description.is_empty() => old.description.clone(),
        _ => return Err(Refused::NoDescription(path)),
    };
    let entry = Entry {
        slug: slug.to_string(),
        name: op
            .name
            .clone()
            .filter(|n| !n.trim().is_empty())
            .or_else(|| existing.as_ref().map(|e| e.name.clone()))
            .unwrap_or_else(|| slug.to_string()),
        description,
        kind,
        created: existing.as_ref().and_then(|e| e.created).or(Some(today)),
        updated: Some(today),
        body: dates::absolute(content, today).0,
    };
    Ok(Change::Write {
        path,
        text: entry.render(),
        entry: Some(entry),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(json: &str) -> Op {
        serde_json::from_str(json).unwrap()
    }

    fn checked(json: &str) -> Result<Change, String> {
        let existing = |path: &str| {
            matches!(path, "USER.md" | "SOUL.md" | "memory/tea.md")
                .then(|| "---\nname: tea\ndescription: tea\ntype: user\n---\ntea\n".to_string())
        };
        check(&op(json), "2026-11-22".parse().unwrap(), &existing, &|p| {
            p == "memory/tea.md"
        })
        .map_err(|refused| refused.to_string())
    }

    #[test]
    fn escapes_protected_files_and_huge_files_are_refused() {
        let err = checked(
            r#"{"op":"create","path":"../etc/passwd","type":"user","description":"x","content":"x"}"#,
        );
        assert!(err.unwrap_err().contains("outside memory/"));
        let err = checked(r#"{"op":"update","path":"memory/../../x.md","content":"x"}"#);
        assert!(err.unwrap_err().contains("outside memory/"));
        assert!(
            checked(r#"{"op":"delete","path":"SOUL.md"}"#)
                .unwrap_err()
                .contains("never deleted")
        );
        assert!(
            checked(r#"{"op":"delete","path":"USER.md"}"#)
                .unwrap_err()
                .contains("never deleted")
        );
        assert!(
            checked(r#"{"op":"delete","path":"MEMORY.md"}"#)
                .unwrap_err()
                .contains("never deleted")
        );
        let huge = format!(
            r#"{{"op":"create","path":"memory/big.md","type":"user","description":"big","content":"{}"}}"#,
            "x".repeat(10 * 1024 * 1024)
        );
        assert!(checked(&huge).unwrap_err().contains("at most 16 KB"));
        assert!(checked(r#"{"op":"create","path":"notes/x.md","type":"user","description":"x","content":"x"}"#).is_err());
        assert!(
            checked(r#"{"op":"chmod","path":"memory/x.md"}"#)
                .unwrap_err()
                .contains("unknown op")
        );
        assert!(
            checked(r#"{"op":"delete","path":"memory/tea.md"}"#)
                .unwrap_err()
                .contains("edited by the owner")
        );
    }

    #[test]
    fn a_new_memory_gets_frontmatter_and_absolute_dates() {
        let change = checked(r#"{"op":"create","path":"memory/dentist.md","type":"project","description":"dentist tomorrow","content":"Appointment tomorrow at 9."}"#).unwrap();
        let Change::Write { text, .. } = change else {
            panic!()
        };
        assert!(text.contains("description: dentist 2026-11-23"));
        assert!(text.contains("type: project\ncreated: 2026-11-22\nupdated: 2026-11-22"));
        assert!(text.contains("Appointment 2026-11-23 at 9."));
        assert!(
            checked(r#"{"op":"create","path":"memory/x.md","content":"x"}"#)
                .unwrap_err()
                .contains("type")
        );
    }
}
