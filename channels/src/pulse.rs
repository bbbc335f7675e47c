//! A channel's pulse: when its adapter last heard anything from the platform (an update,
//! a gateway event, a heartbeat ACK, a frame or a pong), how long the platform may stay
//! silent before the adapter takes the connection for dead and opens another (its
//! silence limit), and whether the adapter itself is stuck.
//!
//! An adapter keeps its own pulse: `attempt` when it starts connecting (or polling),
//! `heard` whenever the platform says anything, `waiting` before it sleeps between
//! attempts. Each attempt must hear something or fail within the limit, so an adapter
//! that is listening or retrying as it should is never *stuck*; one that is, for more
//! than its limit again past that, has stopped doing its job (`Liveness::stuck`), which
//! the gateway's watchdog reports. A platform that is down is not a stuck adapter: it
//! fails its attempts, and waits between them.
//!
//! The last-event time is the wall clock (shown by `pincer status`, the panel and
//! `/metrics`); the rest is tokio's clock, so tests can pause it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use tokio::time::Instant;

/// What a channel's pulse says now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Liveness {
    /// When the adapter last heard from its platform, in Unix milliseconds; `None`
    /// before it heard anything.
    pub last_event_ms: Option<i64>,
    /// How long the platform may stay silent before the adapter reconnects; `None`
    /// where silence is normal (Slack's Events API, where Slack calls us).
    pub silence_limit: Option<Duration>,
    /// How long the adapter has been past the time it had to show progress by (hear
    /// something, or give up on an attempt); `None` while it is on time.
    pub overdue: Option<Duration>,
}

impl Liveness {
    /// Why the adapter counts as stuck: it has been overdue for longer than its limit
    /// (twice the limit with nothing heard and no attempt ended). `None` when it is not.
    pub fn stuck(&self) -> Option<String> {
        let (limit, overdue) = (self.silence_limit?, self.overdue?);
        (overdue > limit).then(|| {
            format!(
                "has heard nothing and given up on nothing for {} s (its limit is {} s)",
                (overdue + limit).as_secs(),
                limit.as_secs()
            )
        })
    }
}

/// The adapter's side; shared with whatever reads it through `HealthChecker`.
#[derive(Debug)]
pub struct Pulse {
    /// How long the platform may stay silent; `None`: silence is normal.
    limit: Option<Duration>,
    /// Wall clock of the last thing heard, Unix ms; 0 before anything was.
    last_event_ms: AtomicI64,
    /// When the last thing was heard, on tokio's clock (for the adapters' own silence
    /// checks, which tests run with a paused clock).
    heard_at: Mutex<Option<Instant>>,
    /// By when the adapter must next hear something or end its attempt; `None` before
    /// it first tries.
    due: Mutex<Option<Instant>>,
}

impl Pulse {
    /// A pulse with `limit` (`None`: silence is normal, the adapter is never stuck).
    pub fn new(limit: Option<Duration>) -> Self {
        Self {
            limit,
            last_event_ms: AtomicI64::new(0),
            heard_at: Mutex::new(None),
            due: Mutex::new(None),
        }
    }

    /// The silence limit.
    pub fn limit(&self) -> Option<Duration> {
        self.limit
    }

    /// The platform said something (anything).
    pub fn heard(&self) {
        let now = Instant::now();
        let wall = crate::clock::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        self.last_event_ms.store(wall, Ordering::Relaxed);
        set(&self.heard_at, Some(now));
        self.due_in(Duration::ZERO);
    }

    /// The adapter starts connecting (or polling): it must hear something or give up
    /// within the limit.
    pub fn attempt(&self) {
        self.due_in(Duration::ZERO);
    }

    /// The adapter waits `wait` before its next attempt.
    pub fn waiting(&self, wait: Duration) {
        self.due_in(wait);
    }

    /// How long since the platform last said something, or since `since` if that is
    /// later (a new connection is judged from when it was opened).
    pub fn silent_for(&self, since: Instant) -> Duration {
        let heard = get(&self.heard_at).map_or(since, |at| at.max(since));
        heard.elapsed()
    }

    /// What the pulse says now.
    pub fn liveness(&self) -> Liveness {
        let last = self.last_event_ms.load(Ordering::Relaxed);
        let now = Instant::now();
        Liveness {
            last_event_ms: (last > 0).then_some(last),
            silence_limit: self.limit,
            overdue: get(&self.due).filter(|due| now > *due).map(|due| now - due),
        }
    }

    fn due_in(&self, wait: Duration) {
        if let Some(limit) = self.limit {
            set(&self.due, Some(Instant::now() + wait + limit));
        }
    }
}

fn set(cell: &Mutex<Option<Instant>>, value: Option<Instant>) {
    if let Ok(mut slot) = cell.lock() {
        *slot = value;
    }
}

fn get(cell: &Mutex<Option<Instant>>) -> Option<Instant> {
    cell.lock().ok().and_then(|slot| *slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(10);

    #[tokio::test(start_paused = true)]
    async fn an_adapter_that_hears_or_retries_in_time_is_never_stuck() {
        let pulse = Pulse::new(Some(LIMIT));
        assert_eq!(pulse.liveness().overdue, None, "not stuck before it starts");
        assert!(pulse.liveness().last_event_ms.is_none());
        pulse.attempt();
        tokio::time::advance(Duration::from_secs(9)).await;
        pulse.heard();
        assert!(pulse.liveness().last_event_ms.is_some());
        tokio::time::advance(Duration::from_secs(9)).await;
        // The connection went silent: the adapter gives up at its limit and waits a
        // minute before trying again. Waiting is not being stuck.
        pulse.waiting(Duration::from_secs(60));
        tokio::time::advance(Duration::from_secs(65)).await;
        assert_eq!(pulse.liveness().stuck(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn an_adapter_silent_past_twice_its_limit_is_stuck() {
        let pulse = Pulse::new(Some(LIMIT));
        pulse.attempt();
        pulse.heard();
        tokio::time::advance(Duration::from_secs(19)).await;
        assert_eq!(pulse.liveness().stuck(), None, "within twice the limit");
        tokio::time::advance(Duration::from_secs(2)).await;
        let why = pulse.liveness().stuck().expect("stuck after 21 s");
        assert!(why.contains("for 21 s"), "{why}");
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_limit_silence_is_normal() {
        let pulse = Pulse::new(None);
        pulse.attempt();
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(pulse.liveness().overdue, None);
        assert_eq!(pulse.liveness().stuck(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn silence_is_counted_from_a_new_connection() {
        let pulse = Pulse::new(Some(LIMIT));
        pulse.heard();
        tokio::time::advance(Duration::from_secs(30)).await;
        let opened = Instant::now();
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(pulse.silent_for(opened), Duration::from_secs(2));
        pulse.heard();
        assert_eq!(pulse.silent_for(opened), Duration::ZERO);
    }
}
