//! Asking the dispatcher's loop whether it runs. The loop answers a probe between
//! batches, beside the bus, so an answer says it is alive and not stuck in one batch
//! (a store call that never returns, a gate check that hangs); no answer says the
//! opposite. The gateway's watchdog asks; nothing else does, and nothing waits for a
//! probe when no watchdog runs.

use std::sync::Mutex;

use tokio::sync::{mpsc, oneshot};

/// A probe: the loop answers by sending `()`.
type Probe = oneshot::Sender<()>;

pub(super) struct Probes {
    asks: mpsc::Sender<Probe>,
    /// The loop's end, taken by `Dispatcher::run` when it starts.
    answers: Mutex<Option<mpsc::Receiver<Probe>>>,
}

impl Probes {
    pub(super) fn new() -> Self {
        // The watchdog keeps one probe in flight at a time.
        let (asks, answers) = mpsc::channel(4);
        Self {
            asks,
            answers: Mutex::new(Some(answers)),
        }
    }

    /// The loop's end, for the one loop that answers.
    pub(super) fn take(&self) -> Option<mpsc::Receiver<Probe>> {
        self.answers.lock().ok().and_then(|mut slot| slot.take())
    }

    /// Whether the loop answered; waits for it (callers bound the wait). False once the
    /// loop has ended.
    pub(super) async fn ask(&self) -> bool {
        let (probe, answered) = oneshot::channel();
        if self.asks.send(probe).await.is_err() {
            return false;
        }
        answered.await.is_ok()
    }
}

/// The next probe to answer; never, for a loop without probes.
pub(super) async fn next(answers: &mut Option<mpsc::Receiver<Probe>>) -> Option<Probe> {
    match answers {
        Some(answers) => answers.recv().await,
        None => std::future::pending().await,
    }
}
