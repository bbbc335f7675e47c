//! The systemd watchdog of `pincer run`. When systemd asks for one (`WATCHDOG_USEC`,
//! with `NOTIFY_SOCKET`), every half of that interval the gateway checks that it still
//! works and only then says `WATCHDOG=1`; systemd restarts a service that stops saying
//! it. Nothing here runs on a timer regardless: each `WATCHDOG=1` follows a check that
//! passed —
//!
//! - the dispatcher's loop answered a probe (`Dispatcher::answers`): it is running and
//!   not stuck in one batch;
//! - the store's writer answered a trivial call that takes the write lock
//!   (`Store::ping`): it is free and the database is writable;
//! - every enabled channel's listener is still running, and its adapter is not stuck
//!   (`Liveness::stuck`: nothing heard and no attempt ended for twice its silence limit).
//!
//! Each probe has the interval to answer; one still unanswered is waited for by the next
//! check rather than asked again. A check that fails sends `STATUS=` with the reasons
//! instead of `WATCHDOG=1` (on every failing check, so the status says how long); one
//! that passes sends `WATCHDOG=1`, with a one-line `STATUS=` summary when that changed.
//!
//! A platform that is down does not stop the watchdog: its adapter is retrying, and a
//! restart would not bring the platform back (it would only cut the other channels'
//! conversations short). `pincer status` and the panel show it.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pincer_channels::Registry;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::notify::{self, Notifier};
use crate::dispatch::Dispatcher;
use crate::store::Store;

/// A channel's listener as the watchdog sees it: `ended` is set once its task has
/// returned, failed or panicked (`EndGuard`).
#[derive(Clone)]
pub(super) struct Listening {
    pub name: String,
    ended: Arc<AtomicBool>,
}

impl Listening {
    pub(super) fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            ended: Arc::default(),
        }
    }

    /// Held by the listener's task: dropped when the task ends, however it ends.
    pub(super) fn guard(&self) -> EndGuard {
        EndGuard(Arc::clone(&self.ended))
    }
}

pub(super) struct EndGuard(Arc<AtomicBool>);

impl Drop for EndGuard {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// What the watchdog checks.
pub(super) struct Parts {
    pub dispatcher: Arc<Dispatcher>,
    pub store: Store,
    pub registry: Arc<Registry>,
    pub listeners: Vec<Listening>,
}

/// One line on the channels for `STATUS=`: "telegram up, discord degraded: …".
pub(super) fn summary(registry: &Registry) -> String {
    let channels: Vec<String> = registry
        .handles()
        .map(|h| format!("{} {}", h.name(), h.health()))
        .collect();
    if channels.is_empty() {
        "running; no chat channel is enabled".into()
    } else {
        format!("running; {}", channels.join(", "))
    }
}

/// Check every `every` and tell systemd through `notifier`, until the task is aborted.
pub(super) async fn run(notifier: Arc<Notifier>, every: Duration, parts: Parts) {
    let mut dispatcher = Probe::new("the dispatcher's loop");
    let mut store = Probe::new("the store");
    let mut said = String::new();
    loop {
        let started = Instant::now();
        match check(&parts, every, &mut dispatcher, &mut store).await {
            Ok(()) => {
                let status = notify::status(&summary(&parts.registry));
                if status == said {
                    notifier.send("WATCHDOG=1");
                } else {
                    if said.contains("not alive") {
                        tracing::info!("the watchdog's checks pass again");
                    }
                    notifier.send(&format!("WATCHDOG=1\n{status}"));
                    said = status;
                }
            }
            Err(problems) => {
                let status = notify::status(&format!("not alive: {}", problems.join("; ")));
                if !said.contains("not alive") {
                    tracing::warn!(
                        "not telling systemd's watchdog that all is well: {}",
                        problems.join("; ")
                    );
                }
                notifier.send(&status);
                said = status;
            }
        }
        tokio::time::sleep_until(started + every).await;
    }
}

/// Whether every part is alive; else what is not.
async fn check(
    parts: &Parts,
    within: Duration,
    dispatcher: &mut Probe,
    store: &mut Probe,
) -> Result<(), Vec<String>> {
    let (looping, writing) = tokio::join!(
        dispatcher.answered(within, || {
            let dispatcher = Arc::clone(&parts.dispatcher);
            async move {
                if dispatcher.answers().await {
                    Ok(())
                } else {
                    Err("the dispatcher's loop has ended".to_string())
                }
            }
        }),
        store.answered(within, || {
            let store = parts.store.clone();
            async move {
                store
                    .ping()
                    .await
                    .map_err(|err| format!("the store cannot write: {err}"))
            }
        }),
    );
    let mut problems: Vec<String> = [looping, writing]
        .into_iter()
        .filter_map(Result::err)
        .collect();
    for listening in &parts.listeners {
        if listening.ended.load(Ordering::Relaxed) {
            problems.push(format!("{} stopped listening", listening.name));
        }
    }
    for handle in parts.registry.handles() {
        if let Some(why) = handle.liveness().and_then(|l| l.stuck()) {
            problems.push(format!("{} {why}", handle.name()));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// A question to one part, at most one in flight: a check waits for the one asked
/// before (for what is left of its time) instead of piling up new ones.
struct Probe {
    what: &'static str,
    in_flight: Option<(Instant, JoinHandle<Result<(), String>>)>,
}

impl Probe {
    fn new(what: &'static str) -> Self {
        Self {
            what,
            in_flight: None,
        }
    }

    /// The answer, if it comes within `within` of when the question was asked.
    async fn answered<F>(&mut self, within: Duration, ask: impl FnOnce() -> F) -> Result<(), String>
    where
        F: Future<Output = Result<(), String>> + Send + 'static,
    {
        let (asked, task) = self
            .in_flight
            .get_or_insert_with(|| (Instant::now(), tokio::spawn(ask())));
        let asked = *asked;
        let left = within.saturating_sub(asked.elapsed());
        match tokio::time::timeout(left, task).await {
            Ok(answer) => {
                self.in_flight = None;
                answer.unwrap_or_else(|_| Err(format!("{} failed to answer", self.what)))
            }
            Err(_) => Err(format!(
                "{} has not answered for {:.1} s",
                self.what,
                asked.elapsed().as_secs_f64()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_probe_that_does_not_answer_in_time_is_waited_for_not_asked_again() {
        let mut probe = Probe::new("the part");
        let (answer, answered) = tokio::sync::oneshot::channel::<()>();
        let within = Duration::from_secs(1);
        let first = probe
            .answered(within, || async move {
                answered.await.map_err(|_| "gone".to_string())
            })
            .await;
        assert_eq!(first, Err("the part has not answered for 1.0 s".into()));
        // Asked again: the same question is waited for, not a new one.
        let mut asked_again = false;
        let second = probe
            .answered(within, || {
                asked_again = true;
                async { Ok(()) }
            })
            .await;
        assert!(!asked_again);
        assert!(second.is_err());
        answer.send(()).unwrap();
        tokio::task::yield_now().await; // the question's task takes its answer
        assert_eq!(probe.answered(within, || async { Ok(()) }).await, Ok(()));
        assert_eq!(probe.answered(within, || async { Ok(()) }).await, Ok(()));
    }

    #[test]
    fn a_listener_counts_as_ended_however_its_task_ends() {
        let listening = Listening::new("telegram");
        let guard = listening.guard();
        assert!(!listening.ended.load(Ordering::Relaxed));
        drop(guard);
        assert!(listening.ended.load(Ordering::Relaxed));
    }
}
