//! The wall clock, read in one place (clippy.toml forbids `SystemTime::now` and
//! `Utc::now` elsewhere): what needs the time of day asks here, and logic with timing
//! takes an injected clock (`cron::Clock`) whose real one reads this. Times as the
//! store records them (unix milliseconds) come from the store's own clock
//! (`store::now_ms`).

use std::time::SystemTime;

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
