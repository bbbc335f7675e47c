//! Pairing codes and approved senders in the store. Codes are compared in constant
//! time; an expired code is as good as none.

use rusqlite::{OptionalExtension, params};
use subtle::ConstantTimeEq;

use super::{Result, Store, now_ms};

/// A code waiting for the owner's approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingCode {
    pub channel: String,
    pub code: String,
    pub sender_raw: String,
    pub sender: String,
    pub display_name: String,
    pub expires_at: i64,
    pub last_sent_at: i64,
    /// The owners were told of it: it is never the code evicted to make room.
    pub announced: bool,
}

/// A sender the owner let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    pub channel: String,
    pub sender_raw: String,
    pub sender: String,
    pub display_name: String,
    pub approved_at: i64,
    pub approved_by: String,
}

fn pending_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<PendingCode> {
    Ok(PendingCode {
        channel: row.get(0)?,
        code: row.get(1)?,
        sender_raw: row.get(2)?,
        sender: row.get(3)?,
        display_name: row.get(4)?,
        expires_at: row.get(5)?,
        last_sent_at: row.get(6)?,
        announced: row.get(7)?,
    })
}

const PENDING_COLUMNS: &str =
    "channel, code, sender_raw, sender, display_name, expires_at, last_sent_at, announced";

impl Store {
    /// Codes not yet expired; of one channel, or of all.
    pub async fn pending_codes(&self, channel: Option<&str>) -> Result<Vec<PendingCode>> {
        let channel = channel.map(str::to_string);
        self.run(move |conn| {
            let sql = format!(
                "SELECT {PENDING_COLUMNS} FROM pairing_codes
                 WHERE expires_at > ?1 AND (?2 IS NULL OR channel = ?2) ORDER BY created_at"
            );
            let mut stmt = conn.prepare(&sql)?;
            let rows = stmt.query_map(params![now_ms(), channel], pending_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// Record a new code for a sender (replacing any expired one of theirs).
    pub async fn insert_code(&self, code: PendingCode) -> Result<()> {
        self.run(move |conn| {
            conn.execute(
                "DELETE FROM pairing_codes WHERE channel = ?1 AND (sender_raw = ?2 OR expires_at <= ?3)",
                params![code.channel, code.sender_raw, now_ms()],
            )?;
            conn.execute(
                "INSERT INTO pairing_codes (channel, code, sender_raw, sender, display_name, created_at, expires_at, last_sent_at, announced)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![code.channel, code.code, code.sender_raw, code.sender, code.display_name, now_ms(), code.expires_at, code.last_sent_at, code.announced],
            )?;
            Ok(())
        })
        .await
    }

    /// Drop one pending code (to make room for a newer request).
    pub async fn delete_code(&self, channel: &str, code: &str) -> Result<()> {
        let (channel, code) = (channel.to_string(), code.to_string());
        self.run(move |conn| {
            conn.execute(
                "DELETE FROM pairing_codes WHERE channel = ?1 AND code = ?2",
                params![channel, code],
            )?;
            Ok(())
        })
        .await
    }

    pub async fn mark_code_sent(&self, channel: &str, code: &str) -> Result<()> {
        let (channel, code) = (channel.to_string(), code.to_string());
        self.run(move |conn| {
            conn.execute(
                "UPDATE pairing_codes SET last_sent_at = ?3 WHERE channel = ?1 AND code = ?2",
                params![channel, code, now_ms()],
            )?;
            Ok(())
        })
        .await
    }

    /// Approve the sender holding `code` (any case) on `channel`, or on any channel
    /// when `channel` is `None`. Returns who was let in; `None` for a wrong or
    /// expired code.
    pub async fn approve_code(
        &self,
        channel: Option<&str>,
        code: &str,
        by: &str,
    ) -> Result<Option<Approved>> {
        let wanted = code.trim().to_ascii_uppercase();
        let pending = self.pending_codes(channel).await?;
        // Compare against every pending code, in constant time, so timing tells nothing.
        let mut found = None;
        for candidate in pending {
            let same: bool = candidate.code.as_bytes().ct_eq(wanted.as_bytes()).into();
            if same && found.is_none() {
                found = Some(candidate);
            }
        }
        let Some(code) = found else {
            return Ok(None);
        };
        let by = by.to_string();
        self.run(move |conn| {
            let now = now_ms();
            conn.execute(
                "INSERT INTO approved_senders (channel, sender_raw, sender, display_name, approved_at, approved_by)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (channel, sender_raw) DO UPDATE SET approved_at = excluded.approved_at, approved_by = excluded.approved_by",
                params![code.channel, code.sender_raw, code.sender, code.display_name, now, by],
            )?;
            conn.execute(
                "DELETE FROM pairing_codes WHERE channel = ?1 AND sender_raw = ?2",
                params![code.channel, code.sender_raw],
            )?;
            Ok(Some(Approved {
                channel: code.channel,
                sender_raw: code.sender_raw,
                sender: code.sender,
                display_name: code.display_name,
                approved_at: now,
                approved_by: by,
            }))
        })
        .await
    }

    pub async fn is_approved(&self, channel: &str, sender_raw: &str) -> Result<bool> {
        let (channel, sender_raw) = (channel.to_string(), sender_raw.to_string());
        self.run(move |conn| {
            Ok(conn
                .query_row(
                    "SELECT 1 FROM approved_senders WHERE channel = ?1 AND sender_raw = ?2",
                    params![channel, sender_raw],
                    |_| Ok(()),
                )
                .optional()?
                .is_some())
        })
        .await
    }

    /// Everyone approved, oldest first.
    pub async fn approved(&self, channel: Option<&str>) -> Result<Vec<Approved>> {
        let channel = channel.map(str::to_string);
        self.run(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT channel, sender_raw, sender, display_name, approved_at, approved_by
                 FROM approved_senders WHERE (?1 IS NULL OR channel = ?1) ORDER BY approved_at, rowid",
            )?;
            let rows = stmt.query_map(params![channel], |row| {
                Ok(Approved {
                    channel: row.get(0)?,
                    sender_raw: row.get(1)?,
                    sender: row.get(2)?,
                    display_name: row.get(3)?,
                    approved_at: row.get(4)?,
                    approved_by: row.get(5)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// Take back an approval, by raw id or canonical id. Returns whether one existed.
    pub async fn revoke(&self, channel: &str, sender: &str) -> Result<bool> {
        let (channel, sender) = (channel.to_string(), sender.to_string());
        self.run(move |conn| {
            let removed = conn.execute(
                "DELETE FROM approved_senders WHERE channel = ?1 AND (sender_raw = ?2 OR sender = ?2)",
                params![channel, sender],
            )?;
            Ok(removed > 0)
        })
        .await
    }
}
