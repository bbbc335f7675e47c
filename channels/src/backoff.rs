//! Waiting after a failure, one way for every adapter and the channel manager: the wait
//! starts small and doubles up to a ceiling, the platform's own `retry_after` wins when
//! it names one, and a permanent error (a revoked token) waits long, with the channel
//! shown down until someone acts.

use std::time::Duration;

use crate::channel::{ChannelError, Health};

/// How long a channel waits after a permanent error before trying again (a token may be
/// fixed in the meantime).
pub const PERMANENT_WAIT: Duration = Duration::from_secs(300);

/// A doubling wait.
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub const fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max,
            next: first,
        }
    }

    /// A platform connection's: 1 s, doubling to a minute.
    pub const fn reconnect() -> Backoff {
        Backoff::new(Duration::from_secs(1), Duration::from_secs(60))
    }

    /// Start small again (the last try worked, or ran a good while).
    pub fn reset(&mut self) {
        self.next = self.first;
    }

    /// The wait before the next try: `retry_after` when the platform named one, else the
    /// current step, which then doubles.
    pub fn wait(&mut self, retry_after: Option<Duration>) -> Duration {
        let wait = retry_after.unwrap_or(self.next);
        self.next = (self.next * 2).min(self.max);
        wait
    }

    /// What `err` makes of the channel's health, and how long to wait: a retryable error
    /// degrades it and backs off; a permanent one takes it down for `PERMANENT_WAIT`.
    pub fn after(&mut self, err: &ChannelError) -> (Health, Duration) {
        let wait = self.wait(err.retry_after);
        if err.retryable {
            (Health::Degraded(err.message.clone()), wait)
        } else {
            (Health::Down(err.message.clone()), PERMANENT_WAIT)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_doubles_to_its_ceiling_takes_the_platforms_word_and_starts_over_on_reset() {
        let mut b = Backoff::new(Duration::from_secs(1), Duration::from_secs(5));
        let waits: Vec<u64> = (0..5).map(|_| b.wait(None).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
        assert_eq!(b.wait(Some(Duration::from_secs(42))).as_secs(), 42);
        b.reset();
        assert_eq!(b.wait(None).as_secs(), 1);
        let (health, wait) = b.after(&ChannelError::permanent("token revoked"));
        assert_eq!(health, Health::Down("token revoked".into()));
        assert_eq!(wait, PERMANENT_WAIT);
        let (health, wait) = b.after(&ChannelError::transient("timeout"));
        assert_eq!(health, Health::Degraded("timeout".into()));
        assert_eq!(wait.as_secs(), 4);
    }
}
