//! `[cron]`, `[heartbeat]` and `[memory]`: timing of the scheduled work. The schedule and
//! duration strings are parsed by the core's scheduler, not here.

use serde::{Deserialize, Serialize};

/// `[cron]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CronConfig {
    /// A run missed while pincer was down runs once at start if it is at most this old.
    pub grace_secs: u64,
}

impl Default for CronConfig {
    fn default() -> Self {
        Self { grace_secs: 3600 }
    }
}

/// `[heartbeat]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HeartbeatConfig {
    /// Off by default.
    pub enabled: bool,
    /// Interval like `"30m"` (same syntax as `pincer cron add --every`).
    pub every: String,
    /// Tokens heartbeat turns may use a day; past it they wait for tomorrow.
    pub max_day_tokens: u64,
}

impl Default for HeartbeatConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            every: "30m".to_owned(),
            max_day_tokens: 50_000,
        }
    }
}

/// `[memory]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Standard 5-field cron expression for the dream job, in `agent.timezone`.
    pub dream_schedule: String,
    /// Tokens one dream may read and write (estimated as bytes / 4); older material
    /// past it waits for the next dream.
    pub dream_max_tokens: u64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            dream_schedule: "0 3 * * *".to_owned(),
            dream_max_tokens: 30_000,
        }
    }
}
