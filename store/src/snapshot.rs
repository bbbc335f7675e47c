//! A copy of a SQLite database as of one moment, taken while a gateway keeps writing
//! to it: SQLite's online backup API over a connection of its own (never the writer's),
//! all pages in one step, so the copy is one read transaction. In WAL mode readers do
//! not block the writer, and the writer does not restart the copy (a copy made in small
//! steps starts over whenever another connection writes, and under a busy gateway might
//! never finish). `pincer backup` copies `pincer.db` and the memory's index this way.
//!
//! It opens the source read and write but never writes (`query_only`): a read-only
//! connection to a WAL database needs its `-shm` file to exist, which a database no
//! process has open lacks. It never creates the source, and never migrates it: the copy
//! is the database as it is, and is migrated when it is opened after a restore.

use std::path::Path;
use std::time::Duration;

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

use crate::error::{Result, StoreError};

/// How long the copy waits for a lock (a checkpoint, or the switch to WAL) before
/// giving up; the writer holds none of the locks a reader needs for longer.
const PATIENCE: Duration = Duration::from_secs(10);
/// The pause between tries while the source is busy.
const PAUSE: Duration = Duration::from_millis(20);

/// Copy the SQLite database at `from` to a new file `to` (which must not exist) as
/// of one moment. Returns the copy's schema version (`PRAGMA user_version`).
pub fn snapshot(from: &Path, to: &Path) -> Result<i64> {
    let open_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StoreError::Open { path, source }
    };
    let source = Connection::open_with_flags(
        from,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(open_err(from))?;
    source.busy_timeout(PATIENCE).map_err(open_err(from))?;
    source
        .pragma_update(None, "query_only", true)
        .map_err(open_err(from))?;
    let mut copy = Connection::open_with_flags(
        to,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(open_err(to))?;
    {
        let backup = Backup::new(&source, &mut copy)?;
        let started = std::time::Instant::now();
        loop {
            // -1: every page in one step, under one read transaction.
            match backup.step(-1)? {
                StepResult::Done => break,
                StepResult::Busy | StepResult::Locked if started.elapsed() < PATIENCE => {
                    #[expect(
                        clippy::disallowed_methods,
                        reason = "a backup runs on a blocking thread of its own; a short wait for a lock"
                    )]
                    std::thread::sleep(PAUSE);
                }
                StepResult::More => {}
                // Busy or locked for longer than anyone holds a lock: report it as SQLite would.
                _ => {
                    return Err(StoreError::Sql(rusqlite::Error::SqliteFailure(
                        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                        Some(format!(
                            "{} stayed locked for {}s",
                            from.display(),
                            PATIENCE.as_secs()
                        )),
                    )));
                }
            }
        }
    }
    let version = copy.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    drop(copy);
    crate::restrict_mode(to);
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;
    use pincer_channels::SessionKey;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_snapshot_taken_while_the_store_writes_is_whole_and_the_writes_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("pincer.db");
        let store = Store::open(&db).unwrap();
        let key: SessionKey = "terminal:dm:local".parse().unwrap();
        let session = store.current_session(&key).await.unwrap();
        // A writer that keeps going while the copies are taken.
        let writer = {
            let store = store.clone();
            tokio::spawn(async move {
                for n in 0..400 {
                    store
                        .insert_user(session, "terminal", &n.to_string(), "owner", "hello")
                        .await
                        .expect("the gateway's writes go on during a backup");
                }
            })
        };
        let mut counts = Vec::new();
        for n in 0..5 {
            let to = dir.path().join(format!("copy-{n}.db"));
            let version = tokio::task::spawn_blocking({
                let (db, to) = (db.clone(), to.clone());
                move || snapshot(&db, &to)
            })
            .await
            .unwrap()
            .unwrap();
            assert_eq!(version, crate::migrations::latest() as i64);
            let copy = Connection::open(&to).unwrap();
            let check: String = copy
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .unwrap();
            assert_eq!(check, "ok");
            let count: i64 = copy
                .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
                .unwrap();
            counts.push(count);
        }
        writer.await.unwrap();
        assert!(
            counts.windows(2).all(|w| w[0] <= w[1]),
            "each copy is a later moment: {counts:?}"
        );
        // The copy opens as a store of its own.
        let last = dir.path().join("copy-4.db");
        let reopened = Store::open(&last).unwrap();
        assert_eq!(
            reopened.sessions().await.unwrap().len(),
            1,
            "the copy holds the session"
        );
    }

    #[test]
    fn a_missing_database_is_not_created() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.db");
        let err = snapshot(&missing, &dir.path().join("copy.db")).unwrap_err();
        assert!(matches!(err, StoreError::Open { .. }), "{err}");
        assert!(!missing.exists());
    }
}
