//! The nightly dream: on `memory.dream_schedule` (standard 5-field cron, default
//! 03:00) in `agent.timezone`, while the gateway runs. A dream missed while Pincer was
//! down is not made up: the next one reads everything since the last, so nothing is
//! lost. It sleeps at most a minute at a time, so a changed clock is noticed.

use std::sync::Arc;
use std::time::Duration;

use crate::tz::Tz;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::cron::{Clock, Schedule};

/// The longest the loop sleeps before looking at the clock again.
const MAX_SLEEP: Duration = Duration::from_secs(60);

/// When and how the gateway dreams.
pub struct DreamSchedule {
    pub schedule: Schedule,
    pub timezone: Tz,
    /// `memory.dream_max_tokens`.
    pub max_tokens: u64,
    pub clock: Arc<dyn Clock>,
}

/// `memory.dream_schedule` is not a schedule.
#[derive(Debug, thiserror::Error)]
#[error("memory.dream_schedule: {0}")]
pub struct BadDreamSchedule(pub crate::cron::ScheduleError);

impl DreamSchedule {
    /// From `memory.dream_schedule`; the error names the key and the form.
    pub fn new(
        expr: &str,
        timezone: Tz,
        max_tokens: u64,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, BadDreamSchedule> {
        let schedule = Schedule::cron(expr).map_err(BadDreamSchedule)?;
        Ok(Self {
            schedule,
            timezone,
            max_tokens,
            clock,
        })
    }

    /// Dream at every scheduled time until `shutdown`.
    pub async fn run(self, agent: Arc<Agent>, shutdown: CancellationToken) {
        let now = self.clock.now();
        let mut next = self.schedule.next_after(now, self.timezone, now);
        while let Some(at) = next {
            let wait = (at - self.clock.now())
                .to_std()
                .unwrap_or(Duration::ZERO)
                .min(MAX_SLEEP);
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
            let now = self.clock.now();
            if now < at {
                continue;
            }
            tracing::info!("dreaming: tidying memory (memory.dream_schedule)");
            // A dream cut short by shutdown is safe: nothing is applied before the
            // model answers, and a half-applied one is rolled back next time.
            tokio::select! {
                _ = shutdown.cancelled() => return,
                result = super::dream(&agent, self.max_tokens) => match result {
                    Ok(dreamt) => tracing::info!("{}", dreamt.describe()),
                    Err(err) => tracing::warn!("the dream failed: {err}"),
                },
            }
            next = self
                .schedule
                .next_after(self.clock.now(), self.timezone, now);
        }
    }
}
