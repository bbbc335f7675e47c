//! Each channel's last health, written by the gateway and read by `pincer status`
//! (another process, hence the database).

use rusqlite::params;

use super::{Result, Store, now_ms};

impl Store {
    /// Record a channel's health for `pincer status`.
    pub async fn set_health(&self, channel: &str, state: &str) -> Result<()> {
        let (channel, state) = (channel.to_string(), state.to_string());
        self.run(move |conn| {
            conn.execute(
                "INSERT INTO channel_health (channel, state, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (channel) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
                params![channel, state, now_ms()],
            )?;
            Ok(())
        })
        .await
    }

    /// Every channel's last recorded health: (channel, state, updated_at).
    pub async fn health(&self) -> Result<Vec<(String, String, i64)>> {
        self.run(|conn| {
            let mut stmt = conn.prepare(
                "SELECT channel, state, updated_at FROM channel_health ORDER BY channel",
            )?;
            let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }
}
