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
