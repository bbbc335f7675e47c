//! SDK failures as `ChannelError`s: a revoked token or a refused event is permanent and
//! says what to do, a rate limit carries the homeserver's wait, a failed connection is
//! transient. The texts never hold a URL with a token (the SDK sends it as a header).

use std::time::Duration;

use matrix_sdk::HttpError;
use matrix_sdk::ruma::api::error::{ErrorKind, RetryAfter};

use crate::channel::ChannelError;

/// A rate limit without the homeserver's word on how long.
const DEFAULT_WAIT: Duration = Duration::from_secs(2);

pub(super) fn channel_error(err: &matrix_sdk::Error) -> ChannelError {
    match err {
        matrix_sdk::Error::Http(http) => http_error(http),
        other => ChannelError::transient(format!("Matrix: {other}")),
    }
}

pub(super) fn http_error(err: &HttpError) -> ChannelError {
    match err.client_api_error_kind() {
        Some(ErrorKind::UnknownToken(_)) => ChannelError::permanent(
            "the homeserver no longer accepts the bot's login (M_UNKNOWN_TOKEN): set a new channels.matrix.access_token in .security.yml, or check the password, and restart",
        ),
        Some(ErrorKind::LimitExceeded(limit)) => {
            let wait = match limit.retry_after {
                Some(RetryAfter::Delay(wait)) => wait,
                Some(RetryAfter::DateTime(at)) => at
                    .duration_since(crate::clock::now())
                    .unwrap_or(DEFAULT_WAIT),
                None => DEFAULT_WAIT,
            };
            ChannelError::rate_limited("Matrix rate limit (M_LIMIT_EXCEEDED)", wait)
        }
        Some(ErrorKind::Forbidden) => ChannelError::permanent(format!(
            "the homeserver refused (M_FORBIDDEN): {err}; is the bot still in that room, with the power to post?"
        )),
        Some(ErrorKind::TooLarge) => ChannelError::permanent(format!(
            "the homeserver refused a message or file as too large (M_TOO_LARGE): {err}"
        )),
        Some(ErrorKind::NotFound) => {
            ChannelError::permanent(format!("Matrix: not found (M_NOT_FOUND): {err}"))
        }
        Some(_) => ChannelError::permanent(format!("Matrix: {err}")),
        None => ChannelError::transient(format!("Matrix: {err}")),
    }
}
