//! Numbered schema migrations, applied in order and recorded in `PRAGMA user_version`.
//! Append new migrations; never edit a released one (old databases must open).

use rusqlite::Connection;

const MIGRATIONS: &[&str] = &[
    // 1: sessions, messages, parts, usage. A message's `position` orders the
    // transcript: a user message that waited in a queue moves to the end when a
    // turn takes it, so the transcript reads in the order the model saw it.
    "CREATE TABLE sessions (
        id          INTEGER PRIMARY KEY,
        key         TEXT NOT NULL,
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL,
        closed_at   INTEGER
    );
    CREATE INDEX sessions_by_key ON sessions(key, id);
    CREATE TABLE messages (
        id          INTEGER PRIMARY KEY,
        session_id  INTEGER NOT NULL REFERENCES sessions(id),
        role        TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
        channel     TEXT,
        platform_id TEXT,
        sender      TEXT,
        status      TEXT NOT NULL DEFAULT 'done',
        position    INTEGER NOT NULL,
        created_at  INTEGER NOT NULL
    );
    CREATE INDEX messages_by_session ON messages(session_id, position);
    CREATE UNIQUE INDEX messages_by_platform_id ON messages(channel, platform_id)
        WHERE platform_id IS NOT NULL;
    CREATE TABLE parts (
        id          INTEGER PRIMARY KEY,
        message_id  INTEGER NOT NULL REFERENCES messages(id),
        seq         INTEGER NOT NULL,
        kind        TEXT NOT NULL,
        body        TEXT NOT NULL
    );
    CREATE INDEX parts_by_message ON parts(message_id, seq);
    CREATE TABLE usage (
        id                 INTEGER PRIMARY KEY,
        session_id         INTEGER REFERENCES sessions(id),
        model              TEXT NOT NULL,
        input_tokens       INTEGER NOT NULL,
        output_tokens      INTEGER NOT NULL,
        cache_read_tokens  INTEGER NOT NULL,
        cache_write_tokens INTEGER NOT NULL,
        cost_usd           REAL NOT NULL,
        created_at         INTEGER NOT NULL
    );
    CREATE INDEX usage_by_time ON usage(created_at);",
    // 2: pairing codes, approved senders, channel health (written by the gateway,
    // read by `pincer status`).
    "CREATE TABLE pairing_codes (
        channel      TEXT NOT NULL,
        code         TEXT NOT NULL,
        sender_raw   TEXT NOT NULL,
        sender       TEXT NOT NULL,
        display_name TEXT NOT NULL,
        created_at   INTEGER NOT NULL,
        expires_at   INTEGER NOT NULL,
        last_sent_at INTEGER NOT NULL,
        PRIMARY KEY (channel, code)
    );
    CREATE INDEX pairing_by_sender ON pairing_codes(channel, sender_raw);
    CREATE TABLE approved_senders (
        channel      TEXT NOT NULL,
        sender_raw   TEXT NOT NULL,
        sender       TEXT NOT NULL,
        display_name TEXT NOT NULL,
        approved_at  INTEGER NOT NULL,
        approved_by  TEXT NOT NULL,
        PRIMARY KEY (channel, sender_raw)
    );
    CREATE TABLE channel_health (
        channel    TEXT PRIMARY KEY,
        state      TEXT NOT NULL,
        updated_at INTEGER NOT NULL
    );",
    // 3: a session's pinned model or tier (/model) and its compaction summary: the
    // messages up to `summary_upto` (a position) are replaced by `summary` when sent.
    "ALTER TABLE sessions ADD COLUMN pin TEXT;
    ALTER TABLE sessions ADD COLUMN summary TEXT;
    ALTER TABLE sessions ADD COLUMN summary_upto INTEGER;
    CREATE INDEX usage_by_session ON usage(session_id);",
    // 4: scheduled jobs and their runs. A run is identified by (job, scheduled slot),
    // so a restart never fires the same slot twice.
    "CREATE TABLE cron_jobs (
        id              INTEGER PRIMARY KEY,
        name            TEXT NOT NULL UNIQUE,
        kind            TEXT NOT NULL,
        expr            TEXT NOT NULL,
        tz              TEXT NOT NULL,
        prompt          TEXT NOT NULL,
        deliver_channel TEXT,
        deliver_chat    TEXT,
        deliver_thread  TEXT,
        session         TEXT,
        enabled         INTEGER NOT NULL DEFAULT 1,
        next_run        INTEGER,
        last_run        INTEGER,
        last_status     TEXT,
        last_error      TEXT,
        failures        INTEGER NOT NULL DEFAULT 0,
        anchor          INTEGER NOT NULL,
        created_at      INTEGER NOT NULL
    );
    CREATE TABLE cron_runs (
        id          INTEGER PRIMARY KEY,
        job_id      INTEGER NOT NULL REFERENCES cron_jobs(id) ON DELETE CASCADE,
        slot        INTEGER NOT NULL,
        status      TEXT NOT NULL,
        started_at  INTEGER NOT NULL,
        finished_at INTEGER,
        error       TEXT,
        UNIQUE (job_id, slot)
    );",
    // 5: "always" answers to tool approvals: the tool and the argument it covered.
    "CREATE TABLE tool_grants (
        tool       TEXT NOT NULL,
        subject    TEXT NOT NULL,
        granted_at INTEGER NOT NULL,
        PRIMARY KEY (tool, subject)
    );",
    // 6: trust. Usage records whom a call was for (the turn's sender and tier), so
    // non-owners get day budgets of their own and never use up the owner's; a job
    // records who made it and at which tier it runs, whether it was made in a group (its
    // runs then follow owner_memory_in_groups), and whether it delivers to a person (their
    // direct chat, opened by user id) rather than a chat. A pairing code the owners were
    // told about is never the one evicted. An assistant or tool message records the tier
    // of the turn that made it: a lower tier's turn does not see a higher one's results. Rows from before were the owner's
    // (jobs: made with the CLI or by whoever the bot then trusted with everything).
    "ALTER TABLE usage ADD COLUMN sender TEXT;
    ALTER TABLE usage ADD COLUMN tier TEXT;
    CREATE INDEX usage_by_sender ON usage(sender, created_at);
    ALTER TABLE cron_jobs ADD COLUMN creator TEXT NOT NULL DEFAULT 'terminal:local';
    ALTER TABLE cron_jobs ADD COLUMN tier TEXT NOT NULL DEFAULT 'owner';
    ALTER TABLE cron_jobs ADD COLUMN deliver_user INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE cron_jobs ADD COLUMN in_group INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE pairing_codes ADD COLUMN announced INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD COLUMN tier TEXT;",
    // 7: long days. Tool results at or before `pruned_upto` (a position) are sent as a
    // one-line stub naming where the whole result was saved. A task is a subagent run
    // in a session of its own (`task:<parent key>:<number>`); background tasks record
    // the chat to deliver to, and one a restart cut short is reported once.
    "ALTER TABLE sessions ADD COLUMN pruned_upto INTEGER;
    CREATE TABLE tasks (
        id INTEGER PRIMARY KEY,
        parent_key TEXT NOT NULL,
        parent_session_id INTEGER NOT NULL,
        number INTEGER NOT NULL,
        session_id INTEGER,
        description TEXT NOT NULL,
        background INTEGER NOT NULL,
        status TEXT NOT NULL,
        target_channel TEXT,
        target_chat TEXT,
        target_thread TEXT,
        result TEXT,
        reported INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        ended_at INTEGER,
        UNIQUE (parent_key, number)
    );
    CREATE INDEX tasks_by_status ON tasks(status);",
    // 8: who started a task (the canonical id of the turn's sender): a member or guest
    // lists and stops only their own. Older tasks get theirs from the task's prompt,
    // which was stored with it (`channel = 'task'`, `platform_id = 'task-<id>'`).
    "ALTER TABLE tasks ADD COLUMN started_by TEXT;
    UPDATE tasks SET started_by = (
        SELECT sender FROM messages
        WHERE channel = 'task' AND platform_id = 'task-' || tasks.id
    );",
    // 9: the newest position of a conversation that held untrusted content when its turn
    // ended: the conversation stays untrusted while that is still in what the model
    // sees (until a compaction's summary covers it, `/new`, or the owner's `/trust`).
    "ALTER TABLE sessions ADD COLUMN untrusted_upto INTEGER;",
    // 10: the outbox: what a person is to see, stored before it is sent and settled
    // when the platform has it (or delivery gave up); a restart sends what is not
    // settled, from the part where it stopped (`outbox`). `source` is the assistant
    // message a reply's text came from; `data` a file's bytes until it is settled.
    "CREATE TABLE outbox (
        id INTEGER PRIMARY KEY,
        session_id INTEGER,
        source INTEGER,
        channel TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        thread_id TEXT,
        to_user INTEGER NOT NULL DEFAULT 0,
        reply_to TEXT,
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        data BLOB,
        parts_sent INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        settled_at INTEGER,
        delivered INTEGER
    );
    CREATE INDEX outbox_unsettled ON outbox(id) WHERE settled_at IS NULL;
    CREATE INDEX outbox_by_source ON outbox(source) WHERE source IS NOT NULL;",
    // 11: when each channel last heard from its platform (Unix ms), for `pincer status`.
    "ALTER TABLE channel_health ADD COLUMN last_event_at INTEGER;",
    // 12: full-text search over what was said (`conversation_search`, `pincer sessions
    // search`, the panel): the text parts of user and assistant messages, by part id.
    // Triggers keep it in step inside the writer's own transactions (a rewritten user
    // message, a fork's copies); the rows already stored are indexed here.
    "CREATE VIRTUAL TABLE said USING fts5(
        text,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER said_insert AFTER INSERT ON parts WHEN new.kind = 'text' BEGIN
        INSERT INTO said (rowid, text)
        SELECT new.id, iif(json_valid(new.body), json_extract(new.body, '$.text'), '') FROM messages
        WHERE id = new.message_id AND role IN ('user', 'assistant');
    END;
    CREATE TRIGGER said_delete AFTER DELETE ON parts WHEN old.kind = 'text' BEGIN
        DELETE FROM said WHERE rowid = old.id;
    END;
    CREATE TRIGGER said_update AFTER UPDATE OF body, kind ON parts BEGIN
        DELETE FROM said WHERE rowid = old.id;
        INSERT INTO said (rowid, text)
        SELECT new.id, iif(json_valid(new.body), json_extract(new.body, '$.text'), '') FROM messages
        WHERE id = new.message_id AND role IN ('user', 'assistant') AND new.kind = 'text';
    END;
    INSERT INTO said (rowid, text)
    SELECT p.id, iif(json_valid(p.body), json_extract(p.body, '$.text'), '') FROM parts p
    JOIN messages m ON m.id = p.message_id
    WHERE p.kind = 'text' AND m.role IN ('user', 'assistant');",
];

/// Why the database could not be brought up to date.
#[derive(Debug)]
pub(crate) enum MigrateError {
    /// A newer Pincer wrote it: schema version `found`, this one knows up to `known`.
    Newer {
        found: usize,
        known: usize,
    },
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for MigrateError {
    fn from(err: rusqlite::Error) -> Self {
        MigrateError::Sql(err)
    }
}

/// Bring the database up to the newest schema; each step commits on its own.
pub(crate) fn apply(conn: &mut Connection) -> Result<(), MigrateError> {
    if version(conn)? == MIGRATIONS.len() {
        return Ok(()); // the usual case: nothing to do, and no write lock taken
    }
    // Two processes may open a new database at once (the gateway starting while
    // `pincer status` looks): the write lock is taken before the version is read, so
    // they take turns and the second finds the first one's work done.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let current = version(&tx)?;
    if current > MIGRATIONS.len() {
        return Err(MigrateError::Newer {
            found: current,
            known: MIGRATIONS.len(),
        });
    }
    for sql in MIGRATIONS.iter().skip(current) {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
    tx.commit()?;
    Ok(())
}

fn version(conn: &Connection) -> rusqlite::Result<usize> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    Ok(usize::try_from(current).unwrap_or(0))
}

/// The schema this build writes: the number of migrations it knows.
pub fn latest() -> usize {
    MIGRATIONS.len()
}

/// A database at schema `version`, as the Pincer of that schema left it.
#[cfg(test)]
pub(crate) fn apply_first(conn: &Connection, version: usize) -> rusqlite::Result<()> {
    for sql in &MIGRATIONS[..version] {
        conn.execute_batch(sql)?;
    }
    conn.pragma_update(None, "user_version", version as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_opening_a_new_database_at_once_take_turns() {
        for _ in 0..10 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("pincer.db");
            let start = std::sync::Arc::new(std::sync::Barrier::new(4));
            let openers: Vec<_> = (0..4)
                .map(|_| {
                    let (path, start) = (path.clone(), std::sync::Arc::clone(&start));
                    std::thread::spawn(move || {
                        start.wait();
                        crate::Store::open(&path).map(|_| ())
                    })
                })
                .collect();
            for opener in openers {
                opener
                    .join()
                    .unwrap()
                    .expect("every opener gets the database");
            }
        }
    }

    #[test]
    fn a_database_from_the_first_release_upgrades_and_keeps_its_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pincer.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
            conn.execute("INSERT INTO sessions (key, created_at, updated_at) VALUES ('terminal:dm:local', 1, 1)", []).unwrap();
            conn.execute(
                "INSERT INTO messages (session_id, role, status, position, created_at) VALUES (1, 'user', 'done', 1, 1)",
                [],
            )
            .unwrap();
        }
        let mut conn = Connection::open(&path).unwrap();
        apply(&mut conn).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version as usize, MIGRATIONS.len());
        let (key, pin): (String, Option<String>) = conn
            .query_row("SELECT key, pin FROM sessions WHERE id = 1", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((key.as_str(), pin), ("terminal:dm:local", None));
        let jobs: i64 = conn
            .query_row("SELECT COUNT(*) FROM cron_jobs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(jobs, 0);
    }
}
