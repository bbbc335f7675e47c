//! Messages and their parts: a user message stored before anything else happens to
//! it (once per platform id), replies and tool results appended as they complete, a
//! waiting message moved to the end when a turn takes it, and the transcript read
//! back in the order the model saw it. What a session is lives in `session`.

use pincer_channels::SessionKey;
use rusqlite::{Connection, params};

use super::{
    Cached as _, Result, Role, SessionMeta, Status, Store, StoreError, now_ms, parts, repair,
};
use pincer_provider::Part;

#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    pub id: i64,
    /// Its place in the transcript (see migration 1).
    pub position: i64,
    pub role: Role,
    pub parts: Vec<Part>,
    pub status: Status,
    pub sender: Option<String>,
    pub created_at: i64,
    /// The tier of the turn that made an assistant or tool message (none: the owner's,
    /// from before tiers, or a user message).
    pub tier: Option<pincer_config::Tier>,
}

/// A user message left unanswered when the process stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct Unanswered {
    pub key: String,
    pub session_id: i64,
    pub message_id: i64,
    pub status: Status,
    /// Its sender's canonical id, as stored.
    pub sender: Option<String>,
}

/// A user message as the dispatcher stores it (`Store::receive_all`).
#[derive(Debug, Clone)]
pub struct Received {
    /// The session key; the message goes to its current session.
    pub key: SessionKey,
    pub channel: String,
    /// The platform's id of the message: a second one is a redelivery.
    pub platform_id: String,
    pub sender: String,
    /// The text as the model will read it.
    pub text: String,
}

impl Store {
    /// Store a user message before anything else happens to it. Returns `None` when
    /// the platform already delivered this message id (a redelivery).
    pub async fn insert_user(
        &self,
        session_id: i64,
        channel: &str,
        platform_id: &str,
        sender: &str,
        text: &str,
    ) -> Result<Option<i64>> {
        self.insert_user_with(session_id, channel, platform_id, sender, text, Vec::new())
            .await
    }

    /// `insert_user` for a message that brought pictures: `images` (`Part::Image`, which
    /// keep only the file's path) follow the text.
    pub async fn insert_user_with(
        &self,
        session_id: i64,
        channel: &str,
        platform_id: &str,
        sender: &str,
        text: &str,
        images: Vec<Part>,
    ) -> Result<Option<i64>> {
        let (channel, platform_id, sender) = (
            channel.to_string(),
            platform_id.to_string(),
            sender.to_string(),
        );
        let mut parts = vec![Part::Text {
            text: text.to_string(),
        }];
        parts.extend(images);
        self.run(move |conn| insert_user(conn, session_id, &channel, &platform_id, &sender, &parts))
            .await
    }

    /// `insert_user` into the current session of `key` (`current_session`), in one
    /// call. Returns the session and the message's id (`None`: a redelivery).
    pub async fn receive(
        &self,
        key: &SessionKey,
        channel: &str,
        platform_id: &str,
        sender: &str,
        text: &str,
    ) -> Result<(i64, Option<i64>)> {
        let row = Received {
            key: key.clone(),
            channel: channel.to_string(),
            platform_id: platform_id.to_string(),
            sender: sender.to_string(),
            text: text.to_string(),
        };
        let mut stored = self.receive_all(vec![row]).await?;
        stored
            .pop()
            .ok_or_else(|| StoreError::Worker("a received message went missing".into()))
    }

    /// `receive` for each of `rows`, in order, in one call: what the dispatcher does
    /// with the messages it takes off the bus together. All are stored or none (the
    /// dispatcher then stores them one by one, so one that cannot be stored costs the
    /// others nothing).
    pub async fn receive_all(&self, rows: Vec<Received>) -> Result<Vec<(i64, Option<i64>)>> {
        self.run(move |conn| {
            rows.into_iter()
                .map(|row| {
                    let session_id = super::session::current_session(conn, &row.key.to_string())?;
                    let parts = [Part::Text { text: row.text }];
                    let id = insert_user(
                        conn,
                        session_id,
                        &row.channel,
                        &row.platform_id,
                        &row.sender,
                        &parts,
                    )?;
                    Ok((session_id, id))
                })
                .collect()
        })
        .await
    }

    /// Replace a stored user message's content: its text as the model will read it
    /// (with what its files said) and its pictures, once its files are fetched.
    pub async fn rewrite_user(&self, message_id: i64, text: &str, images: Vec<Part>) -> Result<()> {
        let mut parts = vec![Part::Text {
            text: text.to_string(),
        }];
        parts.extend(images);
        self.run(move |conn| {
            conn.exec("DELETE FROM parts WHERE message_id = ?1", [message_id])?;
            insert_parts(conn, message_id, &parts)?;
            Ok(())
        })
        .await
    }

    /// Append an assistant reply or a tool result, committed at once.
    pub async fn append(&self, session_id: i64, role: Role, parts: Vec<Part>) -> Result<i64> {
        self.append_as(session_id, role, parts, None).await
    }

    /// `append`, recording the tier of the turn that made the message: a lower tier's
    /// turn is not shown what it holds (see `agent::load`).
    pub async fn append_as(
        &self,
        session_id: i64,
        role: Role,
        parts: Vec<Part>,
        tier: Option<pincer_config::Tier>,
    ) -> Result<i64> {
        self.run(move |conn| append_tiered(conn, session_id, role, &parts, tier))
            .await
    }

    pub async fn set_status(&self, message_ids: Vec<i64>, status: Status) -> Result<()> {
        self.run(move |conn| {
            for id in message_ids {
                conn.exec(
                    "UPDATE messages SET status = ?2 WHERE id = ?1",
                    params![id, status.as_str()],
                )?;
            }
            Ok(())
        })
        .await
    }

    /// A turn takes these waiting user messages: they move to the end of the
    /// transcript (in the given order) and get `status`.
    pub async fn take(&self, session_id: i64, message_ids: Vec<i64>, status: Status) -> Result<()> {
        self.run(move |conn| {
            for id in message_ids {
                conn.exec(
                    "UPDATE messages SET status = ?3,
                        position = (SELECT COALESCE(MAX(position), 0) + 1 FROM messages WHERE session_id = ?2)
                     WHERE id = ?1 AND session_id = ?2",
                    params![id, session_id, status.as_str()],
                )?;
            }
            Ok(())
        })
        .await
    }

    /// The whole transcript of a session, oldest first.
    pub async fn history(&self, session_id: i64) -> Result<Vec<StoredMessage>> {
        self.run(move |conn| history(conn, session_id, i64::MIN))
            .await
    }

    /// The transcript after position `upto` (what a summary does not stand in for),
    /// plus user messages still open wherever they are, oldest first. A long
    /// conversation that was compacted is not read whole on every turn.
    pub async fn history_after(&self, session_id: i64, upto: i64) -> Result<Vec<StoredMessage>> {
        self.run(move |conn| history(conn, session_id, upto)).await
    }

    /// What a turn reads first, in one call: the session's settings and its
    /// transcript after the summary's position (`history_after`), with the tool calls
    /// a crash left without a result closed first (`repair`).
    pub async fn transcript(&self, session_id: i64) -> Result<(SessionMeta, Vec<StoredMessage>)> {
        self.run(move |conn| {
            let meta = super::session::meta(conn, session_id)?;
            let upto = meta.summary.as_ref().and(meta.summary_upto);
            let upto = upto.unwrap_or(i64::MIN);
            let mut stored = history(conn, session_id, upto)?;
            if repair::close_open_calls(conn, session_id, &stored)? > 0 {
                stored = history(conn, session_id, upto)?;
            }
            Ok((meta, stored))
        })
        .await
    }

    /// Close tool calls a crash left without a result (see `repair`), after position
    /// `upto` if a summary stands in for what came before. Returns how many.
    pub async fn repair(&self, session_id: i64, upto: Option<i64>) -> Result<usize> {
        let upto = upto.unwrap_or(i64::MIN);
        self.run(move |conn| repair::close_unpaired(conn, session_id, upto))
            .await
    }

    /// User messages a previous run stored but never finished answering.
    pub async fn unanswered(&self) -> Result<Vec<Unanswered>> {
        self.run(|conn| {
            let mut stmt = conn.prepare(
                "SELECT s.key, m.session_id, m.id, m.status, m.sender FROM messages m
                 JOIN sessions s ON s.id = m.session_id
                 WHERE m.role = 'user' AND m.status IN ('pending', 'active', 'retried')
                   AND s.closed_at IS NULL
                 ORDER BY m.id",
            )?;
            let rows = stmt.query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, i64>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, Option<String>>(4)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (key, session_id, message_id, status, sender) = row?;
                out.push(Unanswered {
                    key,
                    session_id,
                    message_id,
                    status: status.parse()?,
                    sender,
                });
            }
            Ok(out)
        })
        .await
    }
}

pub(super) fn append(
    conn: &Connection,
    session_id: i64,
    role: Role,
    parts: &[Part],
) -> Result<i64> {
    conn.exec(
        "INSERT INTO messages (session_id, role, status, position, created_at)
         VALUES (?1, ?2, 'done', (SELECT COALESCE(MAX(position), 0) + 1 FROM messages WHERE session_id = ?1), ?3)",
        params![session_id, role.as_str(), now_ms()],
    )?;
    let id = conn.last_insert_rowid();
    insert_parts(conn, id, parts)?;
    touch(conn, session_id)?;
    Ok(id)
}

fn insert_parts(conn: &Connection, message_id: i64, parts: &[Part]) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO parts (message_id, seq, kind, body) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (seq, part) in parts.iter().enumerate() {
        let (kind, body) = parts::encode(part)?;
        stmt.execute(params![message_id, seq as i64, kind, body])?;
    }
    Ok(())
}

fn touch(conn: &Connection, session_id: i64) -> Result<()> {
    conn.exec(
        "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
        params![session_id, now_ms()],
    )?;
    Ok(())
}

/// A session's messages after a position, and its open user messages, with parts.
pub(super) const HISTORY: &str =
    "SELECT m.id, m.role, m.status, m.sender, m.created_at, p.body, m.position, m.tier
     FROM messages m LEFT JOIN parts p ON p.message_id = m.id
     WHERE m.session_id = ?1
       AND (m.position > ?2 OR (m.role = 'user' AND m.status != 'done'))
     ORDER BY m.position, m.id, p.seq";

pub(super) fn history(
    conn: &Connection,
    session_id: i64,
    after: i64,
) -> Result<Vec<StoredMessage>> {
    let mut stmt = conn.prepare_cached(HISTORY)?;
    let mut rows = stmt.query([session_id, after])?;
    let mut out: Vec<StoredMessage> = Vec::new();
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        if out.last().map(|m| m.id) != Some(id) {
            out.push(StoredMessage {
                id,
                position: row.get(6)?,
                role: row.get::<_, String>(1)?.parse()?,
                status: row.get::<_, String>(2)?.parse()?,
                sender: row.get(3)?,
                created_at: row.get(4)?,
                parts: Vec::new(),
                tier: tier(row.get(7)?)?,
            });
        }
        if let Some(body) = row.get::<_, Option<String>>(5)?
            && let Some(message) = out.last_mut()
        {
            message.parts.push(parts::decode(id, &body)?);
        }
    }
    Ok(out)
}

/// `messages.tier` read back: none is the owner's (rows from before tiers).
fn tier(text: Option<String>) -> Result<Option<pincer_config::Tier>> {
    match text {
        None => Ok(None),
        Some(text) => pincer_config::Tier::parse(&text)
            .map(Some)
            .ok_or_else(|| StoreError::corrupt("messages", "tier", &text)),
    }
}

fn insert_user(
    conn: &Connection,
    session_id: i64,
    channel: &str,
    platform_id: &str,
    sender: &str,
    parts: &[Part],
) -> Result<Option<i64>> {
    let inserted = conn.exec(
        "INSERT INTO messages (session_id, role, channel, platform_id, sender, status, position, created_at)
         VALUES (?1, 'user', ?2, ?3, ?4, 'pending', (SELECT COALESCE(MAX(position), 0) + 1 FROM messages WHERE session_id = ?1), ?5)
         ON CONFLICT DO NOTHING",
        params![session_id, channel, platform_id, sender, now_ms()],
    )?;
    if inserted == 0 {
        return Ok(None);
    }
    let id = conn.last_insert_rowid();
    insert_parts(conn, id, parts)?;
    touch(conn, session_id)?;
    Ok(Some(id))
}

/// `append`, with the tier of the turn that made the message.
pub(super) fn append_tiered(
    conn: &Connection,
    session_id: i64,
    role: Role,
    parts: &[Part],
    tier: Option<pincer_config::Tier>,
) -> Result<i64> {
    let id = append(conn, session_id, role, parts)?;
    if let Some(tier) = tier {
        conn.exec(
            "UPDATE messages SET tier = ?2 WHERE id = ?1",
            params![id, tier.name()],
        )?;
    }
    Ok(id)
}
