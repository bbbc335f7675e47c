//! Scheduled jobs and their runs in the store. The scheduler claims a run by
//! inserting (job, slot) — unique — before firing, so no slot ever fires twice, even
//! across a crash and restart.

use pincer_channels::Target;
use pincer_config::Tier;
use rusqlite::{OptionalExtension, params};

use super::{Result, Store, StoreError, now_ms};

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub id: i64,
    pub name: String,
    /// "cron" | "every" | "at", with `expr` in the stored form of `cron::Schedule`.
    pub kind: String,
    pub expr: String,
    pub tz: String,
    pub prompt: String,
    /// Where results go: a chat, or a person's direct chat.
    pub deliver: Option<Target>,
    /// A shared session name; `None` means a fresh session per run.
    pub session: Option<String>,
    pub enabled: bool,
    pub next_run: Option<i64>,
    pub last_run: Option<i64>,
    pub last_status: Option<String>,
    pub last_error: Option<String>,
    pub failures: i64,
    /// Interval schedules count from here (unix ms).
    pub anchor: i64,
    /// Who made it: a canonical sender id, or `terminal:local` for the CLI.
    pub creator: String,
    /// The tier it was made at; it runs at no higher.
    pub tier: Tier,
    /// Made in a group: its runs get the owner's memory only with
    /// `access.owner_memory_in_groups`.
    pub in_group: bool,
}

/// What creating a job needs.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub name: String,
    pub kind: String,
    pub expr: String,
    pub tz: String,
    pub prompt: String,
    pub deliver: Option<Target>,
    pub session: Option<String>,
    pub next_run: Option<i64>,
    pub anchor: i64,
    pub creator: String,
    pub tier: Tier,
    pub in_group: bool,
}

const COLUMNS: &str = "id, name, kind, expr, tz, prompt, deliver_channel, deliver_chat, deliver_thread, session, enabled, next_run, last_run, last_status, last_error, failures, anchor, creator, tier, deliver_user, in_group";

fn job_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Job> {
    let channel: Option<String> = row.get(6)?;
    let chat: Option<String> = row.get(7)?;
    let thread: Option<String> = row.get(8)?;
    let user: bool = row.get(19)?;
    Ok(Job {
        id: row.get(0)?,
        name: row.get(1)?,
        kind: row.get(2)?,
        expr: row.get(3)?,
        tz: row.get(4)?,
        prompt: row.get(5)?,
        deliver: channel.zip(chat).map(|(channel, chat)| Target {
            channel,
            chat_id: chat,
            thread_id: thread,
            user,
        }),
        session: row.get(9)?,
        enabled: row.get(10)?,
        next_run: row.get(11)?,
        last_run: row.get(12)?,
        last_status: row.get(13)?,
        last_error: row.get(14)?,
        failures: row.get(15)?,
        anchor: row.get(16)?,
        creator: row.get(17)?,
        // A tier this build does not know is treated as the lowest.
        tier: Tier::parse(&row.get::<_, String>(18)?).unwrap_or(Tier::Guest),
        in_group: row.get(20)?,
    })
}

impl Store {
    pub async fn add_job(&self, job: NewJob) -> Result<Job> {
        self.run(move |conn| {
            let (channel, chat, thread, user) = match job.deliver {
                Some(t) => (Some(t.channel), Some(t.chat_id), t.thread_id, t.user),
                None => (None, None, None, false),
            };
            let inserted = conn.execute(
                "INSERT INTO cron_jobs (name, kind, expr, tz, prompt, deliver_channel, deliver_chat, deliver_thread, session, next_run, anchor, created_at, creator, tier, deliver_user, in_group)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16) ON CONFLICT (name) DO NOTHING",
                params![job.name, job.kind, job.expr, job.tz, job.prompt, channel, chat, thread, job.session, job.next_run, job.anchor, now_ms(), job.creator, job.tier.name(), user, job.in_group],
            )?;
            if inserted == 0 {
                return Err(StoreError::JobExists { name: job.name });
            }
            let id = conn.last_insert_rowid();
            Ok(conn.query_row(&format!("SELECT {COLUMNS} FROM cron_jobs WHERE id = ?1"), [id], job_row)?)
        })
        .await
    }

    pub async fn jobs(&self) -> Result<Vec<Job>> {
        self.run(|conn| {
            let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM cron_jobs ORDER BY id"))?;
            let rows = stmt.query_map([], job_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// A job by numeric id or by name.
    pub async fn job(&self, id_or_name: &str) -> Result<Option<Job>> {
        let wanted = id_or_name.to_string();
        self.run(move |conn| {
            let id = wanted.parse::<i64>().unwrap_or(-1);
            Ok(conn
                .query_row(
                    &format!("SELECT {COLUMNS} FROM cron_jobs WHERE id = ?1 OR name = ?2"),
                    params![id, wanted],
                    job_row,
                )
                .optional()?)
        })
        .await
    }

    pub async fn remove_job(&self, id: i64) -> Result<()> {
        self.run(move |conn| {
            conn.execute("DELETE FROM cron_jobs WHERE id = ?1", [id])?;
            Ok(())
        })
        .await
    }

    pub async fn set_next_run(&self, id: i64, next_run: Option<i64>) -> Result<()> {
        self.run(move |conn| {
            conn.execute(
                "UPDATE cron_jobs SET next_run = ?2 WHERE id = ?1",
                params![id, next_run],
            )?;
            Ok(())
        })
        .await
    }

    /// Claim the run of `job` at `slot`; false if that slot was claimed before.
    pub async fn claim_run(&self, job: i64, slot: i64, status: &str) -> Result<bool> {
        let status = status.to_string();
        self.run(move |conn| {
            let inserted = conn.execute(
                "INSERT INTO cron_runs (job_id, slot, status, started_at) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
                params![job, slot, status, now_ms()],
            )?;
            Ok(inserted == 1)
        })
        .await
    }

    /// Record how a run ended; returns the job's consecutive failures after it.
    pub async fn finish_run(&self, job: i64, slot: i64, error: Option<String>) -> Result<i64> {
        self.run(move |conn| {
            let now = now_ms();
            let status = if error.is_some() { "failed" } else { "ok" };
            conn.execute(
                "UPDATE cron_runs SET status = ?3, finished_at = ?4, error = ?5 WHERE job_id = ?1 AND slot = ?2",
                params![job, slot, status, now, error],
            )?;
            conn.execute(
                "UPDATE cron_jobs SET last_run = ?2, last_status = ?3, last_error = ?4,
                    failures = CASE WHEN ?4 IS NULL THEN 0 ELSE failures + 1 END WHERE id = ?1",
                params![job, now, status, error],
            )?;
            let failures = conn.query_row("SELECT failures FROM cron_jobs WHERE id = ?1", [job], |r| r.get(0)).optional()?.unwrap_or(0);
            Ok(failures)
        })
        .await
    }

    pub async fn set_job_enabled(&self, id: i64, enabled: bool) -> Result<()> {
        self.run(move |conn| {
            conn.execute(
                "UPDATE cron_jobs SET enabled = ?2 WHERE id = ?1",
                params![id, enabled],
            )?;
            Ok(())
        })
        .await
    }

    /// The runs of a job, newest first: (slot, status, error).
    pub async fn job_runs(
        &self,
        job: i64,
        limit: usize,
    ) -> Result<Vec<(i64, String, Option<String>)>> {
        self.run(move |conn| {
            let mut stmt = conn.prepare("SELECT slot, status, error FROM cron_runs WHERE job_id = ?1 ORDER BY slot DESC LIMIT ?2")?;
            let rows = stmt.query_map(params![job, limit as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }
}

impl Store {
    /// Runs claimed but never finished (the process died during them).
    pub async fn unfinished_runs(&self) -> Result<Vec<(i64, i64)>> {
        self.run(|conn| {
            let mut stmt =
                conn.prepare("SELECT job_id, slot FROM cron_runs WHERE status = 'running'")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    /// Tokens spent since `since_ms` by sessions whose key starts with `prefix`.
    pub async fn tokens_for_keys_since(&self, prefix: &str, since_ms: i64) -> Result<u64> {
        let pattern = format!("{prefix}%");
        self.run(move |conn| {
            let total: i64 = conn.query_row(
                "SELECT COALESCE(SUM(u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens), 0)
                 FROM usage u JOIN sessions s ON s.id = u.session_id
                 WHERE s.key LIKE ?1 AND u.created_at >= ?2",
                params![pattern, since_ms],
                |r| r.get(0),
            )?;
            Ok(total.max(0) as u64)
        })
        .await
    }
}
