//! The state one fake Slack shares between its handle, its request handlers and its
//! socket connections, behind one lock, plus a change counter so waiters wake on change.
//! Locks are short and never held across `.await`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{mpsc, watch};

use super::fake::SlackFault;
use super::record::{Call, Delivery, Posted, Upload};

/// What a socket connection's task is told to do.
#[derive(Debug)]
pub(crate) enum ToSocket {
    /// Send this text frame.
    Frame(String),
    /// Send a `disconnect` frame with this reason, then wait for the client to go.
    Disconnect(String),
    /// Drop the TCP connection without a close frame.
    Drop,
    /// Go silent: send nothing more, not even a pong, and read nothing.
    Stall,
}

/// A user's file, served at `/files/{id}/{name}`.
#[derive(Debug, Clone)]
pub(crate) struct StoredFile {
    pub name: String,
    pub bytes: Vec<u8>,
}

#[derive(Debug, Default)]
pub(crate) struct Inner {
    pub calls: Vec<Call>,
    /// Every message, users' and the bot's, oldest first.
    pub messages: Vec<Posted>,
    pub deliveries: Vec<Delivery>,
    pub uploads: Vec<Upload>,
    pub files: HashMap<String, StoredFile>,
    pub reactions: Vec<(String, String, String)>,
    /// Scripted failures by method name, each queue FIFO.
    pub faults: HashMap<String, VecDeque<SlackFault>>,
    /// Every token is refused (`invalid_auth`).
    pub reject_tokens: bool,
    /// Display names set by tests, by user id.
    pub names: HashMap<String, String>,
    /// IMs opened through `conversations.open`, by user id.
    pub ims: HashMap<String, String>,
    /// The open socket connection, if any: its id and its task's inbox.
    pub live: Option<(u64, mpsc::UnboundedSender<ToSocket>)>,
    /// How many socket connections were opened.
    pub connections: u64,
    /// Until when `apps.connections.open` fails (an outage).
    pub down_until: Option<Instant>,
    /// `stall()` found no open socket: the next one goes silent from the start.
    pub stall_next: bool,
    /// How many socket connections went silent so far.
    pub stalled: u64,
    /// Counters for ids.
    pub next_ts: u64,
    pub next_id: u64,
}

impl Inner {
    pub(crate) fn take_fault(&mut self, method: &str) -> Option<SlackFault> {
        self.faults.get_mut(method).and_then(VecDeque::pop_front)
    }

    /// A fresh message ts.
    pub(crate) fn ts(&mut self) -> String {
        self.next_ts += 1;
        format!("1700000000.{:06}", 100 + self.next_ts)
    }

    pub(crate) fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}{}", self.next_id)
    }

    pub(crate) fn down(&self) -> bool {
        self.down_until.is_some_and(|until| Instant::now() < until)
    }

    /// Queue an envelope and send it now if a connection is open.
    pub(crate) fn envelope(&mut self, kind: &str, payload: Value) -> String {
        let envelope_id = self.id("env-");
        self.deliveries.push(Delivery {
            envelope_id: envelope_id.clone(),
            kind: kind.to_string(),
            payload,
            retry_attempt: 0,
            connection: None,
            sent_at: None,
            acked_at: None,
            acks: 0,
        });
        if let Some((connection, _)) = &self.live {
            let connection = *connection;
            self.send_pending(connection);
        }
        envelope_id
    }

    /// Send, on `connection`, every envelope not acknowledged and not already sent on it;
    /// one sent on an earlier connection goes again with `retry_attempt` + 1.
    pub(crate) fn send_pending(&mut self, connection: u64) {
        let Some((live, socket)) = &self.live else {
            return;
        };
        if *live != connection {
            return;
        }
        let socket = socket.clone();
        for delivery in &mut self.deliveries {
            if delivery.acked_at.is_some() || delivery.connection == Some(connection) {
                continue;
            }
            if delivery.connection.is_some() {
                delivery.retry_attempt += 1;
            }
            delivery.connection = Some(connection);
            delivery.sent_at = Some(Instant::now());
            let frame = serde_json::json!({
                "envelope_id": delivery.envelope_id,
                "type": delivery.kind,
                "payload": delivery.payload,
                "accepts_response_payload": delivery.kind != "events_api",
                "retry_attempt": delivery.retry_attempt,
                "retry_reason": if delivery.retry_attempt > 0 { "timeout" } else { "" },
            });
            let _ = socket.send(ToSocket::Frame(frame.to_string())); // a closed socket resends later
        }
    }

    pub(crate) fn acked(&mut self, envelope_id: &str) {
        if let Some(delivery) = self
            .deliveries
            .iter_mut()
            .find(|d| d.envelope_id == envelope_id)
        {
            delivery.acks += 1;
            delivery.acked_at.get_or_insert_with(Instant::now);
        }
    }
}

pub(crate) struct Shared {
    inner: Mutex<Inner>,
    changed: watch::Sender<u64>,
}

impl Shared {
    pub(crate) fn new() -> Shared {
        Shared {
            inner: Mutex::new(Inner::default()),
            changed: watch::Sender::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn read<R>(&self, f: impl FnOnce(&Inner) -> R) -> R {
        f(&self.lock())
    }

    /// Changes the state, then wakes every waiter.
    pub(crate) fn update<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let result = f(&mut self.lock());
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
        result
    }

    /// Waits until `done` holds (checked now and after each change), or `timeout`;
    /// returns whether it held.
    pub(crate) async fn wait_until(
        &self,
        timeout: Duration,
        mut done: impl FnMut(&Inner) -> bool,
    ) -> bool {
        let mut changes = self.changed.subscribe();
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
        self.read(done)
    }
}
