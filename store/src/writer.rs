//! The writer: one task on the blocking pool runs every store call on the one
//! connection, committing what is waiting together (group commit).
//!
//! A call is a job put in the queue (`crate::batch`); its caller waits for the answer
//! as a task. When the queue was empty, the call starts the writer on the blocking
//! pool; the writer takes everything queued (up to `BATCH`), runs it in one
//! transaction, each job inside its own savepoint, and goes on until the queue is
//! empty. (While the writer runs, tokio's paused test clock does not jump ahead, as
//! with any blocking task.) Every call is atomic: one that returns an error (or
//! panics) loses all its changes and only its own, so the calls need no transactions
//! of their own. The answers are sent after the commit, so a caller told "stored" can
//! rely on it exactly as before: an inbound message is committed before it is
//! acknowledged or sent to the model, a reply before its turn is marked done. If the
//! commit fails (a full disk), every call of the batch hears it.
//!
//! A call alone runs in its own transaction as before, with one hand-off to the blocking
//! pool. Under load the queue is never empty: one commit carries many sessions'
//! messages and no call waits for a thread.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use rusqlite::Connection;

use super::{Result, StoreError};
use crate::batch::{Batcher, lock};

/// Jobs committed together at most: a batch holds the database's write lock, and
/// another process (`pincer pair approve` beside the gateway) waits for it.
const BATCH: usize = 256;

/// What a job leaves to do once the batch's commit is known: answer its caller.
type Answer = Box<dyn FnOnce(Option<&rusqlite::Error>) + Send>;

/// A store call: runs on the connection (or hears why it cannot), says whether it
/// succeeded (to keep or roll back its changes) and how to answer.
type Job = Box<
    dyn FnOnce(std::result::Result<&mut Connection, &rusqlite::Error>) -> (bool, Answer) + Send,
>;

/// The queue and its worker, which owns the connection; shared by every `Store` clone.
/// The connection closes when the last one is dropped.
#[derive(Clone)]
pub(super) struct Writer {
    jobs: Batcher<Job>,
}

impl Writer {
    pub(super) fn new(conn: Connection) -> Writer {
        // A mutex so that the work is `Sync`; only the one running worker takes it.
        let conn = Mutex::new(conn);
        Writer {
            jobs: Batcher::new(BATCH, move |batch: &mut Vec<Job>| {
                run_batch(&mut lock(&conn), batch)
            }),
        }
    }

    /// Queue `work` at once and return its answer, given after its commit. The job is
    /// sent before the first poll, so calls are served in the order they were made.
    pub(super) fn run<T, F>(&self, work: F) -> impl Future<Output = Result<T>> + use<T, F>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        let (tell, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let result = match conn {
                Ok(conn) => work(conn),
                Err(err) => Err(StoreError::Sql(again(err))),
            };
            let ok = result.is_ok();
            let answer: Answer = Box::new(move |failed_commit| {
                let result = match (failed_commit, result) {
                    (Some(err), Ok(_)) => Err(StoreError::Sql(again(err))),
                    (_, result) => result,
                };
                let _ = tell.send(result);
            });
            (ok, answer)
        });
        self.jobs.push(job);
        async move { answer.await.map_err(|_| stopped())? }
    }
}

fn stopped() -> StoreError {
    StoreError::Worker("a store call did not finish (it panicked?)".into())
}

/// The jobs in one transaction, each in a savepoint when there are several; answers
/// after the commit. A lone job takes the lock only when it writes, as it always did;
/// a batch takes it at once, so no other process's commit can come between its reads
/// and its writes.
fn run_batch(conn: &mut Connection, batch: &mut Vec<Job>) {
    let several = batch.len() > 1;
    let begin = if several { "BEGIN IMMEDIATE" } else { "BEGIN" };
    if let Err(err) = exec(conn, begin) {
        // No transaction (another process held the lock past the busy timeout): the
        // calls fail as each would have failed to begin its own.
        let answer = |job: Job| refuse(job, &err);
        batch.drain(..).for_each(answer);
        return;
    }
    let mut answers = Vec::with_capacity(batch.len());
    let mut jobs = batch.drain(..);
    for job in jobs.by_ref() {
        if several && let Err(err) = exec(conn, "SAVEPOINT pincer_job") {
            refuse(job, &err);
            continue;
        }
        let outcome = guarded(job, conn);
        if conn.is_autocommit() {
            // An error SQLite answers by rolling back the whole transaction (a full
            // disk, an I/O error): what the batch did so far is gone. Its callers hear
            // so, and the rest run alone.
            if let Some((_, answer)) = outcome {
                answer(None);
            }
            let lost = rolled_back();
            answers
                .into_iter()
                .for_each(|answer: Answer| answer(Some(&lost)));
            jobs.for_each(|job| run_batch(conn, &mut vec![job]));
            return;
        }
        let kept = matches!(outcome, Some((true, _)));
        if !several && !kept {
            // A lone call that failed: nothing of it is kept.
            let _ = exec(conn, "ROLLBACK");
            if let Some((_, answer)) = outcome {
                answer(None);
            }
            return;
        }
        let end: &[&str] = match (several, kept) {
            (true, true) => &["RELEASE pincer_job"],
            (true, false) => &["ROLLBACK TO pincer_job", "RELEASE pincer_job"],
            (false, _) => &[],
        };
        for sql in end {
            if let Err(err) = exec(conn, sql) {
                tracing::warn!("cannot end a store call's savepoint: {err}");
            }
        }
        if let Some((_, answer)) = outcome {
            answers.push(answer);
        }
    }
    let committed = exec(conn, "COMMIT");
    if committed.is_err() && !conn.is_autocommit() {
        let _ = exec(conn, "ROLLBACK");
    }
    let failed = committed.as_ref().err();
    answers.into_iter().for_each(|answer| answer(failed));
}

/// A statement of the writer's own, through the statement cache (they run on every
/// call, and parsing them each time showed in profiles).
fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// A job that cannot run: its caller hears why.
fn refuse(job: Job, err: &rusqlite::Error) {
    let (_, answer) = job(Err(err));
    answer(None);
}

fn rolled_back() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
        Some("another store call's error rolled back the transaction this one was in; nothing of it was kept".into()),
    )
}

/// Run a job; a panic drops its answer, so its caller hears the thread's error
/// rather than waiting forever, and the thread goes on with the next.
fn guarded(job: Job, conn: &mut Connection) -> Option<(bool, Answer)> {
    catch_unwind(AssertUnwindSafe(|| job(Ok(conn)))).ok()
}

/// The commit's error, once more for each caller of the batch.
fn again(err: &rusqlite::Error) -> rusqlite::Error {
    match err {
        rusqlite::Error::SqliteFailure(code, message) => {
            rusqlite::Error::SqliteFailure(*code, message.clone())
        }
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(other.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests;
