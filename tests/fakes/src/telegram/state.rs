//! The state one fake Telegram shares between its handle and its request handlers, behind
//! one lock, plus a change counter so waiters (long polls, `wait_for_*`) wake on change.
//!
//! Locks are short and never held across `.await`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::watch;

use super::fault::Fault;
use super::record::{Call, Sent, SentFile};
use super::store::Store;
use super::updates::Updates;

#[derive(Debug, Default)]
pub(crate) struct Inner {
    pub store: Store,
    pub updates: Updates,
    pub calls: Vec<Call>,
    pub sent: Vec<Sent>,
    /// Every file the bot sent, oldest first.
    pub sent_files: Vec<SentFile>,
    /// `setMessageReaction` calls accepted: (chat id, message id, emoji; `""` when the
    /// call cleared the reaction).
    pub reactions: Vec<(i64, i64, String)>,
    /// Scripted failures by lower-cased method name, each queue FIFO.
    pub faults: HashMap<String, VecDeque<Fault>>,
    /// `reject_html(true)`: every `parse_mode: HTML` send is refused.
    pub reject_html: bool,
    /// `validate_html(false)`: HTML is accepted unchecked.
    pub lenient_html: bool,
    /// Privacy mode off (`getMe.can_read_all_group_messages`).
    pub reads_all_group_messages: bool,
    /// The last `setMyCommands` list, as sent.
    pub commands: Vec<Value>,
    /// `stall()`: how many `getUpdates` calls (the one held now first) are never
    /// answered, as over a connection that went silent.
    pub stalls: usize,
    /// How many `getUpdates` calls were stalled so far.
    pub stalled: usize,
}

impl Inner {
    /// Whether this `getUpdates` call is one to stall (counted as such if so).
    pub(crate) fn take_stall(&mut self) -> bool {
        if self.stalls == 0 {
            return false;
        }
        self.stalls -= 1;
        self.stalled += 1;
        true
    }

    /// Takes the next scripted fault for `method`, if any.
    pub(crate) fn take_fault(&mut self, method: &str) -> Option<Fault> {
        self.faults
            .get_mut(&method.to_ascii_lowercase())
            .and_then(VecDeque::pop_front)
    }
}

pub(crate) struct Shared {
    inner: Mutex<Inner>,
    /// Bumped after every change, so waiters re-check without polling.
    changed: watch::Sender<u64>,
    /// When the fake started, for `at_ms` in `GET /_fake/calls`.
    pub started: Instant,
}

impl Shared {
    pub(crate) fn new() -> Shared {
        Shared {
            inner: Mutex::new(Inner::default()),
            changed: watch::Sender::new(0),
            started: Instant::now(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads the state.
    pub(crate) fn read<R>(&self, f: impl FnOnce(&Inner) -> R) -> R {
        f(&self.lock())
    }

    /// Changes the state, then wakes every waiter.
    pub(crate) fn update<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let result = f(&mut self.lock());
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
        result
    }

    /// A receiver that sees every later change.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Waits until `done` holds (checked now and after each change), or `timeout`.
    pub(crate) async fn wait_until(
        &self,
        timeout: std::time::Duration,
        mut done: impl FnMut(&Inner) -> bool,
    ) {
        let mut changes = self.changes();
        let wait = async {
            loop {
                if self.read(&mut done) {
                    return;
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        };
        // Timing out is an answer too: the caller reads whatever is there.
        let _ = tokio::time::timeout(timeout, wait).await;
    }
}
