//! `Ledger`: who hears what became of a message with an outbox entry (`Entry`). The
//! core stores what a person is to see before it goes out; the manager tells the
//! ledger, and waits until it is told back, when each part reached the platform and
//! when the message is settled — delivered, or given up after its retries. What is
//! not settled when the process dies is sent again by the next start, from the part
//! where it stopped.

use async_trait::async_trait;

#[async_trait]
pub trait Ledger: Send + Sync {
    /// The first `parts` parts of a long text of entry `id` reached the platform;
    /// more follow.
    async fn progress(&self, id: i64, parts: usize);

    /// Entry `id` is done with: the platform has it (`delivered`), or delivery gave up
    /// (the error is logged where it happened) and a restart must not try again.
    async fn settled(&self, id: i64, delivered: bool);
}
