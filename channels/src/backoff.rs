//! Waiting after a failure, as every adapter and the channel manager do it: the process's
//! one `Backoff` (`pincer_net`), which doubles up to a ceiling and takes the platform's
//! own `retry_after` when it names one; and here what a channel adds — a permanent error
//! (a revoked token) waits long, with the channel shown down until someone acts.

use std::time::Duration;

pub use pincer_net::Backoff;

use crate::channel::{ChannelError, Health};

/// How long a channel waits after a permanent error before trying again (a token may be
/// fixed in the meantime).
pub const PERMANENT_WAIT: Duration = Duration::from_secs(300);

/// A platform connection's backoff: 1 s, doubling to a minute.
pub const fn reconnect() -> Backoff {
    Backoff::new(Duration::from_secs(1), Duration::from_secs(60))
}

/// What `err` makes of a channel's health, and how long to wait: a retryable error
/// degrades it and backs off; a permanent one takes it down for `PERMANENT_WAIT`.
pub fn after(backoff: &mut Backoff, err: &ChannelError) -> (Health, Duration) {
    let wait = backoff.wait(err.retry_after);
    if err.retryable {
        (Health::Degraded(err.message.clone()), wait)
    } else {
        (Health::Down(err.message.clone()), PERMANENT_WAIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permanent_error_takes_the_channel_down_and_a_transient_one_backs_off() {
        let mut b = Backoff::new(Duration::from_secs(1), Duration::from_secs(5));
        let (health, wait) = after(&mut b, &ChannelError::permanent("token revoked"));
        assert_eq!(health, Health::Down("token revoked".into()));
        assert_eq!(wait, PERMANENT_WAIT);
        let (health, wait) = after(&mut b, &ChannelError::transient("timeout"));
        assert_eq!(health, Health::Degraded("timeout".into()));
        assert_eq!(wait.as_secs(), 2);
        let limited = ChannelError {
            retry_after: Some(Duration::from_secs(42)),
            ..ChannelError::transient("slow down")
        };
        assert_eq!(after(&mut b, &limited).1.as_secs(), 42);
    }
}
