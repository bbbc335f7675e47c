//! Each channel's last health and when it last heard from its platform, written by the
//! gateway and read by `pincer status` (another process, hence the database); and the
//! watchdog's trivial call, which proves the writer can still write.

use rusqlite::params;

use super::{Result, Store, now_ms};

/// One channel's (or MCP server's) last recorded health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelHealth {
    /// `telegram`, `mcp:github`, …
    pub channel: String,
    /// As the gateway wrote it: `up`, `degraded: …`, `stopped`.
    pub state: String,
    /// When it was written, Unix ms.
    pub updated_at: i64,
    /// When the channel last heard from its platform, Unix ms; `None` if it never did
    /// (or keeps no such time, as MCP servers).
    pub last_event_at: Option<i64>,
}

impl Store {
    /// Record a channel's health for `pincer status`, with when it last heard from its
    /// platform (`None` keeps the time recorded before).
    pub async fn set_health(
        &self,
        channel: &str,
        state: &str,
        last_event_at: Option<i64>,
    ) -> Result<()> {
        let (channel, state) = (channel.to_string(), state.to_string());
        self.run(move |conn| {
            conn.execute(
                "INSERT INTO channel_health (channel, state, updated_at, last_event_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (channel) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at,
                   last_event_at = COALESCE(excluded.last_event_at, channel_health.last_event_at)",
                params![channel, state, now_ms(), last_event_at],
            )?;
            Ok(())
        })
        .await
    }

    /// Every channel's last recorded health, by name.
    pub async fn health(&self) -> Result<Vec<ChannelHealth>> {
        self.run(|conn| {
            let mut stmt = conn.prepare(
                "SELECT channel, state, updated_at, last_event_at FROM channel_health ORDER BY channel",
            )?;
            let rows = stmt.query_map([], |row| {
                Ok(ChannelHealth {
                    channel: row.get(0)?,
                    state: row.get(1)?,
                    updated_at: row.get(2)?,
                    last_event_at: row.get(3)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// The watchdog's trivial call: through the writer's queue like every call, it
    /// takes the database's write lock and lets it go, changing nothing. It answers
    /// once the writer is free and the database writable: a writer stuck in a call, or a
    /// database another process keeps locked past the busy timeout, shows here.
    pub async fn ping(&self) -> Result<()> {
        self.run(|conn| {
            // A write statement takes the write lock even when it matches no row.
            conn.execute("DELETE FROM channel_health WHERE 0", [])?;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_last_event_time_outlives_a_write_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("pincer.db")).unwrap();
        store
            .set_health("telegram", "up", Some(1_000))
            .await
            .unwrap();
        store.set_health("telegram", "stopped", None).await.unwrap();
        store.set_health("mcp:x", "connected", None).await.unwrap();
        let rows = store.health().await.unwrap();
        assert_eq!(rows[0].channel, "mcp:x");
        assert_eq!(rows[0].last_event_at, None);
        assert_eq!(
            (rows[1].state.as_str(), rows[1].last_event_at),
            ("stopped", Some(1_000))
        );
        store.ping().await.unwrap();
    }

    #[tokio::test]
    async fn the_ping_needs_the_write_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pincer.db");
        drop(Store::open(&path).unwrap());
        let holder = rusqlite::Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        // The same statement on a connection that will not wait: refused while the
        // lock is held elsewhere, as the writer's would be after its busy timeout.
        let other = rusqlite::Connection::open(&path).unwrap();
        other.busy_timeout(std::time::Duration::ZERO).unwrap();
        let refused = other.execute("DELETE FROM channel_health WHERE 0", []);
        assert!(refused.is_err(), "a no-op delete did not need the lock");
        holder.execute_batch("COMMIT").unwrap();
        other
            .execute("DELETE FROM channel_health WHERE 0", [])
            .unwrap();
    }
}
