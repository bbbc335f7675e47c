//! The wall clock, read in one place (clippy.toml forbids `SystemTime::now` and
//! `Utc::now` elsewhere): what needs the time of day asks here, and logic with timing
//! takes an injected clock (`cron::Clock`) whose real one reads this.

use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};

/// Now, as the system says.
#[expect(clippy::disallowed_methods, reason = "the one place time enters")]
pub fn now() -> SystemTime {
    SystemTime::now()
}

/// Now, in UTC.
#[expect(clippy::disallowed_methods, reason = "the one place time enters")]
pub fn utc() -> DateTime<Utc> {
    Utc::now()
}

/// Now, in unix milliseconds.
pub fn now_ms() -> i64 {
    now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}
