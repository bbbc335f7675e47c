//! Sessions: a key's current session (made on first use), `/new`, a fork (a new key
//! starting with a copy of another session), finding one by key or id, the lists (every
//! session; a host's conversations, with their opening words), and the settings kept
//! beside each transcript — the pinned model (`/model`), the compaction summary and how
//! far tool results are pruned.

use pincer_channels::SessionKey;
use rusqlite::{Connection, OptionalExtension, params};

use super::{Cached as _, Result, Store, StoreError, now_ms};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionMeta {
    pub pin: Option<String>,
    pub summary: Option<String>,
    /// Messages at or before this position are covered by `summary`.
    pub summary_upto: Option<i64>,
    /// Tool results at or before this position are sent as stubs (`agent::window`).
    pub pruned_upto: Option<i64>,
    /// Untrusted content was taken in at or before this position (see `untrusted`).
    pub untrusted_upto: Option<i64>,
}

impl SessionMeta {
    /// Whether untrusted content is still in what the model sees: it came in after the
    /// last compaction's summary.
    pub fn untrusted(&self) -> bool {
        self.untrusted_upto
            .is_some_and(|at| self.summary_upto.is_none_or(|summary| at > summary))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    pub id: i64,
    pub key: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub messages: i64,
    pub current: bool,
}

impl Store {
    /// The current session of a key, created on first use.
    pub async fn current_session(&self, key: &SessionKey) -> Result<i64> {
        let key = key.to_string();
        self.run(move |conn| current_session(conn, &key)).await
    }

    /// Close the key's current session and start a new one (`/new`).
    pub async fn new_session(&self, key: &SessionKey) -> Result<i64> {
        let key = key.to_string();
        self.run(move |conn| {
            let now = now_ms();
            conn.exec(
                "UPDATE sessions SET closed_at = ?2 WHERE key = ?1 AND closed_at IS NULL",
                params![key, now],
            )?;
            conn.exec(
                "INSERT INTO sessions (key, created_at, updated_at) VALUES (?1, ?2, ?2)",
                params![key, now],
            )?;
            let id = conn.last_insert_rowid();
            Ok(id)
        })
        .await
    }

    /// A new session of `key`, a fork of session `from`: a copy of its answered
    /// transcript (messages, parts, positions) and of its settings (pin, summary,
    /// pruning, distrust), so it goes on where `from` stood. `from` is only read; what
    /// it has not answered yet stays its own. `key` must be new.
    pub async fn fork_session(&self, from: i64, key: &str) -> Result<i64> {
        let key = key.to_string();
        self.run(move |conn| {
            let taken: Option<i64> = conn
                .row("SELECT id FROM sessions WHERE key = ?1 LIMIT 1", [&key], |row| {
                    row.get(0)
                })
                .optional()?;
            if taken.is_some() {
                return Err(StoreError::SessionExists(key));
            }
            let copied = conn.exec(
                "INSERT INTO sessions (key, created_at, updated_at, pin, summary, summary_upto, pruned_upto, untrusted_upto)
                 SELECT ?2, ?3, ?3, pin, summary, summary_upto, pruned_upto, untrusted_upto
                 FROM sessions WHERE id = ?1",
                params![from, key, now_ms()],
            )?;
            if copied == 0 {
                return Err(StoreError::NoSession(from.to_string()));
            }
            let fork = conn.last_insert_rowid();
            let messages: Vec<i64> = conn
                .prepare(
                    "SELECT id FROM messages WHERE session_id = ?1 AND status = 'done'
                     ORDER BY position, id",
                )?
                .query_map([from], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            for message in messages {
                conn.exec(
                    "INSERT INTO messages (session_id, role, channel, platform_id, sender, status, position, created_at, tier)
                     SELECT ?2, role, channel, NULL, sender, status, position, created_at, tier
                     FROM messages WHERE id = ?1",
                    params![message, fork],
                )?;
                conn.exec(
                    "INSERT INTO parts (message_id, seq, kind, body)
                     SELECT ?2, seq, kind, body FROM parts WHERE message_id = ?1",
                    params![message, conn.last_insert_rowid()],
                )?;
            }
            Ok(fork)
        })
        .await
    }

    /// Every session, newest activity first.
    pub async fn sessions(&self) -> Result<Vec<SessionInfo>> {
        self.run(|conn| {
            let mut stmt = conn.prepare(
                "SELECT s.id, s.key, s.created_at, s.updated_at,
                        (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id),
                        s.closed_at IS NULL
                 FROM sessions s ORDER BY s.updated_at DESC, s.id DESC",
            )?;
            let rows = stmt.query_map([], |row| session_info(row, row.get(5)?))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// The current session of every key that starts with `prefix` and has messages,
    /// newest activity first (the conversations a host lists, `terminal:dm:acp-`).
    pub async fn current_sessions_under(&self, prefix: &str) -> Result<Vec<SessionInfo>> {
        let prefix = prefix.to_string();
        self.run(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT id, key, created_at, updated_at, messages FROM (
                     SELECT s.id, s.key, s.created_at, s.updated_at,
                            (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS messages
                     FROM sessions s
                     WHERE substr(s.key, 1, length(?1)) = ?1 AND s.closed_at IS NULL)
                 WHERE messages > 0 ORDER BY updated_at DESC, id DESC",
            )?;
            let rows = stmt.query_map([&prefix], |row| session_info(row, true))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// The first text a person wrote in a session, if any: what a list of
    /// conversations shows as its title.
    pub async fn opening_text(&self, session_id: i64) -> Result<Option<String>> {
        self.run(move |conn| {
            let found: Option<(i64, String)> = conn
                .row(
                    "SELECT m.id, p.body FROM messages m JOIN parts p ON p.message_id = m.id
                     WHERE m.session_id = ?1 AND m.role = 'user' AND p.kind = 'text'
                     ORDER BY m.position, p.seq LIMIT 1",
                    [session_id],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()?;
            let Some((message_id, body)) = found else {
                return Ok(None);
            };
            match super::parts::decode(message_id, &body)? {
                pincer_provider::Part::Text { text } => Ok(Some(text)),
                _ => Ok(None),
            }
        })
        .await
    }

    /// The session a key currently maps to, or a session by its numeric id.
    pub async fn find_session(&self, key_or_id: &str) -> Result<i64> {
        let wanted = key_or_id.to_string();
        self.run(move |conn| {
            let by_key: Option<i64> = conn
                .query_row(
                    "SELECT id FROM sessions WHERE key = ?1 ORDER BY closed_at IS NULL DESC, id DESC LIMIT 1",
                    [&wanted],
                    |row| row.get(0),
                )
                .optional()?;
            let by_id = || -> rusqlite::Result<Option<i64>> {
                let Ok(id) = wanted.parse::<i64>() else {
                    return Ok(None);
                };
                conn.row("SELECT id FROM sessions WHERE id = ?1", [id], |row| row.get(0))
                    .optional()
            };
            match by_key {
                Some(id) => Ok(id),
                None => by_id()?.ok_or(StoreError::NoSession(wanted)),
            }
        })
        .await
    }

    /// The key a session belongs to.
    pub async fn session_key(&self, session_id: i64) -> Result<String> {
        self.run(move |conn| {
            Ok(conn.row(
                "SELECT key FROM sessions WHERE id = ?1",
                [session_id],
                |row| row.get(0),
            )?)
        })
        .await
    }

    pub async fn session_meta(&self, session_id: i64) -> Result<SessionMeta> {
        self.run(move |conn| meta(conn, session_id)).await
    }

    pub async fn set_pin(&self, session_id: i64, pin: Option<String>) -> Result<()> {
        self.run(move |conn| {
            conn.exec(
                "UPDATE sessions SET pin = ?2 WHERE id = ?1",
                params![session_id, pin],
            )?;
            Ok(())
        })
        .await
    }

    pub async fn set_summary(&self, session_id: i64, summary: String, upto: i64) -> Result<()> {
        self.run(move |conn| {
            conn.exec(
                "UPDATE sessions SET summary = ?2, summary_upto = ?3 WHERE id = ?1",
                params![session_id, summary, upto],
            )?;
            Ok(())
        })
        .await
    }

    /// Mark the conversation untrusted up to its newest message (its turn took in
    /// untrusted content), or trusted again (`false`: the owner's `/trust`).
    pub async fn set_untrusted(&self, session_id: i64, untrusted: bool) -> Result<()> {
        self.run(move |conn| {
            let sql = if untrusted {
                "UPDATE sessions SET untrusted_upto = (SELECT MAX(position) FROM messages WHERE session_id = ?1) WHERE id = ?1"
            } else {
                "UPDATE sessions SET untrusted_upto = NULL WHERE id = ?1"
            };
            conn.exec(sql, [session_id])?;
            Ok(())
        })
        .await
    }

    pub async fn set_pruned(&self, session_id: i64, upto: i64) -> Result<()> {
        self.run(move |conn| {
            conn.exec(
                "UPDATE sessions SET pruned_upto = ?2 WHERE id = ?1",
                params![session_id, upto],
            )?;
            Ok(())
        })
        .await
    }
}

/// The key's open session, or a new one.
pub(super) fn current_session(conn: &Connection, key: &str) -> Result<i64> {
    let found: Option<i64> = conn
        .row(
            "SELECT id FROM sessions WHERE key = ?1 AND closed_at IS NULL ORDER BY id DESC LIMIT 1",
            [key],
            |row| row.get(0),
        )
        .optional()?;
    if let Some(id) = found {
        return Ok(id);
    }
    conn.exec(
        "INSERT INTO sessions (key, created_at, updated_at) VALUES (?1, ?2, ?2)",
        params![key, now_ms()],
    )?;
    Ok(conn.last_insert_rowid())
}

pub(super) fn meta(conn: &Connection, session_id: i64) -> Result<SessionMeta> {
    Ok(conn.row(
        "SELECT pin, summary, summary_upto, pruned_upto, untrusted_upto FROM sessions WHERE id = ?1",
        [session_id],
        |row| {
            Ok(SessionMeta {
                pin: row.get(0)?,
                summary: row.get(1)?,
                summary_upto: row.get(2)?,
                pruned_upto: row.get(3)?,
                untrusted_upto: row.get(4)?,
            })
        },
    )?)
}

/// A `SessionInfo` from a row of id, key, created_at, updated_at and message count.
fn session_info(row: &rusqlite::Row<'_>, current: bool) -> rusqlite::Result<SessionInfo> {
    Ok(SessionInfo {
        id: row.get(0)?,
        key: row.get(1)?,
        created_at: row.get(2)?,
        updated_at: row.get(3)?,
        messages: row.get(4)?,
        current,
    })
}
