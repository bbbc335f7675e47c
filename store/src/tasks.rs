//! Subagent tasks in the store: one row per `task` call, numbered per conversation
//! (the parent's session key), with the child's own session, who started it, whether
//! it runs in the background, the chat a background task reports to, and how it ended. A task still
//! `running` when the process starts was cut short by a restart (`interrupted`).

use pincer_channels::{SessionKey, Target};
use rusqlite::{OptionalExtension, params};

use super::{Result, Store, now_ms};

/// A task as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRow {
    pub id: i64,
    pub parent_key: String,
    pub parent_session_id: i64,
    /// Its number in the parent conversation: 1, 2, …
    pub number: i64,
    pub session_id: Option<i64>,
    pub description: String,
    /// The canonical id of the sender whose turn started it (`None`: unknown, from a
    /// database older than the column whose prompt was gone).
    pub started_by: Option<String>,
    pub background: bool,
    /// `running` | `done` | `failed` | `stopped` | `interrupted`.
    pub status: String,
    /// Where a background task reports.
    pub target: Option<Target>,
    /// Its final answer, or why it has none.
    pub result: Option<String>,
    pub created_at: i64,
    pub ended_at: Option<i64>,
}

impl TaskRow {
    /// `task:<parent key>:<number>`.
    pub fn key(&self) -> String {
        pincer_channels::SessionKey::task_key(&self.parent_key, self.number as u64)
    }
}

const COLUMNS: &str = "id, parent_key, parent_session_id, number, session_id, description, background, status, target_channel, target_chat, target_thread, result, created_at, ended_at, started_by";

fn task_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<TaskRow> {
    let channel: Option<String> = row.get(8)?;
    let chat: Option<String> = row.get(9)?;
    let thread: Option<String> = row.get(10)?;
    Ok(TaskRow {
        id: row.get(0)?,
        parent_key: row.get(1)?,
        parent_session_id: row.get(2)?,
        number: row.get(3)?,
        session_id: row.get(4)?,
        description: row.get(5)?,
        background: row.get(6)?,
        status: row.get(7)?,
        target: channel
            .zip(chat)
            .map(|(channel, chat)| Target::chat(&channel, &chat, thread.as_deref())),
        result: row.get(11)?,
        created_at: row.get(12)?,
        ended_at: row.get(13)?,
        started_by: row.get(14)?,
    })
}

impl Store {
    /// Record a new running task of the conversation `parent_key`, started by the turn
    /// of `started_by` (a canonical id), and give it the next number there; its own
    /// session is made for `task:<parent key>:<number>`.
    pub async fn new_task(
        &self,
        parent_key: &SessionKey,
        parent_session_id: i64,
        started_by: &str,
        description: &str,
        background: bool,
        target: &Target,
    ) -> Result<TaskRow> {
        let (parent, started_by, description, target) = (
            parent_key.clone(),
            started_by.to_string(),
            description.to_string(),
            target.clone(),
        );
        self.run(move |conn| {
            let parent_key = parent.to_string();
            let number: i64 = conn.query_row(
                "SELECT COALESCE(MAX(number), 0) + 1 FROM tasks WHERE parent_key = ?1",
                [&parent_key],
                |row| row.get(0),
            )?;
            let key = SessionKey::task(parent, number as u64).to_string();
            let session_id = super::session::current_session(conn, &key)?;
            conn.execute(
                "INSERT INTO tasks (parent_key, parent_session_id, number, session_id, description, background, status, target_channel, target_chat, target_thread, created_at, started_by)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?8, ?9, ?10, ?11)",
                params![
                    parent_key,
                    parent_session_id,
                    number,
                    session_id,
                    description,
                    background,
                    target.channel,
                    target.chat_id,
                    target.thread_id,
                    now_ms(),
                    started_by
                ],
            )?;
            let id = conn.last_insert_rowid();
            let row = conn.query_row(
                &format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"),
                [id],
                task_row,
            )?;
            Ok(row)
        })
        .await
    }

    /// A task ended: `status` and its answer or why not.
    pub async fn finish_task(&self, id: i64, status: &str, result: &str) -> Result<()> {
        let (status, result) = (status.to_string(), result.to_string());
        self.run(move |conn| {
            conn.execute(
                "UPDATE tasks SET status = ?2, result = ?3, ended_at = ?4 WHERE id = ?1",
                params![id, status, result, now_ms()],
            )?;
            Ok(())
        })
        .await
    }

    /// The newest `limit` tasks of a conversation, newest first; with `started_by`,
    /// only the ones that sender's turns started.
    pub async fn tasks_of(
        &self,
        parent_key: &SessionKey,
        started_by: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskRow>> {
        let (parent_key, started_by) = (parent_key.to_string(), started_by.map(str::to_string));
        self.run(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tasks WHERE parent_key = ?1
                 AND (?2 IS NULL OR started_by = ?2) ORDER BY number DESC LIMIT ?3"
            ))?;
            let rows = stmt.query_map(params![parent_key, started_by, limit as i64], task_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// One task of a conversation by its number.
    pub async fn task(&self, parent_key: &SessionKey, number: i64) -> Result<Option<TaskRow>> {
        let parent_key = parent_key.to_string();
        self.run(move |conn| {
            Ok(conn
                .query_row(
                    &format!("SELECT {COLUMNS} FROM tasks WHERE parent_key = ?1 AND number = ?2"),
                    params![parent_key, number],
                    task_row,
                )
                .optional()?)
        })
        .await
    }

    /// Tasks a previous run left `running`: each becomes `interrupted` and its prompt is
    /// closed (so recovery never runs it again). Returns the background ones, to be
    /// reported: the change of status, in the same transaction, makes that happen once.
    pub async fn interrupt_tasks(&self) -> Result<Vec<TaskRow>> {
        self.run(move |conn| {
            let running: Vec<TaskRow> = {
                let mut stmt = conn.prepare(&format!(
                    "SELECT {COLUMNS} FROM tasks WHERE status = 'running'"
                ))?;
                let rows = stmt.query_map([], task_row)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            };
            let now = now_ms();
            for task in &running {
                conn.execute(
                    "UPDATE tasks SET status = 'interrupted', result = 'interrupted: pincer stopped while it ran', ended_at = ?2, reported = background WHERE id = ?1",
                    params![task.id, now],
                )?;
                if let Some(session) = task.session_id {
                    conn.execute(
                        "UPDATE messages SET status = 'done' WHERE session_id = ?1 AND role = 'user' AND status != 'done'",
                        [session],
                    )?;
                }
            }
            Ok(running.into_iter().filter(|t| t.background).collect())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::super::migrations;
    use super::*;

    fn group() -> SessionKey {
        SessionKey::Chat {
            channel: "telegram".into(),
            group: true,
            chat_id: "-1001".into(),
            thread: None,
        }
    }

    #[tokio::test]
    async fn a_conversations_tasks_are_listed_for_whoever_started_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("pincer.db")).unwrap();
        let parent = store.current_session(&group()).await.unwrap();
        let target = Target::chat("telegram", "-1001", None);
        for (by, what) in [("telegram:42", "owner's"), ("telegram:9", "guest's")] {
            store
                .new_task(&group(), parent, by, what, false, &target)
                .await
                .unwrap();
        }
        let described = |rows: Vec<TaskRow>| -> Vec<String> {
            rows.into_iter().map(|r| r.description).collect()
        };
        let all = store.tasks_of(&group(), None, 10).await.unwrap();
        assert_eq!(all[0].started_by.as_deref(), Some("telegram:9"));
        assert_eq!(described(all), ["guest's", "owner's"]);
        let guests = store.tasks_of(&group(), Some("telegram:9"), 10).await;
        assert_eq!(described(guests.unwrap()), ["guest's"]);
        let nobodys = store.tasks_of(&group(), Some("telegram:7"), 10).await;
        assert!(nobodys.unwrap().is_empty());
    }

    #[tokio::test]
    async fn tasks_from_before_schema_8_get_their_starter_from_their_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pincer.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            migrations::apply_first(&conn, 7).unwrap();
            conn.execute_batch(
                "INSERT INTO sessions (id, key, created_at, updated_at) VALUES
                   (1, 'telegram:group:-1001', 1, 1),
                   (2, 'task:telegram:group:-1001:1', 1, 1);
                 INSERT INTO tasks (id, parent_key, parent_session_id, number, session_id, description, background, status, created_at)
                 VALUES (1, 'telegram:group:-1001', 1, 1, 2, 'with its prompt', 0, 'done', 1),
                        (2, 'telegram:group:-1001', 1, 2, NULL, 'prompt gone', 0, 'done', 1);
                 INSERT INTO messages (session_id, role, channel, platform_id, sender, status, position, created_at)
                 VALUES (2, 'user', 'task', 'task-1', 'telegram:9', 'done', 1, 1);",
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let rows = store.tasks_of(&group(), None, 10).await.unwrap();
        let starters: Vec<Option<&str>> = rows.iter().map(|r| r.started_by.as_deref()).collect();
        assert_eq!(starters, [None, Some("telegram:9")]);
        let guests = store
            .tasks_of(&group(), Some("telegram:9"), 10)
            .await
            .unwrap();
        assert_eq!(guests.len(), 1);
    }
}
