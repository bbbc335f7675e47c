//! Putting each channel's messages in order. Each message waits here for `hold` and
//! leaves in snowflake-id order within its channel; a message released by its wait
//! takes every earlier-id message of its channel with it. An id seen before (a replay
//! after a resume, a REST catch-up) is dropped. The gateway delivers in order, so the
//! listen loop holds nothing (`hold` zero): what is taken in together, such as a
//! REST catch-up, still leaves sorted.
//!
//! Pure logic over an injected `Instant`, so tests need no clock.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

/// How many recent ids are remembered for dropping repeats.
const REMEMBERED: usize = 4096;

pub(super) struct Reorder<T> {
    hold: Duration,
    /// Waiting items by (channel, id), with when they arrived.
    waiting: BTreeMap<(u64, u64), (Instant, T)>,
    seen: HashSet<u64>,
    seen_order: VecDeque<u64>,
}

impl<T> Reorder<T> {
    pub(super) fn new(hold: Duration) -> Self {
        Self {
            hold,
            waiting: BTreeMap::new(),
            seen: HashSet::new(),
            seen_order: VecDeque::new(),
        }
    }

    /// Takes in a message; false (and dropped) if its id was seen before.
    pub(super) fn push(&mut self, channel: u64, id: u64, item: T, now: Instant) -> bool {
        if !self.seen.insert(id) {
            return false;
        }
        self.seen_order.push_back(id);
        if self.seen_order.len() > REMEMBERED
            && let Some(old) = self.seen_order.pop_front()
        {
            self.seen.remove(&old);
        }
        self.waiting.insert((channel, id), (now, item));
        true
    }

    /// Every item whose wait is over, with the earlier ones of its channel, in order.
    pub(super) fn ready(&mut self, now: Instant) -> Vec<T> {
        let mut out = Vec::new();
        loop {
            let due = self
                .waiting
                .iter()
                .find(|(_, (at, _))| now.saturating_duration_since(*at) >= self.hold)
                .map(|(key, _)| *key);
            let Some((channel, id)) = due else {
                return out;
            };
            let keys: Vec<(u64, u64)> = self
                .waiting
                .range((channel, 0)..=(channel, id))
                .map(|(key, _)| *key)
                .collect();
            for key in keys {
                if let Some((_, item)) = self.waiting.remove(&key) {
                    out.push(item);
                }
            }
        }
    }

    /// When the next item's wait is over.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.waiting.values().map(|(at, _)| *at + self.hold).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOLD: Duration = Duration::from_millis(50);

    #[test]
    fn swapped_messages_leave_in_id_order() {
        let t0 = Instant::now();
        let mut r = Reorder::new(HOLD);
        assert!(r.push(1, 20, "second", t0));
        assert!(r.push(1, 10, "first", t0 + Duration::from_millis(2)));
        assert!(
            r.ready(t0 + Duration::from_millis(10)).is_empty(),
            "still waiting"
        );
        assert_eq!(r.ready(t0 + HOLD), vec!["first", "second"]);
        assert!(r.next_due().is_none());
    }

    #[test]
    fn channels_do_not_wait_for_each_other_and_repeats_are_dropped() {
        let t0 = Instant::now();
        let mut r = Reorder::new(HOLD);
        r.push(1, 10, "a", t0);
        r.push(2, 5, "b", t0 + Duration::from_millis(30));
        assert_eq!(r.ready(t0 + HOLD), vec!["a"]);
        assert_eq!(r.next_due(), Some(t0 + Duration::from_millis(30) + HOLD));
        assert!(
            !r.push(1, 10, "a again", t0 + HOLD),
            "a replayed id is dropped"
        );
        assert_eq!(r.ready(t0 + Duration::from_millis(80)), vec!["b"]);
    }

    #[test]
    fn a_late_earlier_message_still_goes_out() {
        let t0 = Instant::now();
        let mut r = Reorder::new(HOLD);
        r.push(1, 20, "second", t0);
        assert_eq!(r.ready(t0 + HOLD), vec!["second"]);
        r.push(1, 10, "first, late", t0 + HOLD * 3);
        assert_eq!(r.ready(t0 + HOLD * 4), vec!["first, late"]);
    }
}
