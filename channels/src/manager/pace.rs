//! Pacing: keep a minimum gap between operations (per chat, and per channel for the
//! platform's global limit). Callers wait for their slot; nothing is dropped.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

pub struct Pacer {
    gap: Duration,
    /// The earliest moment the next operation may start.
    next: Mutex<Option<Instant>>,
}

impl Pacer {
    pub fn new(gap: Duration) -> Self {
        Self {
            gap,
            next: Mutex::new(None),
        }
    }

    /// Wait for this operation's slot.
    pub async fn wait(&self) {
        let slot = {
            let Ok(mut next) = self.next.lock() else {
                return; // a poisoned pacer paces nothing rather than blocking delivery
            };
            let now = Instant::now();
            let slot = next.map_or(now, |n| n.max(now));
            *next = Some(slot + self.gap);
            slot
        };
        tokio::time::sleep_until(slot).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn operations_are_spaced_by_the_gap() {
        let pacer = Pacer::new(Duration::from_secs(1));
        let start = Instant::now();
        pacer.wait().await;
        pacer.wait().await;
        pacer.wait().await;
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        tokio::time::sleep(Duration::from_secs(5)).await;
        let later = Instant::now();
        pacer.wait().await;
        assert_eq!(
            later.elapsed(),
            Duration::ZERO,
            "an idle pacer does not delay"
        );
    }
}
