//! Telegram failures in Pincer's terms: transient (retry, maybe after the platform's
//! `retry_after`) or permanent (log and report), each worded with what to do.

use std::time::Duration;

use teloxide::{ApiError, RequestError};

use crate::channel::ChannelError;

pub(super) fn channel_error(err: &RequestError) -> ChannelError {
    match err {
        RequestError::RetryAfter(wait) => ChannelError::rate_limited(
            format!("Telegram rate limit: retry after {}s", wait.seconds()),
            Duration::from_secs(u64::from(wait.seconds())),
        ),
        RequestError::Network(err) => {
            ChannelError::transient(format!("cannot reach Telegram: {}", network_cause(err)))
        }
        RequestError::Io(err) => {
            ChannelError::transient(format!("I/O error talking to Telegram: {err}"))
        }
        RequestError::InvalidJson { .. } => {
            ChannelError::transient("Telegram sent a reply Pincer could not read".to_string())
        }
        RequestError::MigrateToChatId(id) => ChannelError::permanent(format!(
            "this group became a supergroup with id {id}; update channels.telegram.groups"
        )),
        RequestError::Api(api) => api_error(api),
    }
}

fn api_error(err: &ApiError) -> ChannelError {
    match err {
        ApiError::InvalidToken => ChannelError::permanent(
            "Telegram rejected the bot token (401); check channels.telegram.bot_token in .security.yml or TELEGRAM_BOT_TOKEN",
        ),
        ApiError::TerminatedByOtherGetUpdates => ChannelError::transient(
            "another program is polling this bot (409 conflict); stop the other instance",
        ),
        ApiError::BotBlocked => ChannelError::permanent("the user blocked the bot"),
        ApiError::Unknown(text) if is_server_side(text) => {
            ChannelError::transient(format!("Telegram server error: {text}"))
        }
        other => ChannelError::permanent(format!("Telegram refused the request: {other}")),
    }
}

fn is_server_side(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    [
        "internal server error",
        "bad gateway",
        "gateway timeout",
        "service unavailable",
        "too many requests",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// The innermost cause, which says more than reqwest's "error sending request".
fn network_cause(err: &dyn std::error::Error) -> String {
    let mut cause: &dyn std::error::Error = err;
    while let Some(next) = cause.source() {
        cause = next;
    }
    // Error texts from reqwest include the URL, and a Telegram URL holds the bot token.
    redact_token(&cause.to_string())
}

/// Remove anything that looks like a bot token (`<digits>:<35 chars>` after `/bot`).
pub fn redact_token(text: &str) -> String {
    match text.find("/bot") {
        Some(start) => {
            let rest = &text[start + 4..];
            let end = rest.find('/').unwrap_or(rest.len());
            format!(
                "{}/bot[redacted]{}",
                &text[..start],
                redact_token(&rest[end..])
            )
        }
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_never_survive_in_error_text() {
        let text = "error sending request for url (http://127.0.0.1:1/bot123456:SECRET/GetUpdates)";
        let clean = redact_token(text);
        assert!(!clean.contains("SECRET"), "{clean}");
        assert!(clean.contains("/bot[redacted]/GetUpdates"));
    }

    #[test]
    fn errors_are_classified() {
        assert!(!api_error(&ApiError::InvalidToken).retryable);
        assert!(api_error(&ApiError::TerminatedByOtherGetUpdates).retryable);
        assert!(api_error(&ApiError::Unknown("Bad Gateway".into())).retryable);
    }
}
