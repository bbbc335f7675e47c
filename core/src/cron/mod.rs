//! Scheduled tasks: jobs kept in SQLite, a scheduler that sleeps until the next one
//! is due and sends its prompt through the normal dispatcher as a message on channel
//! `cron` from the job's creator, at the job's tier, and the heartbeat (the owner's).
//!
//! - `schedule`  — cron expressions, intervals and one-shot times, with time zones
//! - `scheduler` — the loop: due jobs, missed runs, one fire per slot, failures
//! - `heartbeat` — the periodic look at HEARTBEAT.md
//! - `jobs`      — creating and describing jobs (shared by the CLI and the `cron` tool)
//! - `tool`      — the `cron` tool the model uses when asked in a chat

mod heartbeat;
mod jobs;
pub mod schedule;
mod scheduler;
mod tool;

use chrono::{DateTime, Utc};

pub use heartbeat::Heartbeat;
pub use jobs::{JobError, JobRequest, Maker, create, describe, destination, parse_deliver};
pub use schedule::{Schedule, ScheduleError};
pub use scheduler::{JobRun, MAX_FAILURES, Scheduler, system_message};
pub use tool::CronTool;

/// Where "now" comes from: the wall clock, or (in tests) a clock that follows tokio's
/// paused time.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        crate::clock::utc()
    }
}

/// A wall clock that starts at `start` and advances with tokio's clock, so tests can
/// pause and skip time.
pub struct TokioClock {
    start: DateTime<Utc>,
    at: tokio::time::Instant,
}

impl TokioClock {
    pub fn starting_at(start: DateTime<Utc>) -> Self {
        Self {
            start,
            at: tokio::time::Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = chrono::Duration::from_std(self.at.elapsed()).unwrap_or_default();
        self.start + elapsed
    }
}
