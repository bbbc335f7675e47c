//! Per-sender limits for non-owners, kept in memory (a restart forgets them):
//! - `RateLimiter` (`access.rate_per_minute`): past it a sender's messages are stored
//!   but not answered, and they hear so once a minute. Bounded: past `MAX_SENDERS`
//!   windows, the ended ones are dropped.
//! - `InboxAllowance` (`access.inbox_max_mb_per_day`): attachment bytes a sender may
//!   have downloaded a day. Bounded the same way.
//!
//! The owner is never limited.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Senders tracked before ended windows are swept.
const MAX_SENDERS: usize = 4096;
const WINDOW: Duration = Duration::from_secs(60);

/// What the limiter says about one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rated {
    /// Within the rate: answer it.
    Within,
    /// Over the rate: store it, do not answer; `notify` once a minute.
    Over { notify: bool },
}

struct Window {
    start: Instant,
    count: u32,
    noticed: Option<Instant>,
}

pub struct RateLimiter {
    per_minute: u32,
    senders: Mutex<HashMap<String, Window>>,
}

impl RateLimiter {
    /// `per_minute = 0` turns the limit off.
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute,
            senders: Mutex::new(HashMap::new()),
        }
    }

    /// Count one message of `sender` (a non-owner).
    pub fn check(&self, sender: &str) -> Rated {
        if self.per_minute == 0 {
            return Rated::Within;
        }
        let Ok(mut senders) = self.senders.lock() else {
            return Rated::Within;
        };
        let now = Instant::now();
        if senders.len() >= MAX_SENDERS && !senders.contains_key(sender) {
            senders.retain(|_, w| now.duration_since(w.start) < WINDOW);
        }
        let window = senders.entry(sender.to_string()).or_insert(Window {
            start: now,
            count: 0,
            noticed: None,
        });
        if now.duration_since(window.start) >= WINDOW {
            window.start = now;
            window.count = 0;
        }
        window.count += 1;
        if window.count <= self.per_minute {
            return Rated::Within;
        }
        let notify = window
            .noticed
            .is_none_or(|at| now.duration_since(at) >= WINDOW);
        if notify {
            window.noticed = Some(now);
        }
        Rated::Over { notify }
    }
}

/// Attachment bytes each sender may have downloaded today.
pub struct InboxAllowance {
    per_day: u64,
    /// Sender → (the day's start in unix ms, bytes downloaded that day).
    used: Mutex<HashMap<String, (i64, u64)>>,
}

impl InboxAllowance {
    pub fn new(per_day_bytes: u64) -> Self {
        Self {
            per_day: per_day_bytes,
            used: Mutex::new(HashMap::new()),
        }
    }

    /// What `sender` may still download on the day that started at `day_ms`.
    pub fn left(&self, sender: &str, day_ms: i64) -> u64 {
        let Ok(used) = self.used.lock() else {
            return 0;
        };
        match used.get(sender) {
            Some((day, bytes)) if *day == day_ms => self.per_day.saturating_sub(*bytes),
            _ => self.per_day,
        }
    }

    /// Count `bytes` downloaded for `sender` on the day that started at `day_ms`.
    pub fn spend(&self, sender: &str, day_ms: i64, bytes: u64) {
        let Ok(mut used) = self.used.lock() else {
            return;
        };
        if used.len() >= MAX_SENDERS && !used.contains_key(sender) {
            used.retain(|_, (day, _)| *day == day_ms);
        }
        let entry = used.entry(sender.to_string()).or_insert((day_ms, 0));
        if entry.0 != day_ms {
            *entry = (day_ms, 0);
        }
        entry.1 += bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn past_the_rate_one_notice_a_minute_then_a_fresh_window() {
        let limiter = RateLimiter::new(3);
        for _ in 0..3 {
            assert_eq!(limiter.check("telegram:9"), Rated::Within);
        }
        assert_eq!(limiter.check("telegram:9"), Rated::Over { notify: true });
        assert_eq!(limiter.check("telegram:9"), Rated::Over { notify: false });
        assert_eq!(limiter.check("telegram:8"), Rated::Within, "per sender");
        tokio::time::advance(WINDOW).await;
        assert_eq!(limiter.check("telegram:9"), Rated::Within);
        assert_eq!(RateLimiter::new(0).check("x"), Rated::Within, "0 is off");
    }

    #[test]
    fn the_inbox_allowance_is_per_sender_and_per_day() {
        let inbox = InboxAllowance::new(100);
        inbox.spend("telegram:9", 1, 70);
        assert_eq!(inbox.left("telegram:9", 1), 30);
        assert_eq!(inbox.left("telegram:8", 1), 100);
        inbox.spend("telegram:9", 1, 70);
        assert_eq!(inbox.left("telegram:9", 1), 0);
        assert_eq!(inbox.left("telegram:9", 2), 100, "a new day");
    }
}
