//! One worker at a time over a queue, taking what waits together: the store's writer
//! (one commit for many calls) and the memory scribe (one look at the files for many
//! turns) are both this.
//!
//! A job is queued at once. When no worker runs, queueing one starts it on the
//! blocking pool; the worker takes everything queued (up to a batch's most), hands it
//! to the batch's work, and goes on until the queue is empty. Under load the queue is
//! never empty, so jobs cost no thread hand-off each, and however many callers come at
//! once, only one pool thread serves them. Jobs answer their callers themselves (a
//! channel inside the job): a job the work drops unanswered (a panic) closes its
//! channel, so its caller hears an error rather than waiting forever.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard};

/// What serves one batch; it takes the jobs out of the vector it is given.
type Work<J> = Box<dyn Fn(&mut Vec<J>) + Send + Sync>;

/// A queue with at most one worker. Clones share it.
pub struct Batcher<J> {
    shared: Arc<Shared<J>>,
}

impl<J> Clone for Batcher<J> {
    fn clone(&self) -> Self {
        Batcher {
            shared: Arc::clone(&self.shared),
        }
    }
}

struct Shared<J> {
    queue: Mutex<Queue<J>>,
    /// Jobs in one batch at most.
    most: usize,
    work: Work<J>,
}

struct Queue<J> {
    jobs: Vec<J>,
    /// A worker is on the blocking pool and will see what is queued.
    running: bool,
}

impl<J: Send + 'static> Batcher<J> {
    pub fn new(most: usize, work: impl Fn(&mut Vec<J>) + Send + Sync + 'static) -> Self {
        Batcher {
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue {
                    jobs: Vec::new(),
                    running: false,
                }),
                most: most.max(1),
                work: Box::new(work),
            }),
        }
    }

    /// Queue `job`, and start a worker if none runs. Jobs are served in the order they
    /// were queued. Must be called inside a tokio runtime.
    pub fn push(&self, job: J) {
        let start = {
            let mut queue = lock(&self.shared.queue);
            queue.jobs.push(job);
            !std::mem::replace(&mut queue.running, true)
        };
        if start {
            let unrun = Unrun(Some(Arc::clone(&self.shared)));
            // Dropped, not awaited: the jobs answer their callers.
            drop(tokio::task::spawn_blocking(move || {
                if let Some(shared) = unrun.disarm() {
                    serve(&shared);
                }
            }));
        }
    }
}

/// The worker: take what is queued, serve it; stop when nothing is left.
fn serve<J>(shared: &Shared<J>) {
    let mut batch = Vec::new();
    loop {
        {
            let mut queue = lock(&shared.queue);
            if queue.jobs.is_empty() {
                queue.running = false;
                return;
            }
            let take = queue.jobs.len().min(shared.most);
            batch.extend(queue.jobs.drain(..take));
        }
        // A panic drops the jobs left in the batch (their callers hear it) and the
        // worker goes on with the next.
        if catch_unwind(AssertUnwindSafe(|| (shared.work)(&mut batch))).is_err() {
            tracing::warn!("a batch of queued work panicked; its callers were told");
        }
        batch.clear();
    }
}

/// A lock whose holder panicked is still good: the queue is consistent between
/// statements.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A worker not run yet. If a runtime shutting down drops it unrun, the queue is
/// marked as having no worker, so the next job starts one.
struct Unrun<J>(Option<Arc<Shared<J>>>);

impl<J> Unrun<J> {
    fn disarm(mut self) -> Option<Arc<Shared<J>>> {
        self.0.take()
    }
}

impl<J> Drop for Unrun<J> {
    fn drop(&mut self) {
        if let Some(shared) = &self.0 {
            lock(&shared.queue).running = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jobs_queued_while_the_worker_is_busy_are_served_together_in_order() {
        let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
        let gate = Mutex::new(gate_rx);
        let batches = Arc::new(Mutex::new(Vec::<Vec<u32>>::new()));
        let seen = Arc::clone(&batches);
        let batcher = Batcher::new(
            100,
            move |jobs: &mut Vec<(u32, tokio::sync::oneshot::Sender<u32>)>| {
                // The first batch waits until the test has queued the rest.
                if lock(&seen).is_empty() {
                    let _ = lock(&gate).recv();
                }
                lock(&seen).push(jobs.iter().map(|(n, _)| *n).collect());
                for (n, tell) in jobs.drain(..) {
                    let _ = tell.send(n * 10);
                }
            },
        );
        let mut answers = Vec::new();
        for n in 0..5 {
            let (tell, answer) = tokio::sync::oneshot::channel();
            batcher.push((n, tell));
            answers.push(answer);
        }
        gate_tx.send(()).unwrap();
        for (n, answer) in answers.into_iter().enumerate() {
            assert_eq!(answer.await.unwrap(), n as u32 * 10);
        }
        let batches = lock(&batches).clone();
        // The first job may have started the worker alone, or with others; what came
        // while it waited went together, and nothing was served twice or out of order.
        assert!(batches.len() <= 2, "{batches:?}");
        assert_eq!(batches.concat(), vec![0, 1, 2, 3, 4]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_batch_fails_its_callers_and_the_worker_goes_on() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let batcher = Batcher::new(
            1,
            move |jobs: &mut Vec<(bool, tokio::sync::oneshot::Sender<()>)>| {
                counted.fetch_add(1, Ordering::SeqCst);
                for (panic, tell) in jobs.drain(..) {
                    assert!(!panic, "asked to panic");
                    let _ = tell.send(());
                }
            },
        );
        let (tell, answer) = tokio::sync::oneshot::channel();
        batcher.push((true, tell));
        assert!(answer.await.is_err(), "the caller hears the panic");
        let (tell, answer) = tokio::sync::oneshot::channel();
        batcher.push((false, tell));
        answer.await.expect("the next job is served");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }
}
