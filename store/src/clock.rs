//! The wall clock, read in one place (clippy.toml forbids `SystemTime::now` elsewhere):
//! the store records every time as unix milliseconds read here.

use std::time::{SystemTime, UNIX_EPOCH};

/// The wall clock in unix milliseconds, as the store records times.
#[expect(clippy::disallowed_methods, reason = "the one place time enters")]
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}
