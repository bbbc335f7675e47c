//! Delivering one operation with retries: transient failures are retried with
//! exponential backoff, a platform's `retry_after` is honoured, permanent failures
//! return at once.

use std::future::Future;
use std::time::Duration;

use crate::backoff::Backoff;
use crate::channel::ChannelError;

/// Attempts per operation, the first included.
pub(super) const ATTEMPTS: u32 = 5;
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The longest `retry_after` we wait; a platform asking for more gets this.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

pub async fn with_retries<T, F, Fut>(what: &str, mut op: F) -> Result<T, ChannelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ChannelError>>,
{
    let mut backoff = Backoff::new(FIRST_BACKOFF, MAX_BACKOFF);
    let mut attempt = 1;
    loop {
        match op().await {
            Ok(value) => return Ok(value),
            Err(err) if err.retryable && attempt < ATTEMPTS => {
                let wait = backoff.wait(err.retry_after.map(|after| after.min(MAX_RETRY_AFTER)));
                tracing::warn!(
                    "{what} failed ({err}); retry {attempt}/{} in {}ms",
                    ATTEMPTS - 1,
                    wait.as_millis()
                );
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            Err(err) => return Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test(start_paused = true)]
    async fn transient_errors_are_retried_honouring_retry_after() {
        let calls = AtomicU32::new(0);
        let started = tokio::time::Instant::now();
        let result = with_retries("send", || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 => Err(ChannelError::rate_limited("429", Duration::from_secs(7))),
                1 => Err(ChannelError::transient("network")),
                _ => Ok("sent"),
            }
        })
        .await;
        assert_eq!(result, Ok("sent"));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        // 7 s as asked, then the 1 s second backoff (500 ms doubled).
        assert_eq!(started.elapsed(), Duration::from_millis(8000));
    }

    #[tokio::test(start_paused = true)]
    async fn permanent_errors_and_exhausted_retries_fail() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = with_retries("send", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(ChannelError::permanent("chat not found"))
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        calls.store(0, Ordering::SeqCst);
        let result: Result<(), _> = with_retries("send", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(ChannelError::transient("down"))
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), ATTEMPTS);
    }
}
