//! Waiting after a failure, one way for everything that retries: a chat platform's
//! connection, an MCP server, a model call. The wait starts at `first` and doubles with
//! each failure in a row up to `max`; the other side's own `retry_after` wins when it
//! names one; jitter spreads out retries that would otherwise come together.

use std::time::Duration;

/// A doubling wait with a ceiling, and (for the callers that keep one) the count of
/// failures in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    failures: u32,
}

impl Backoff {
    pub const fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max,
            failures: 0,
        }
    }

    /// The wait after `failures` failures in a row (the first failure is 1): `first`,
    /// doubling, never more than `max`.
    pub fn delay(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(31);
        self.first
            .checked_mul(1u32 << doublings)
            .map_or(self.max, |d| d.min(self.max))
    }

    /// `delay(failures)` and up to `share` of it more, by `unit` in `[0, 1)` (see
    /// `random_unit`), so that callers which failed together do not retry together.
    pub fn jittered(&self, failures: u32, share: f64, unit: f64) -> Duration {
        let delay = self.delay(failures);
        delay + delay.mul_f64(share.max(0.0) * unit.clamp(0.0, 1.0))
    }

    /// One more failure: the wait before the next try — `retry_after` when the other
    /// side named one, else the next step of the doubling.
    pub fn wait(&mut self, retry_after: Option<Duration>) -> Duration {
        self.failures = self.failures.saturating_add(1);
        retry_after.unwrap_or(self.delay(self.failures))
    }

    /// Start small again (the last try worked, or ran a good while).
    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

/// A random number in `[0, 1)` for jitter; 0 (no jitter: still correct, only less
/// spread) when the OS gives no randomness.
pub fn random_unit() -> f64 {
    let bits = getrandom::u64().unwrap_or(0);
    // The top 53 bits fill an f64 mantissa exactly.
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_doubles_to_its_ceiling_takes_the_other_sides_word_and_starts_over_on_reset() {
        let mut b = Backoff::new(Duration::from_secs(1), Duration::from_secs(5));
        let waits: Vec<u64> = (0..5).map(|_| b.wait(None).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
        assert_eq!(b.wait(Some(Duration::from_secs(42))).as_secs(), 42);
        b.reset();
        assert_eq!(b.wait(None).as_secs(), 1);
    }

    #[test]
    fn the_delay_after_n_failures_needs_no_state_and_never_overflows() {
        let b = Backoff::new(Duration::from_secs(1), Duration::from_secs(300));
        let delays: Vec<u64> = [1, 2, 3, 9, 10, 1000, u32::MAX]
            .map(|n| b.delay(n).as_secs())
            .to_vec();
        assert_eq!(delays, [1, 2, 4, 256, 300, 300, 300]);
        assert_eq!(b.delay(0).as_secs(), 1);
    }

    #[test]
    fn jitter_adds_at_most_its_share() {
        let b = Backoff::new(Duration::from_millis(500), Duration::from_secs(8));
        assert_eq!(b.jittered(1, 0.5, 0.0), Duration::from_millis(500));
        let most = b.jittered(1, 0.5, 0.999_999);
        assert!(most > Duration::from_millis(749) && most < Duration::from_millis(750));
        assert_eq!(b.jittered(9, 0.5, 1.0), Duration::from_secs(12));
        let unit = random_unit();
        assert!((0.0..1.0).contains(&unit));
    }
}
