//! Per-session settings kept beside the transcript: the pinned model (`/model`) and
//! the compaction summary, plus the session's own usage.

use super::Cached as _;
use rusqlite::params;

use super::{Result, Store};
use crate::provider::Usage;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionMeta {
    pub pin: Option<String>,
    pub summary: Option<String>,
    /// Messages at or before this position are covered by `summary`.
    pub summary_upto: Option<i64>,
    /// Tool results at or before this position are sent as stubs (`agent::window`).
    pub pruned_upto: Option<i64>,
}

impl Store {
    pub async fn session_meta(&self, session_id: i64) -> Result<SessionMeta> {
        self.run(move |conn| {
            Ok(conn.row(
                "SELECT pin, summary, summary_upto, pruned_upto FROM sessions WHERE id = ?1",
                [session_id],
                |row| {
                    Ok(SessionMeta {
                        pin: row.get(0)?,
                        summary: row.get(1)?,
                        summary_upto: row.get(2)?,
                        pruned_upto: row.get(3)?,
                    })
                },
            )?)
        })
        .await
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

    /// Tokens and cost of one session.
    pub async fn session_usage(&self, session_id: i64) -> Result<(Usage, f64)> {
        self.run(move |conn| super::sum_usage(conn, "session_id = ?1", session_id))
            .await
    }
}

impl Store {
    /// Whether the owner answered "always" to this tool and argument before.
    pub async fn is_granted(&self, tool: &str, subject: &str) -> Result<bool> {
        let (tool, subject) = (tool.to_string(), subject.to_string());
        self.run(move |conn| {
            let found: Option<i64> = rusqlite::OptionalExtension::optional(conn.row(
                "SELECT 1 FROM tool_grants WHERE tool = ?1 AND subject = ?2",
                params![tool, subject],
                |r| r.get(0),
            ))?;
            Ok(found.is_some())
        })
        .await
    }

    pub async fn grant(&self, tool: &str, subject: &str) -> Result<()> {
        let (tool, subject) = (tool.to_string(), subject.to_string());
        self.run(move |conn| {
            conn.exec(
                "INSERT INTO tool_grants (tool, subject, granted_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
                params![tool, subject, super::now_ms()],
            )?;
            Ok(())
        })
        .await
    }
}
