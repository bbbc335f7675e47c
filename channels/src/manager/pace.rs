//! Pacing by token buckets, one per chat and one per channel: a bucket holds up to
//! `burst` operations and gains one back every `every` (the platform's published limits,
//! declared with each channel's `ChannelInfo`), so a quiet chat's message goes at once
//! and only a burst is spread out. Callers that must go wait for their token, in the
//! order they asked (nothing is dropped); a progress edit of a streaming reply asks
//! `Pace::spare` instead, which never waits and leaves a token behind for what must go.
//!
//! Written here rather than taken from `governor`: that crate waits on its own timer
//! thread (`futures-timer`), which tokio's paused clock cannot drive in tests, and it
//! brings a clock crate, a concurrent map and more for what is one `Instant` behind a lock.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::registry::Rate;

/// One chat's pacing: the two buckets each of its operations takes a token from.
pub(super) struct Pace {
    /// This chat's (the platform's per-chat limit).
    chat: Bucket,
    /// Shared by all chats of the channel (the platform's global limit).
    channel: Arc<Bucket>,
}

/// Tokens a progress edit leaves in each bucket, for the final text or the next message.
const KEEP_FOR_FINAL: u32 = 1;

impl Pace {
    pub(super) fn new(chat: Rate, channel: Arc<Bucket>) -> Self {
        Self {
            chat: Bucket::new(chat),
            channel,
        }
    }

    /// Wait for this operation's tokens.
    pub(super) async fn wait(&self) {
        self.chat.take().await;
        self.channel.take().await;
    }

    /// Tokens for a progress edit, only if both buckets can spare one now.
    pub(super) fn spare(&self) -> bool {
        if !self.chat.try_take(KEEP_FOR_FINAL) {
            return false;
        }
        if self.channel.try_take(KEEP_FOR_FINAL) {
            return true;
        }
        self.chat.give_back();
        false
    }
}

/// A token bucket on tokio's clock (so tests can pause it). Waiters are not woken in a
/// queue: each reserves its token when it asks and sleeps until that token's time.
pub(crate) struct Bucket {
    rate: Rate,
    /// When the bucket would be full again if nothing more were taken; a moment in the
    /// past (or `None`) means full now. Tokens taken ahead of their time push it past
    /// `now + burst × every`, and the excess is what the taker waits.
    full_at: Mutex<Option<Instant>>,
}

impl Bucket {
    pub(crate) fn new(rate: Rate) -> Self {
        Self {
            rate,
            full_at: Mutex::new(None),
        }
    }

    /// Take a token, waiting until it is there.
    pub(super) async fn take(&self) {
        let wait = {
            let mut full_at = self.full_at.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            let after = full_at.map_or(now, |at| at.max(now)) + self.rate.every;
            *full_at = Some(after);
            (after - now).saturating_sub(self.span())
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    /// Take a token only if it is there now and `keep` more stay behind (at most all
    /// but the one taken); nothing is taken otherwise.
    pub(crate) fn try_take(&self, keep: u32) -> bool {
        let keep = keep.min(self.burst() - 1);
        let mut full_at = self.full_at.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let base = full_at.map_or(now, |at| at.max(now));
        let needed = self.rate.every.saturating_mul(keep + 1);
        if (base + needed) - now > self.span() {
            return false;
        }
        *full_at = Some(base + self.rate.every);
        true
    }

    /// Return a token `try_take` gave that was not used after all.
    pub(crate) fn give_back(&self) {
        let mut full_at = self.full_at.lock().unwrap_or_else(PoisonError::into_inner);
        *full_at = full_at.and_then(|at| at.checked_sub(self.rate.every));
    }

    fn burst(&self) -> u32 {
        self.rate.burst.max(1)
    }

    /// How long an empty bucket takes to fill.
    fn span(&self) -> Duration {
        self.rate.every.saturating_mul(self.burst())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(burst: u32, every_ms: u64) -> Rate {
        Rate {
            burst,
            every: Duration::from_millis(every_ms),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_goes_at_once_and_the_rest_at_the_sustained_rate() {
        let bucket = Bucket::new(rate(3, 1000));
        let start = Instant::now();
        let mut at = Vec::new();
        for _ in 0..5 {
            bucket.take().await;
            at.push(start.elapsed().as_millis());
        }
        assert_eq!(at, [0, 0, 0, 1000, 2000]);
        tokio::time::sleep(Duration::from_secs(10)).await;
        let later = Instant::now();
        for _ in 0..3 {
            bucket.take().await;
        }
        assert_eq!(
            later.elapsed(),
            Duration::ZERO,
            "an idle bucket fills up again"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn try_take_never_waits_and_leaves_what_it_is_asked_to() {
        let bucket = Bucket::new(rate(3, 1000));
        assert!(bucket.try_take(1));
        assert!(bucket.try_take(1));
        assert!(!bucket.try_take(1), "the last token stays for what must go");
        let start = Instant::now();
        bucket.take().await;
        assert_eq!(start.elapsed(), Duration::ZERO);
        assert!(!bucket.try_take(0), "empty");
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(bucket.try_take(0));
        bucket.give_back();
        assert!(bucket.try_take(0), "a token given back can be taken again");
        // A bucket of one keeps nothing back.
        let single = Bucket::new(rate(1, 1000));
        assert!(single.try_take(1));
        assert!(!single.try_take(1));
    }
}
