//! What the web panel reads that nothing else does: sessions whose words match a
//! search, and the raw usage rows its charts are drawn from.

use super::{Result, Store};

/// One model call's usage, as the usage page sums it.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRow {
    /// Unix milliseconds.
    pub at: i64,
    /// "provider/model".
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

/// `text` as a LIKE pattern that matches it anywhere, literally.
fn contains(text: &str) -> String {
    let escaped = text
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

impl Store {
    /// The ids of sessions whose key holds `query` (case-insensitive for ASCII), newest
    /// activity first, at most `limit`. What was said is found with `search_said`.
    pub async fn sessions_keyed(&self, query: &str, limit: usize) -> Result<Vec<i64>> {
        let pattern = contains(query);
        self.run(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT s.id FROM sessions s WHERE s.key LIKE ?1 ESCAPE '\\'
                 ORDER BY s.updated_at DESC, s.id DESC LIMIT ?2",
            )?;
            let rows =
                stmt.query_map(rusqlite::params![pattern, limit as i64], |row| row.get(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<i64>>>()?)
        })
        .await
    }

    /// Every model call's usage since `since_ms`, oldest first.
    pub async fn usage_rows_since(&self, since_ms: i64) -> Result<Vec<UsageRow>> {
        self.run(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT created_at, model, input_tokens, output_tokens, cost_usd FROM usage
                 WHERE created_at >= ?1 ORDER BY created_at",
            )?;
            let rows = stmt.query_map([since_ms], |row| {
                Ok(UsageRow {
                    at: row.get(0)?,
                    model: row.get(1)?,
                    input_tokens: row.get::<_, i64>(2)?.max(0) as u64,
                    output_tokens: row.get::<_, i64>(3)?.max(0) as u64,
                    cost_usd: row.get(4)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }
}
