//! From a Slack event to the bus. The socket (or the Events API listener) hands each
//! event to `accept`, which drops what was seen already (a mention arrives twice, Slack
//! redelivers unacknowledged envelopes) and queues the rest; one forwarder task takes
//! them in order, looks up the sender's name, and puts the message on the bus with its
//! files pending: nothing is downloaded before the core has admitted the sender (see
//! `files`). `acknowledge_when` says when the envelope may be acknowledged: once the core
//! has stored the message, or after `ACK_WITHIN` at the latest — never later, since
//! Slack wants an answer within 3 s, and never waiting for the model.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher as _, RandomState};
use std::time::Duration;

use slack_morphism::prelude::*;
use tokio::sync::{mpsc, oneshot};

use super::Slack;
use super::convert::{self, CHANNEL, Incoming};
use crate::channel::InboundSender;
use crate::message::{Ack, Inbound};

/// The longest an envelope waits for its message to be stored before it is acked.
pub(super) const ACK_WITHIN: Duration = Duration::from_secs(2);
/// Events waiting for the forwarder.
const QUEUE: usize = 1024;
/// How many (channel, ts) pairs are remembered for dedupe.
const REMEMBER: usize = 4096;

/// How many display names are cached.
const NAMES: usize = 1024;

/// Display names by user id. Bounded: a busy workspace's many senders must not grow
/// it for as long as the gateway runs; when full it starts over, which also picks up
/// users who renamed themselves.
#[derive(Default)]
pub(super) struct Names(HashMap<String, String>);

impl Names {
    pub(super) fn get(&self, user: &str) -> Option<String> {
        self.0.get(user).cloned()
    }

    pub(super) fn put(&mut self, user: &str, name: &str) {
        if self.0.len() >= NAMES {
            self.0.clear();
        }
        self.0.insert(user.to_string(), name.to_string());
    }
}

/// Recently seen messages, oldest first, as 64-bit keyed hashes of (channel, ts): a
/// few bytes each instead of two strings (a chance collision is one in 2^64 per pair).
#[derive(Default)]
pub(super) struct Recent {
    hasher: RandomState,
    keys: HashSet<u64>,
    order: VecDeque<u64>,
}

impl Recent {
    /// True the first time `key` is seen.
    fn insert(&mut self, key: &(String, String)) -> bool {
        let hash = self.hasher.hash_one(key);
        if !self.keys.insert(hash) {
            return false;
        }
        self.order.push_back(hash);
        if self.order.len() > REMEMBER
            && let Some(old) = self.order.pop_front()
        {
            self.keys.remove(&old);
        }
        true
    }

    fn forget(&mut self, key: &(String, String)) {
        let hash = self.hasher.hash_one(key);
        self.keys.remove(&hash);
        self.order.retain(|k| *k != hash);
    }
}

/// One event on its way to the bus; `stored` says whether the core kept it.
pub(super) struct Delivery {
    incoming: Incoming,
    stored: oneshot::Sender<bool>,
}

/// The queue the socket or listener feeds, and the forwarder task that drains it.
pub(super) fn queue() -> (mpsc::Sender<Delivery>, mpsc::Receiver<Delivery>) {
    mpsc::channel(QUEUE)
}

/// Whether to acknowledge: true once stored (or after `ACK_WITHIN`, or when there was
/// nothing to deliver); false when the core could not store it, so Slack sends it again.
pub(super) async fn acknowledge_when(stored: Option<oneshot::Receiver<bool>>) -> bool {
    let Some(stored) = stored else {
        return true;
    };
    match tokio::time::timeout(ACK_WITHIN, stored).await {
        Ok(Ok(stored)) => stored,
        Ok(Err(_)) => false, // the forwarder stopped (shutdown): let Slack redeliver
        Err(_) => {
            tracing::debug!(
                channel = CHANNEL,
                "acknowledging before the message was stored (Slack's 3 s limit)"
            );
            true
        }
    }
}

impl Slack {
    /// Turn an `event_callback` payload into a queued delivery. `None` when there is
    /// nothing to deliver (another kind of event, a bot, a duplicate).
    pub(super) fn accept(
        &self,
        payload: &serde_json::Value,
        queue: &mpsc::Sender<Delivery>,
    ) -> Option<oneshot::Receiver<bool>> {
        let me = self.me.get()?;
        let callback: SlackPushEventCallback = match serde_json::from_value(payload.clone()) {
            Ok(callback) => callback,
            Err(err) => {
                // It will never parse better: acknowledge and move on.
                tracing::warn!(
                    channel = CHANNEL,
                    "an event Pincer cannot read was skipped: {err}"
                );
                return None;
            }
        };
        let parent = payload["event"]["parent_user_id"].as_str();
        let incoming = convert::inbound(&callback.event, parent, me)?;
        self.accept_incoming(incoming, queue)
    }

    /// Queue a converted message unless it was seen already.
    pub(super) fn accept_incoming(
        &self,
        incoming: Incoming,
        queue: &mpsc::Sender<Delivery>,
    ) -> Option<oneshot::Receiver<bool>> {
        let first = self
            .seen
            .lock()
            .map(|mut seen| seen.insert(&incoming.key))
            .unwrap_or(true);
        if !first {
            return None;
        }
        let (stored, answer) = oneshot::channel();
        let key = incoming.key.clone();
        if queue.try_send(Delivery { incoming, stored }).is_err() {
            tracing::warn!(
                channel = CHANNEL,
                "too many messages waiting; Slack will send this one again"
            );
            self.forget(&key);
            let (refused, answer) = oneshot::channel();
            let _ = refused.send(false);
            return Some(answer);
        }
        Some(answer)
    }

    fn forget(&self, key: &(String, String)) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.forget(key);
        }
    }

    /// Drain the queue onto the bus, in order, until the bus or the queue closes.
    pub(super) async fn forward(&self, mut queue: mpsc::Receiver<Delivery>, bus: InboundSender) {
        let fetcher = self.fetcher();
        while let Some(Delivery { incoming, stored }) = queue.recv().await {
            let Incoming {
                mut inbound,
                attachments,
                key,
            } = incoming;
            inbound.sender.display_name = self.display_name(&inbound.sender.raw_id).await;
            let prefix = inbound.chat_id.clone();
            crate::inbox::attach(&mut inbound, attachments, &fetcher, &prefix);
            let (ack, was_stored) = Ack::pair();
            if bus.send(Inbound::acked(inbound, ack)).await.is_err() {
                return; // the core is gone
            }
            let ok = was_stored.await.is_ok();
            if !ok {
                // Not stored: forget it, so Slack's redelivery is taken.
                self.forget(&key);
            }
            let _ = stored.send(ok); // the acker may have given up waiting
        }
    }

    /// The sender's display name (users.info, cached); their id when Slack won't say.
    async fn display_name(&self, user: &str) -> String {
        if let Some(name) = self.names.lock().ok().and_then(|n| n.get(user)) {
            return name;
        }
        let request = SlackApiUsersInfoRequest::new(SlackUserId(user.to_string()));
        let name = match self.session().users_info(&request).await {
            Ok(info) => {
                let profile = info.user.profile.as_ref();
                [
                    profile.and_then(|p| p.display_name.clone()),
                    profile.and_then(|p| p.real_name.clone()),
                    info.user.real_name.clone(),
                    info.user.name.clone(),
                ]
                .into_iter()
                .flatten()
                .find(|n| !n.trim().is_empty())
                .unwrap_or_else(|| user.to_string())
            }
            Err(err) => {
                tracing::debug!(
                    channel = CHANNEL,
                    "users.info failed (is the users:read scope missing?): {err}"
                );
                return user.to_string();
            }
        };
        if let Ok(mut names) = self.names.lock() {
            names.put(user, &name);
        }
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_cache_starts_over_when_full() {
        let mut names = Names::default();
        names.put("U0", "Ann");
        assert_eq!(names.get("U0").as_deref(), Some("Ann"));
        for n in 1..NAMES {
            names.put(&format!("U{n}"), "someone");
        }
        assert_eq!(names.0.len(), NAMES);
        assert_eq!(names.get("U0").as_deref(), Some("Ann"));
        names.put("U-new", "Bob");
        assert_eq!(names.0.len(), 1, "a full cache starts over");
        assert_eq!(names.get("U0"), None);
        assert_eq!(names.get("U-new").as_deref(), Some("Bob"));
    }

    #[test]
    fn recent_remembers_a_bounded_number_of_keys() {
        let mut recent = Recent::default();
        let key = |n: usize| ("C1".to_string(), n.to_string());
        assert!(recent.insert(&key(0)));
        assert!(!recent.insert(&key(0)));
        recent.forget(&key(0));
        assert!(recent.insert(&key(0)));
        for n in 1..=REMEMBER {
            recent.insert(&key(n));
        }
        assert!(recent.insert(&key(0)), "the oldest key was forgotten");
    }
}
