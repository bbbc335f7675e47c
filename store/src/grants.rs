//! Tool grants: the owner's "always" answers to a tool approval, kept per tool and
//! the argument it covered, so the same request is not asked again.

use rusqlite::params;

use super::{Cached as _, Result, Store, now_ms};

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
                params![tool, subject, now_ms()],
            )?;
            Ok(())
        })
        .await
    }
}
