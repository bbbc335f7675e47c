//! How long a test waits for what it expects, and the one way it waits: poll a check
//! on tokio's clock until it holds or `PATIENCE` runs out, then fail saying what never
//! happened. Used by the root crate's tests and the fakes' own tests alike.
//!
//! This is test patience only. How the fakes behave in time (outage delays, grace
//! periods, long-poll holds) is part of each fake and lives with it.
//!
//! Waiting for something NOT to happen does not belong here: a negative wait of
//! `PATIENCE` would make every passing test sleep that long. Wait instead for a later,
//! positive event that proves the negative, or, failing that, a short explicit delay.

use std::time::Duration;

/// How long a test waits for what it expects before failing. Long, since it only
/// matters when a test fails (a passing test stops waiting as soon as the thing
/// happens) and CI machines are busy.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Between two checks. Not faster: some checks start a process (`pincer status`)
/// each time.
const POLL: Duration = Duration::from_millis(50);

/// Poll `check` until it gives a value and return it; after `PATIENCE`, fail with what
/// `failure` says then. Reads tokio's clock, so it also works on a paused clock.
///
/// A check may await, but is not cut off: on a paused clock the runtime jumps ahead
/// whenever it is idle, and a check waiting on a socket would then meet the deadline
/// at once. Keep each check short; the deadline is checked between checks.
pub async fn wait_for<T>(
    check: impl AsyncFnMut() -> Option<T>,
    failure: impl FnOnce() -> String,
) -> T {
    wait_for_within(PATIENCE, check, failure).await
}

/// `wait_for` with more patience than `PATIENCE`: only for what legitimately takes
/// minutes, a real model on a slow machine (tests/real_model), and then as a multiple
/// of `PATIENCE`, with the reason beside it.
pub async fn wait_for_within<T>(
    patience: Duration,
    mut check: impl AsyncFnMut() -> Option<T>,
    failure: impl FnOnce() -> String,
) -> T {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("after {patience:?}: {}", failure());
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Wait until `done` holds; after `PATIENCE`, fail saying `what` never happened.
pub async fn wait_until(what: &str, mut done: impl AsyncFnMut() -> bool) {
    wait_for(
        async || done().await.then_some(()),
        || format!("{what} never happened"),
    )
    .await
}
