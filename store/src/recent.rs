//! What was said across every conversation since a moment, for the dream: user and
//! assistant text only (tool calls and results stay in the transcripts), oldest first.

use rusqlite::params;

use super::{Result, Store};
use pincer_provider::Part;

/// One message's text, with where and when it was said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// The session key (`telegram:dm:42`).
    pub key: String,
    pub role: super::Role,
    pub sender: Option<String>,
    pub created_at: i64,
    pub text: String,
}

impl Store {
    /// Text of user and assistant messages created after `since_ms`, at most `limit`.
    pub async fn said_since(&self, since_ms: i64, limit: usize) -> Result<Vec<Said>> {
        self.run(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT s.key, m.role, m.sender, m.created_at, p.body, m.id
                 FROM messages m JOIN sessions s ON s.id = m.session_id
                 JOIN parts p ON p.message_id = m.id
                 WHERE m.created_at > ?1 AND m.role IN ('user', 'assistant') AND p.kind = 'text'
                 ORDER BY m.created_at, m.id, p.seq LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![since_ms, limit as i64], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, Option<String>>(2)?,
                    row.get::<_, i64>(3)?,
                    row.get::<_, String>(4)?,
                    row.get::<_, i64>(5)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (key, role, sender, created_at, body, id) = row?;
                let Part::Text { text } = super::parts::decode(id, &body)? else {
                    continue;
                };
                out.push(Said {
                    key,
                    role: role.parse()?,
                    sender,
                    created_at,
                    text,
                });
            }
            Ok(out)
        })
        .await
    }
}
