//! Daily logs, `memory/logs/YYYY-MM-DD.md`: after each turn, one line per speaker —
//! when, who, and what they said, briefly, with relative dates made absolute. Logs are
//! append-only and not tracked by the memory repository; the dream reads them from its
//! cursor (a day and a byte offset into that day's file).

use std::path::{Path, PathBuf};

use chrono::{NaiveDate, NaiveDateTime};
use serde::{Deserialize, Serialize};

use crate::{MemoryError, dates, files};

/// The log folder, relative to the workspace.
pub const DIR: &str = "memory/logs";
/// The most of one utterance a log line keeps.
const BRIEF_CHARS: usize = 400;

/// One speaker's part of a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// "Alice (telegram:42)", "Pincer".
    pub who: String,
    pub text: String,
}

/// How far the dream has read the logs: everything before `offset` in `day`'s file,
/// and every earlier day.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogCursor {
    /// The day's file, `YYYY-MM-DD`.
    pub day: Option<String>,
    pub offset: u64,
}

/// What the logs hold past a cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogsSince {
    pub text: String,
    /// The cursor after this text.
    pub end: LogCursor,
}

/// A day's log, relative to the workspace.
pub fn rel(day: NaiveDate) -> String {
    format!("{DIR}/{}.md", day.format("%Y-%m-%d"))
}

pub fn file(root: &Path, day: NaiveDate) -> PathBuf {
    root.join(rel(day))
}

/// Append turns to their days' logs (each created with a heading on first use), in
/// order: one write to each day's file, so turns appended together cost one open.
pub fn append(root: &Path, turns: &[(NaiveDateTime, &[Said])]) -> Result<(), MemoryError> {
    let mut days: Vec<NaiveDate> = turns.iter().map(|(at, _)| at.date()).collect();
    days.sort_unstable();
    days.dedup();
    for day in days {
        let rel = rel(day);
        // A link or anything but a regular file in the log's place (or the folders'):
        // removed, so the append below makes a real file. The append itself follows no
        // link either, so one planted after this check is refused, not written through.
        let mut text = String::new();
        match files::probe(root, &rel) {
            Ok(true) => {}
            Ok(false) => text.push_str(&format!("# {}\n\n", day.format("%Y-%m-%d (%A)"))),
            Err(err) => {
                tracing::warn!(
                    "a day's log that is not a regular file (a planted link?): {err}; removed"
                );
                clear_way(root, &rel)?;
                text.push_str(&format!("# {}\n\n", day.format("%Y-%m-%d (%A)")));
            }
        }
        let heading = text.len();
        for (at, said) in turns.iter().filter(|(at, _)| at.date() == day) {
            for part in *said {
                let brief = brief(&dates::absolute(&part.text, day).0);
                if brief.is_empty() {
                    continue;
                }
                text.push_str(&format!(
                    "- {} {}: {brief}\n",
                    at.format("%Y-%m-%d %H:%M"),
                    part.who
                ));
            }
        }
        if text.len() == heading {
            continue;
        }
        // One write with O_APPEND: concurrent turns never interleave inside a line.
        files::append(root, &rel, text.as_bytes())?;
    }
    Ok(())
}

/// Remove whatever stands in the way of the log `rel`: a link or non-folder at
/// `memory` or `memory/logs`, a link or non-file at the log itself.
fn clear_way(root: &Path, rel: &str) -> Result<(), MemoryError> {
    for dir in ["memory", DIR] {
        let Ok(meta) = std::fs::symlink_metadata(root.join(dir)) else {
            return Ok(());
        };
        if !meta.is_dir() {
            files::remove(root, dir)?;
            return Ok(());
        }
    }
    // A folder in its place is left for the owner: this fails and says so.
    files::remove(root, rel)
}

/// The log text after `cursor`, day by day, up to about `max_bytes` (whole lines;
/// the returned cursor says where it stopped).
pub fn since(root: &Path, cursor: LogCursor, max_bytes: usize) -> Result<LogsSince, MemoryError> {
    // A `memory/logs` that is a link is not read through.
    let listed = files::folder(root, DIR).and_then(|folder| folder.entries().ok());
    let mut days: Vec<NaiveDate> = listed
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(name, _)| name.strip_suffix(".md")?.parse().ok())
        .collect();
    days.sort();
    let from: Option<NaiveDate> = cursor.day.as_deref().and_then(|d| d.parse().ok());
    let mut out = LogsSince {
        text: String::new(),
        end: cursor.clone(),
    };
    for day in days {
        let start = match from {
            Some(at) if day < at => continue,
            Some(at) if day == at => cursor.offset,
            _ => 0,
        };
        // A log that is a link or not a regular file is skipped, never followed.
        let bytes = match files::read_bytes(root, &rel(day), files::MAX_LOG_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => continue,
            Err(err) => {
                tracing::warn!("a day's log was skipped: {err}");
                continue;
            }
        };
        // A log shortened by hand since: read it again from the start.
        let start = if start as usize > bytes.len() {
            0
        } else {
            start as usize
        };
        let mut at = start;
        for line in bytes[start..].split_inclusive(|b| *b == b'\n') {
            if !line.ends_with(b"\n") {
                break; // a line still being written
            }
            if out.text.len() + line.len() > max_bytes {
                return Ok(out);
            }
            out.text.push_str(&String::from_utf8_lossy(line));
            at += line.len();
            out.end = LogCursor {
                day: Some(day.format("%Y-%m-%d").to_string()),
                offset: at as u64,
            };
        }
    }
    Ok(out)
}

/// One line, at most `BRIEF_CHARS` characters.
fn brief(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= BRIEF_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(BRIEF_CHARS).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").unwrap()
    }

    #[test]
    fn turns_are_logged_briefly_with_absolute_dates_and_read_from_a_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let said = [
            Said {
                who: "Ana (telegram:42)".into(),
                text: "dentist\nnext Thursday".into(),
            },
            Said {
                who: "Pincer".into(),
                text: "Noted.".into(),
            },
        ];
        append(dir.path(), &[(at("2026-11-22 09:30"), &said)]).unwrap();
        let text =
            std::fs::read_to_string(file(dir.path(), at("2026-11-22 00:00").date())).unwrap();
        assert_eq!(
            text,
            "# 2026-11-22 (Sunday)\n\n- 2026-11-22 09:30 Ana (telegram:42): dentist Thursday 2026-11-26\n- 2026-11-22 09:30 Pincer: Noted.\n"
        );
        let first = since(dir.path(), LogCursor::default(), 100_000).unwrap();
        assert!(first.text.contains("dentist"));
        assert_eq!(
            since(dir.path(), first.end.clone(), 100_000).unwrap().text,
            ""
        );
        append(dir.path(), &[(at("2026-11-23 08:00"), &said[1..])]).unwrap();
        let next = since(dir.path(), first.end, 100_000).unwrap();
        assert!(next.text.contains("2026-11-23 08:00 Pincer") && !next.text.contains("dentist"));
        let capped = since(dir.path(), LogCursor::default(), 40).unwrap();
        assert!(capped.text.len() <= 40 && capped.end.offset > 0);
    }

    #[test]
    fn turns_appended_together_go_to_their_own_days_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let say = |who: &str, text: &str| Said {
            who: who.into(),
            text: text.into(),
        };
        let late = [say("owner", "late one"), say("Pincer", "")];
        let next = [say("owner", "next day")];
        let later = [say("owner", "later one")];
        let silent = [say("owner", "  ")];
        append(
            dir.path(),
            &[
                (at("2026-11-22 23:59"), &late[..]),
                (at("2026-11-23 00:01"), &next[..]),
                (at("2026-11-22 23:59"), &later[..]),
                (at("2026-11-24 10:00"), &silent[..]),
            ],
        )
        .unwrap();
        let day = |d: &str| std::fs::read_to_string(file(dir.path(), at(d).date()));
        assert_eq!(
            day("2026-11-22 00:00").unwrap(),
            "# 2026-11-22 (Sunday)\n\n- 2026-11-22 23:59 owner: late one\n- 2026-11-22 23:59 owner: later one\n"
        );
        assert_eq!(
            day("2026-11-23 00:00").unwrap(),
            "# 2026-11-23 (Monday)\n\n- 2026-11-23 00:01 owner: next day\n"
        );
        // A day with nothing worth a line gets no file.
        assert!(day("2026-11-24 00:00").is_err());
    }
}
