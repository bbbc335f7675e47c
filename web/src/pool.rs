//! The panel's open connections, and room for one more. At most `MAX_CONNECTIONS` in
//! all (so a flood cannot take the gateway's file descriptors from its channels) and
//! `MAX_PER_PEER` from one address; when either is full, the oldest connection that is
//! not being answered — it has not sent a whole request yet (silent, or trickling its
//! head or body), or sits idle between two — is closed to make room. So a flood of
//! silent connections, from one address or from the loopback (where every program on
//! the machine has the same one), cannot lock the owner out: their browser's request is
//! whole in one packet and is answered, the flood's oldest connections go. Only when
//! every connection is being answered is a new one refused.
//!
//! It decides who is closed; `serve` accepts, and each connection's `Activity` says
//! what the connection is doing.

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use tokio::task::{AbortHandle, Id};

/// Connections open at once.
pub(crate) const MAX_CONNECTIONS: usize = 128;
/// Connections open at once from one address.
pub(crate) const MAX_PER_PEER: usize = 32;

/// Waiting for a request, or receiving one: may be closed to make room.
const WAITING: u8 = 0;
/// The request is whole and its answer is going out: kept.
const ANSWERING: u8 = 1;

/// What one connection is doing, shared by its task and the pool.
#[derive(Debug, Clone, Default)]
pub(crate) struct Activity(Arc<AtomicU8>);

impl Activity {
    fn answering(&self) -> bool {
        self.0.load(Ordering::Relaxed) == ANSWERING
    }

    /// The request `body` of a request that has just arrived: once it is all received
    /// (at once, for a request without one) the connection is being answered.
    pub(crate) fn receive(&self, body: Body) -> Body {
        if body.is_end_stream() {
            self.0.store(ANSWERING, Ordering::Relaxed);
            return body;
        }
        Body::new(Watched {
            body,
            activity: self.clone(),
            on_end: Some(ANSWERING),
        })
    }

    /// The response `body`: when it has gone out (or the connection broke), the
    /// connection waits for a request again.
    pub(crate) fn answer(&self, body: Body) -> Body {
        Body::new(Watched {
            body,
            activity: self.clone(),
            on_end: None,
        })
    }
}

/// A body that tells `activity` when it ends: `on_end` when its last frame is read
/// (a request's), `WAITING` when dropped (a response's).
struct Watched {
    body: Body,
    activity: Activity,
    on_end: Option<u8>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        if self.on_end.is_none() {
            self.activity.0.store(WAITING, Ordering::Relaxed);
        }
    }
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let (Poll::Ready(None), Some(state)) = (&polled, self.on_end) {
            self.activity.0.store(state, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// One open connection.
struct Open {
    peer: IpAddr,
    /// When it was accepted, in accept order: the oldest goes first.
    number: u64,
    activity: Activity,
    /// Closes it (its task owns the socket).
    abort: AbortHandle,
}

/// Every open connection, by the id of the task serving it.
#[derive(Default)]
pub(crate) struct Pool {
    open: HashMap<Id, Open>,
    accepted: u64,
}

impl Pool {
    /// Make room for a connection from `peer`: closes the oldest connection not being
    /// answered where a limit is reached; false if there is none to close.
    pub(crate) fn make_room(&mut self, peer: IpAddr) -> bool {
        let from_peer = self.open.values().filter(|o| o.peer == peer).count();
        if from_peer >= MAX_PER_PEER && !self.close_oldest_waiting(Some(peer)) {
            return false;
        }
        self.open.len() < MAX_CONNECTIONS || self.close_oldest_waiting(None)
    }

    /// A connection now served by the task `abort` stops.
    pub(crate) fn insert(&mut self, peer: IpAddr, activity: Activity, abort: AbortHandle) {
        self.accepted += 1;
        let open = Open {
            peer,
            number: self.accepted,
            activity,
            abort,
        };
        self.open.insert(open.abort.id(), open);
    }

    /// The task `id` ended: its connection is closed.
    pub(crate) fn remove(&mut self, id: Id) {
        self.open.remove(&id);
    }

    fn close_oldest_waiting(&mut self, peer: Option<IpAddr>) -> bool {
        let oldest = self
            .open
            .iter()
            .filter(|(_, o)| peer.is_none_or(|p| o.peer == p) && !o.activity.answering())
            .min_by_key(|(_, o)| o.number)
            .map(|(id, _)| *id);
        match oldest.and_then(|id| self.open.remove(&id)) {
            Some(open) => {
                open.abort.abort();
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_pool_closes_the_oldest_waiting_connection_and_keeps_those_answering() {
        let mut pool = Pool::default();
        let mut tasks = tokio::task::JoinSet::new();
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let mut activities = Vec::new();
        for _ in 0..MAX_PER_PEER {
            assert!(pool.make_room(local));
            let activity = Activity::default();
            let abort = tasks.spawn(std::future::pending::<()>());
            pool.insert(local, activity.clone(), abort);
            activities.push(activity);
        }
        // The first one is being answered (a chat stream): it must stay.
        let streaming = activities[0].answer(Body::empty());
        activities[0].0.store(ANSWERING, Ordering::Relaxed);
        assert!(
            pool.make_room(local),
            "room is made by closing a waiting one"
        );
        assert_eq!(pool.open.len(), MAX_PER_PEER - 1);
        let closed = tasks.join_next().await.unwrap().unwrap_err();
        assert!(closed.is_cancelled());
        assert!(
            pool.open.values().any(|o| o.number == 1),
            "the answering one stays"
        );
        assert!(
            !pool.open.values().any(|o| o.number == 2),
            "the oldest waiting one went"
        );
        // Another address is not counted against this one.
        assert!(pool.make_room("10.0.0.7".parse().unwrap()));
        // Once its answer is done, the first one may go too.
        drop(streaming);
        assert!(!activities[0].answering());
    }

    #[tokio::test]
    async fn a_request_is_answering_once_its_body_is_all_in() {
        let activity = Activity::default();
        let body = activity.receive(Body::from("abc"));
        assert!(!activity.answering());
        let bytes = axum::body::to_bytes(body, 10).await.unwrap();
        assert_eq!(&bytes[..], b"abc");
        assert!(activity.answering());
        let empty = Activity::default();
        let _ = empty.receive(Body::empty());
        assert!(
            empty.answering(),
            "a request without a body is whole at once"
        );
    }
}
