//! The channel manager, shared by every channel: takes the core's outbound messages
//! and delivers them through the registry — split to the platform's limit, paced per
//! chat and per channel by token buckets (bursts go at once; only a longer run waits for
//! the platform's sustained rate), retried with backoff, streamed by editing where the channel
//! can, with "typing…" shown while a turn works. One worker per chat keeps each chat's
//! messages in order while chats proceed side by side. A target naming a person
//! (`Target::user`) is resolved to their direct chat by its worker, never here: opening
//! a chat is a request to the platform, and this loop must not wait on one. Each
//! message a person sees is reported, delivered or not, to the `Observer` the core sets
//! for its metrics (`observe`).

mod chat;
mod pace;
mod retry;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::task::TaskTracker;

use crate::ledger::Ledger;
use crate::message::{OutboundMessage, Target};
use crate::registry::Registry;
use chat::ChatWorker;
pub(crate) use pace::Bucket;

pub use retry::with_retries;

#[cfg(test)]
mod tests;

/// Messages waiting for one chat's worker.
const CHAT_QUEUE: usize = 256;
/// Chats remembered before the first sweep of workers that have left.
const SWEEP_MIN: usize = 64;
/// How long delivery may go on after the core has stopped.
const DRAIN: Duration = Duration::from_secs(10);

/// Told of each message a person sees (a finished text, a notice, an error, a file)
/// once its chat's worker is done with it: the channel, and how long delivering it took
/// from the worker taking it (pacing, splitting, retries, the platform's calls) — or
/// `None` if some of it did not reach the platform. The core's metrics set it; this
/// crate only reports.
pub type Observer = fn(channel: &str, took: Option<Duration>);

static OBSERVER: OnceLock<Observer> = OnceLock::new();

/// Report deliveries to `observer` from now on; the first one set stays.
pub fn observe(observer: Observer) {
    // Set already (the core started twice in one process): the same function.
    let _ = OBSERVER.set(observer);
}

fn delivered(channel: &str, took: Option<Duration>) {
    if let Some(observer) = OBSERVER.get() {
        observer(channel, took);
    }
}

/// Deliver everything from `outbound` until the core closes it, then finish what is
/// queued (for at most a few seconds). `ledger` hears what became of each message
/// with an outbox entry.
pub async fn run(
    registry: Arc<Registry>,
    mut outbound: mpsc::Receiver<OutboundMessage>,
    ledger: Option<Arc<dyn Ledger>>,
) {
    let buckets: HashMap<String, Arc<Bucket>> = registry
        .handles()
        .map(|handle| {
            let bucket = Bucket::new(handle.info.channel_rate);
            (handle.name().to_string(), Arc::new(bucket))
        })
        .collect();
    let mut chats: HashMap<Target, mpsc::Sender<Box<OutboundMessage>>> = HashMap::new();
    // Workers leave after a while idle; their entries are swept once the map has
    // doubled since the last sweep, so a gateway that meets many chats stays flat.
    let mut sweep_at = SWEEP_MIN;
    let workers = TaskTracker::new();
    while let Some(message) = outbound.recv().await {
        let (Some(handle), Some(bucket)) = (
            registry.get(&message.target.channel),
            buckets.get(&message.target.channel),
        ) else {
            tracing::warn!(channel = %message.target.channel, "no running channel of that name; message dropped");
            continue;
        };
        if chats.len() >= sweep_at {
            chats.retain(|_, sender| !sender.is_closed());
            sweep_at = SWEEP_MIN.max(chats.len() * 2);
        }
        let mut message = Box::new(message);
        loop {
            let sender = chats.entry(message.target.clone()).or_insert_with(|| {
                let (tx, rx) = mpsc::channel(CHAT_QUEUE);
                let worker = ChatWorker::new(
                    handle.clone(),
                    message.target.clone(),
                    Arc::clone(bucket),
                    ledger.clone(),
                );
                workers.spawn(worker.run(rx));
                tx
            });
            match sender.send(message).await {
                Ok(()) => break,
                // The worker went idle and left; start a fresh one.
                Err(mpsc::error::SendError(back)) => {
                    chats.remove(&back.target);
                    message = back;
                }
            }
        }
    }
    chats.clear();
    workers.close();
    if tokio::time::timeout(DRAIN, workers.wait()).await.is_err() {
        tracing::warn!("some replies were still being delivered at shutdown");
    }
}
