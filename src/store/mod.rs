//! The session store: SQLite (WAL) holding sessions, messages, their parts and model
//! usage. The user's message is committed before the model is called; replies and
//! tool results as they complete. Blocking rusqlite calls run on the blocking pool,
//! one at a time: callers wait their turn for the one connection as tasks, in the order
//! they came, so a burst of turns never parks a blocking thread (and its stack) per
//! waiting call.

mod cron;
mod migrations;
mod pairing;
mod panel;
mod recent;
mod repair;
mod session;
mod spend;
mod tasks;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};

use crate::provider::{Part, Usage};

pub use cron::{Job, NewJob};
pub use pairing::{Approved, PendingCode};
pub use panel::UsageRow;
pub use recent::Said;
pub use repair::INTERRUPTED;
pub use session::SessionMeta;
pub use spend::Spender;
pub use tasks::TaskRow;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the database {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "{path} was written by a newer Pincer (database schema {found}; this one knows up to {known}): upgrade pincer, or give this one its own home with --home"
    )]
    Newer {
        path: PathBuf,
        found: usize,
        known: usize,
    },
    #[error(
        "database error: {0} (if the disk is full, free space and retry; nothing stored so far is lost)"
    )]
    Sql(#[from] rusqlite::Error),
    #[error("a stored message part is unreadable: {0}")]
    Corrupt(#[from] serde_json::Error),
    #[error("the database worker stopped: {0}")]
    Worker(String),
    #[error("no session {0}; see `pincer sessions list`")]
    NoSession(String),
    #[error("{0}")]
    Conflict(String),
}

pub type Result<T> = std::result::Result<T, StoreError>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    Tool,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    fn parse(text: &str) -> Role {
        match text {
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => Role::User,
        }
    }
}

/// Where a user message is in its life: stored, being answered, answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Stored, no turn has started on it yet.
    Pending,
    /// A turn is answering it.
    Active,
    /// A turn is answering it for the second time, after a restart; never a third.
    Retried,
    Done,
    /// Kept, deliberately not answered and never shown to the model (a non-owner's
    /// message past `access.rate_per_minute`).
    Ignored,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Active => "active",
            Status::Retried => "retried",
            Status::Done => "done",
            Status::Ignored => "ignored",
        }
    }

    fn parse(text: &str) -> Status {
        match text {
            "pending" => Status::Pending,
            "active" => Status::Active,
            "retried" => Status::Retried,
            "ignored" => Status::Ignored,
            _ => Status::Done,
        }
    }
}

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

#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    pub id: i64,
    pub key: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub messages: i64,
    pub current: bool,
}

/// `execute` and `query_row` through the connection's statement cache: the same few
/// statements run on every turn, and parsing them each time showed in profiles.
trait Cached {
    fn exec<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;
    fn row<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>;
}

impl Cached for Connection {
    fn exec<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn row<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, f)
    }
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

#[derive(Clone)]
pub struct Store {
    conn: Arc<tokio::sync::Mutex<Connection>>,
    /// The day's spend, kept up to date by `record_usage`: the budget gate asks before
    /// every model call, and summing the day's usage rows each time grew with the day.
    spent: Arc<Mutex<Option<spend::Spent>>>,
}

/// SQLite's page cache per connection (KiB; SQLite's default is about 2 MB). Pages it
/// misses are read from the OS page cache; the gateway's RSS stays flat as the
/// database grows.
const CACHE_KIB: i64 = 512;

/// The connection and its settings. The query planner stability guarantee keeps a
/// cached statement's plan: without it SQLite recompiles statements such as `WHERE
/// session_id = ?1 ORDER BY position` each time a new value is bound.
fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    conn.set_prepared_statement_cache_capacity(64);
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
}

pub fn now_ms() -> i64 {
    crate::clock::now_ms()
}

impl Store {
    /// Open (creating with mode 0600) and migrate the database.
    pub fn open(path: &Path) -> Result<Store> {
        let open_err = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let fresh = !path.exists();
        let mut conn = connect(path).map_err(open_err)?;
        if fresh {
            restrict_mode(path);
        }
        migrations::apply(&mut conn).map_err(|err| match err {
            migrations::MigrateError::Newer { found, known } => StoreError::Newer {
                path: path.to_path_buf(),
                found,
                known,
            },
            migrations::MigrateError::Sql(source) => open_err(source),
        })?;
        Ok(Store {
            conn: Arc::new(tokio::sync::Mutex::new(conn)),
            spent: Arc::default(),
        })
    }

    /// Run blocking database work off the async threads.
    async fn run<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        let mut conn = Arc::clone(&self.conn).lock_owned().await;
        tokio::task::spawn_blocking(move || work(&mut conn))
            .await
            .map_err(|err| StoreError::Worker(err.to_string()))?
    }

    /// The current session of a key, created on first use.
    pub async fn current_session(&self, key: &str) -> Result<i64> {
        let key = key.to_string();
        self.run(move |conn| current_session(conn, &key)).await
    }

    /// Close the key's current session and start a new one (`/new`).
    pub async fn new_session(&self, key: &str) -> Result<i64> {
        let key = key.to_string();
        self.run(move |conn| {
            let now = now_ms();
            let tx = conn.transaction()?;
            tx.exec(
                "UPDATE sessions SET closed_at = ?2 WHERE key = ?1 AND closed_at IS NULL",
                params![key, now],
            )?;
            tx.exec(
                "INSERT INTO sessions (key, created_at, updated_at) VALUES (?1, ?2, ?2)",
                params![key, now],
            )?;
            let id = tx.last_insert_rowid();
            tx.commit()?;
            Ok(id)
        })
        .await
    }

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
        self.run(move |conn| {
            let tx = conn.transaction()?;
            let inserted = tx.exec(
                "INSERT INTO messages (session_id, role, channel, platform_id, sender, status, position, created_at)
                 VALUES (?1, 'user', ?2, ?3, ?4, 'pending', (SELECT COALESCE(MAX(position), 0) + 1 FROM messages WHERE session_id = ?1), ?5)
                 ON CONFLICT DO NOTHING",
                params![session_id, channel, platform_id, sender, now_ms()],
            )?;
            if inserted == 0 {
                return Ok(None);
            }
            let id = tx.last_insert_rowid();
            insert_parts(&tx, id, &parts)?;
            touch(&tx, session_id)?;
            tx.commit()?;
            Ok(Some(id))
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
            let tx = conn.transaction()?;
            tx.exec("DELETE FROM parts WHERE message_id = ?1", [message_id])?;
            insert_parts(&tx, message_id, &parts)?;
            tx.commit()?;
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
        self.run(move |conn| {
            let tx = conn.transaction()?;
            let id = append(&tx, session_id, role, &parts)?;
            if let Some(tier) = tier {
                tx.exec(
                    "UPDATE messages SET tier = ?2 WHERE id = ?1",
                    params![id, tier.name()],
                )?;
            }
            tx.commit()?;
            Ok(id)
        })
        .await
    }

    pub async fn set_status(&self, message_ids: Vec<i64>, status: Status) -> Result<()> {
        self.run(move |conn| {
            let tx = conn.transaction()?;
            for id in message_ids {
                tx.exec(
                    "UPDATE messages SET status = ?2 WHERE id = ?1",
                    params![id, status.as_str()],
                )?;
            }
            tx.commit()?;
            Ok(())
        })
        .await
    }

    /// A turn takes these waiting user messages: they move to the end of the
    /// transcript (in the given order) and get `status`.
    pub async fn take(&self, session_id: i64, message_ids: Vec<i64>, status: Status) -> Result<()> {
        self.run(move |conn| {
            let tx = conn.transaction()?;
            for id in message_ids {
                tx.exec(
                    "UPDATE messages SET status = ?3,
                        position = (SELECT COALESCE(MAX(position), 0) + 1 FROM messages WHERE session_id = ?2)
                     WHERE id = ?1 AND session_id = ?2",
                    params![id, session_id, status.as_str()],
                )?;
            }
            tx.commit()?;
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
                Ok(Unanswered {
                    key: row.get(0)?,
                    session_id: row.get(1)?,
                    message_id: row.get(2)?,
                    status: Status::parse(&row.get::<_, String>(3)?),
                    sender: row.get(4)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// Token totals and cost since `since_ms`.
    pub async fn usage_since(&self, since_ms: i64) -> Result<(Usage, f64)> {
        self.run(move |conn| sum_usage(conn, "created_at >= ?1", since_ms))
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
            let rows = stmt.query_map([], |row| {
                Ok(SessionInfo {
                    id: row.get(0)?,
                    key: row.get(1)?,
                    created_at: row.get(2)?,
                    updated_at: row.get(3)?,
                    messages: row.get(4)?,
                    current: row.get(5)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
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

pub(super) fn current_session(conn: &Connection, key: &str) -> Result<i64> {
    let found: Option<i64> = conn
        .query_row(
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

fn append(conn: &Connection, session_id: i64, role: Role, parts: &[Part]) -> Result<i64> {
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
        let kind = match part {
            Part::Text { .. } => "text",
            Part::Reasoning { .. } => "reasoning",
            Part::ToolCall { .. } => "tool_call",
            Part::ToolResult { .. } => "tool_result",
            Part::Image { .. } => "image",
        };
        stmt.execute(params![
            message_id,
            seq as i64,
            kind,
            serde_json::to_string(part)?
        ])?;
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
const HISTORY: &str =
    "SELECT m.id, m.role, m.status, m.sender, m.created_at, p.body, m.position, m.tier
     FROM messages m LEFT JOIN parts p ON p.message_id = m.id
     WHERE m.session_id = ?1
       AND (m.position > ?2 OR (m.role = 'user' AND m.status != 'done'))
     ORDER BY m.position, m.id, p.seq";

fn history(conn: &Connection, session_id: i64, after: i64) -> Result<Vec<StoredMessage>> {
    let mut stmt = conn.prepare_cached(HISTORY)?;
    let mut rows = stmt.query([session_id, after])?;
    let mut out: Vec<StoredMessage> = Vec::new();
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        if out.last().map(|m| m.id) != Some(id) {
            out.push(StoredMessage {
                id,
                position: row.get(6)?,
                role: Role::parse(&row.get::<_, String>(1)?),
                status: Status::parse(&row.get::<_, String>(2)?),
                sender: row.get(3)?,
                created_at: row.get(4)?,
                parts: Vec::new(),
                tier: row
                    .get::<_, Option<String>>(7)?
                    .and_then(|t| pincer_config::Tier::parse(&t)),
            });
        }
        if let Some(body) = row.get::<_, Option<String>>(5)?
            && let Some(message) = out.last_mut()
        {
            message.parts.push(serde_json::from_str(&body)?);
        }
    }
    Ok(out)
}

#[cfg(unix)]
fn restrict_mode(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Err(err) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
        tracing::warn!("cannot make {} private (chmod 600): {err}", path.display());
    }
}

#[cfg(not(unix))]
fn restrict_mode(_path: &Path) {}

#[cfg(test)]
mod tests;
