//! Token totals and cost read back from the usage rows: since a moment, or of one
//! session. Recording a call and the day's spend for the budget gates is `spend`.

use rusqlite::Connection;

use super::{Cached as _, Result, Store};
use pincer_provider::Usage;

impl Store {
    /// Token totals and cost since `since_ms`.
    pub async fn usage_since(&self, since_ms: i64) -> Result<(Usage, f64)> {
        self.run(move |conn| sum_usage(conn, "created_at >= ?1", since_ms))
            .await
    }

    /// Tokens and cost of one session.
    pub async fn session_usage(&self, session_id: i64) -> Result<(Usage, f64)> {
        self.run(move |conn| sum_usage(conn, "session_id = ?1", session_id))
            .await
    }
}

/// Token totals and cost of the usage rows matching `filter` (with `?1` = `value`).
fn sum_usage(conn: &Connection, filter: &str, value: i64) -> Result<(Usage, f64)> {
    let sql = format!(
        "SELECT COALESCE(SUM(input_tokens),0), COALESCE(SUM(output_tokens),0),
                COALESCE(SUM(cache_read_tokens),0), COALESCE(SUM(cache_write_tokens),0),
                COALESCE(SUM(cost_usd),0)
         FROM usage WHERE {filter}"
    );
    Ok(conn.row(&sql, [value], |row| {
        let tokens = |n: usize| row.get::<_, i64>(n).map(|v| v.max(0) as u64);
        Ok((
            Usage {
                input_tokens: tokens(0)?,
                output_tokens: tokens(1)?,
                cache_read_tokens: tokens(2)?,
                cache_write_tokens: tokens(3)?,
            },
            row.get(4)?,
        ))
    })?)
}
