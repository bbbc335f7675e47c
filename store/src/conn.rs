//! The one SQLite connection's settings (WAL, page cache, pinned query plans, busy
//! timeout) and `Cached`, which runs the statements of every turn through the
//! connection's statement cache. Nothing here knows a table.

use std::path::Path;

use rusqlite::Connection;

/// `execute` and `query_row` through the connection's statement cache: the same few
/// statements run on every turn, and parsing them each time showed in profiles.
pub(super) trait Cached {
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

/// SQLite's page cache per connection (KiB; SQLite's default is about 2 MB). Pages it
/// misses are read from the OS page cache; the gateway's RSS stays flat as the
/// database grows.
const CACHE_KIB: i64 = 512;

/// The connection and its settings. The query planner stability guarantee keeps a
/// cached statement's plan: without it SQLite recompiles statements such as `WHERE
/// session_id = ?1 ORDER BY position` each time a new value is bound.
pub(super) fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    wal(&conn)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    conn.set_prepared_statement_cache_capacity(64);
    conn.busy_timeout(WAL_PATIENCE)?;
    Ok(conn)
}

/// How long opening waits for another process to finish switching a new database to
/// WAL, as long as the busy timeout below.
const WAL_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// Switch to WAL unless the database is in it already. Switching takes an exclusive
/// lock and SQLite answers "busy" at once, without the busy timeout, while another
/// connection holds any lock: two processes opening a new database together (or one
/// opening it while another closes it) take turns here instead of one failing.
fn wal(conn: &Connection) -> rusqlite::Result<()> {
    let started = std::time::Instant::now();
    loop {
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |row| row.get(0))?;
        if mode.eq_ignore_ascii_case("wal") {
            return Ok(());
        }
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(err, _))
                if err.code == rusqlite::ErrorCode::DatabaseBusy
                    && started.elapsed() < WAL_PATIENCE =>
            {
                // Only while another process creates the database: `Store::open` runs
                // once, at start, before any turn.
                #[expect(clippy::disallowed_methods, reason = "a few ms, at open only")]
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => return other,
        }
    }
}
