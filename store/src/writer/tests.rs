//! Group commit, observed on a bare table: a call queued behind a running one shares
//! its successor's transaction, a failing call loses only its own changes, and no call
//! hears "done" before the commit that keeps its work.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use rusqlite::Connection;

use super::Writer;
use crate::{Result, StoreError};

/// A writer on a fresh file database with a table `t(n)` and a child table whose
/// foreign key is checked only at commit, and the count of its commits.
fn writer() -> (
    tempfile::TempDir,
    Writer,
    std::path::PathBuf,
    Arc<AtomicUsize>,
) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         PRAGMA foreign_keys = ON;
         CREATE TABLE t (n INTEGER);
         CREATE TABLE parent (id INTEGER PRIMARY KEY);
         CREATE TABLE child (parent INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);",
    )
    .unwrap();
    // A lock held by another process is met at once, not after five seconds.
    conn.busy_timeout(Duration::from_millis(50)).unwrap();
    let commits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&commits);
    conn.commit_hook(Some(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        false
    }));
    (dir, Writer::new(conn), path, commits)
}

/// Start a call that holds the thread until `release` is sent, and wait until it runs:
/// what is queued next forms one batch.
async fn hold(writer: &Writer) -> (mpsc::Sender<()>, impl Future<Output = Result<()>>) {
    let (running, started) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let held = writer.run(move |_conn| {
        let _ = running.send(());
        let _ = released.recv_timeout(Duration::from_secs(30));
        Ok(())
    });
    started.recv_timeout(Duration::from_secs(30)).unwrap();
    (release, held)
}

fn insert(n: i64) -> impl FnOnce(&mut Connection) -> Result<()> + Send + 'static {
    move |conn| {
        conn.execute("INSERT INTO t (n) VALUES (?1)", [n])?;
        Ok(())
    }
}

fn rows(path: &std::path::Path) -> Vec<i64> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn.prepare("SELECT n FROM t ORDER BY n").unwrap();
    stmt.query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[tokio::test]
async fn calls_queued_behind_a_running_one_are_committed_together() {
    let (_dir, writer, path, commits) = writer();
    let (release, held) = hold(&writer).await;
    let calls: Vec<_> = (0..20).map(|n| writer.run(insert(n))).collect();
    release.send(()).unwrap();
    held.await.unwrap();
    for call in calls {
        call.await.unwrap();
    }
    assert_eq!(rows(&path), (0..20).collect::<Vec<_>>());
    // One commit for the twenty (the call that held the thread wrote nothing).
    assert_eq!(commits.load(Ordering::SeqCst), 1);
    // Alone, a call has its own commit.
    writer.run(insert(99)).await.unwrap();
    assert_eq!(commits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_failing_call_in_a_batch_loses_only_its_own_changes() {
    let (_dir, writer, path, _) = writer();
    let (release, held) = hold(&writer).await;
    let before = writer.run(insert(1));
    let failing = writer.run(|conn| {
        conn.execute("INSERT INTO t (n) VALUES (2)", [])?;
        conn.execute("INSERT INTO no_such_table VALUES (1)", [])?;
        Ok(())
    });
    let after = writer.run(insert(3));
    release.send(()).unwrap();
    held.await.unwrap();
    before.await.unwrap();
    assert!(matches!(failing.await, Err(StoreError::Sql(_))));
    after.await.unwrap();
    assert_eq!(rows(&path), vec![1, 3]);
}

#[tokio::test]
async fn no_call_hears_done_when_the_commit_fails() {
    let (_dir, writer, path, _) = writer();
    let (release, held) = hold(&writer).await;
    let first = writer.run(insert(1));
    // Accepted by its statement; refused by the commit (a deferred foreign key), as a
    // full disk refuses a commit.
    let orphan = writer.run(|conn| {
        conn.execute("INSERT INTO child (parent) VALUES (7)", [])?;
        Ok(())
    });
    let last = writer.run(insert(2));
    release.send(()).unwrap();
    held.await.unwrap();
    for outcome in [
        first.await.map(|_| ()),
        orphan.await,
        last.await.map(|_| ()),
    ] {
        let err = outcome.expect_err("a call was told its work was kept");
        assert!(err.to_string().contains("FOREIGN KEY"), "{err}");
    }
    assert_eq!(rows(&path), Vec::<i64>::new());
    // The writer goes on: the next call is committed.
    writer.run(insert(5)).await.unwrap();
    assert_eq!(rows(&path), vec![5]);
}

#[tokio::test]
async fn when_sqlite_rolls_the_batch_back_its_calls_hear_so_and_the_rest_run_alone() {
    let (_dir, writer, path, _) = writer();
    let (release, held) = hold(&writer).await;
    let lost = writer.run(insert(1));
    // What SQLite does on some errors (a full disk, an I/O error): the whole
    // transaction is rolled back under the batch.
    let breaker = writer.run(|conn| {
        conn.execute_batch("ROLLBACK")?;
        Ok(())
    });
    let rest = writer.run(insert(2));
    release.send(()).unwrap();
    held.await.unwrap();
    let err = lost
        .await
        .expect_err("a rolled-back call was told it was kept");
    assert!(err.to_string().contains("rolled back"), "{err}");
    breaker.await.unwrap();
    rest.await.unwrap();
    assert_eq!(rows(&path), vec![2]);
}

#[tokio::test]
async fn a_panicking_call_fails_alone_and_the_thread_goes_on() {
    let (_dir, writer, path, _) = writer();
    let (release, held) = hold(&writer).await;
    let panics = writer.run(|_conn| -> Result<()> { panic!("a bug in a store call") });
    let next = writer.run(insert(4));
    release.send(()).unwrap();
    held.await.unwrap();
    assert!(matches!(panics.await, Err(StoreError::Worker(_))));
    next.await.unwrap();
    assert_eq!(rows(&path), vec![4]);
}

#[tokio::test]
async fn a_lone_call_that_fails_or_panics_keeps_nothing() {
    let (_dir, writer, path, _) = writer();
    let failing = writer.run(|conn| {
        conn.execute("INSERT INTO t (n) VALUES (1)", [])?;
        conn.execute("INSERT INTO no_such_table VALUES (1)", [])?;
        Ok(())
    });
    assert!(matches!(failing.await, Err(StoreError::Sql(_))));
    let panics = writer.run(|conn| -> Result<()> {
        conn.execute("INSERT INTO t (n) VALUES (2)", [])?;
        panic!("a bug in a store call")
    });
    assert!(matches!(panics.await, Err(StoreError::Worker(_))));
    writer.run(insert(3)).await.unwrap();
    assert_eq!(rows(&path), vec![3]);
}

#[tokio::test]
async fn a_call_that_cannot_begin_hears_why() {
    let (_dir, writer, path, _) = writer();
    // Another process holds the write lock past the busy timeout.
    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (release, held) = hold(&writer).await;
    let queued: Vec<_> = (0..3).map(|n| writer.run(insert(n))).collect();
    release.send(()).unwrap();
    held.await.unwrap();
    for call in queued {
        let err = call.await.expect_err("a call ran without its lock");
        assert!(err.to_string().contains("locked"), "{err}");
    }
    other.execute_batch("ROLLBACK").unwrap();
    writer.run(insert(4)).await.unwrap();
    assert_eq!(rows(&path), vec![4]);
}
