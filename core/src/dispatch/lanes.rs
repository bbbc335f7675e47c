//! One lane per conversation for the work between admitting a message and queueing it:
//! downloading its attachments, transcribing, reading PDFs. That work runs off the
//! dispatcher's loop, so one sender's files never hold up anyone else's messages; within
//! a conversation, messages still reach the queue in the order they came (a text behind
//! a voice note waits for it).

use std::collections::HashMap;
use std::sync::Mutex;

use pincer_channels::SessionKey;
use tokio::sync::oneshot;

/// The conversations with admission work in flight.
#[derive(Default)]
pub(super) struct Lanes {
    lanes: Mutex<HashMap<SessionKey, Lane>>,
}

struct Lane {
    /// Closed when the newest place in the lane is done: the next one waits for it.
    tail: oneshot::Receiver<()>,
    /// Messages of this conversation admitted or waiting.
    pending: usize,
}

/// A place in a conversation's lane, taken in arrival order (`Lanes::join`).
pub(super) struct Place {
    key: SessionKey,
    /// The place before this one; none at the head of the lane.
    after: Option<oneshot::Receiver<()>>,
    /// Dropped when this place is done.
    done: oneshot::Sender<()>,
}

impl Lanes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionKey, Lane>> {
        self.lanes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether nothing of `key` is in flight (a text may then go straight through).
    pub(super) fn idle(&self, key: &SessionKey) -> bool {
        !self.lock().contains_key(key)
    }

    /// Take the next place in `key`'s lane, behind whatever is in it.
    pub(super) fn join(&self, key: &SessionKey) -> Place {
        let (done, tail) = oneshot::channel();
        let mut lanes = self.lock();
        let after = match lanes.get_mut(key) {
            Some(lane) => {
                lane.pending += 1;
                Some(std::mem::replace(&mut lane.tail, tail))
            }
            None => {
                lanes.insert(key.clone(), Lane { tail, pending: 1 });
                None
            }
        };
        Place {
            key: key.clone(),
            after,
            done,
        }
    }

    /// Wait for the place before, run `work`, then leave the lane.
    pub(super) async fn run<F: std::future::Future<Output = ()>>(&self, place: Place, work: F) {
        if let Some(after) = place.after {
            // Err: the place before is done (its sender dropped), as expected.
            let _ = after.await;
        }
        work.await;
        drop(place.done);
        let mut lanes = self.lock();
        if let Some(lane) = lanes.get_mut(&place.key) {
            lane.pending -= 1;
            if lane.pending == 0 {
                lanes.remove(&place.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lane_keeps_the_order_of_joining_whatever_runs_first() {
        let lanes = Arc::new(Lanes::default());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let (a, b) = (
            SessionKey::direct("test", "a"),
            SessionKey::direct("test", "b"),
        );
        let slow = lanes.join(&a);
        let fast = lanes.join(&a);
        assert!(!lanes.idle(&a) && lanes.idle(&b));
        let (l1, l2, t1, t2) = (Arc::clone(&lanes), Arc::clone(&lanes), tx.clone(), tx);
        // The second place starts first, and still runs second.
        let second = tokio::spawn(async move {
            l2.run(fast, async move {
                let _ = t2.send(2);
            })
            .await;
        });
        tokio::task::yield_now().await;
        let first = tokio::spawn(async move {
            l1.run(slow, async move {
                let _ = t1.send(1);
            })
            .await;
        });
        first.await.unwrap();
        second.await.unwrap();
        assert_eq!((rx.recv().await, rx.recv().await), (Some(1), Some(2)));
        assert!(lanes.idle(&a));
    }
}
