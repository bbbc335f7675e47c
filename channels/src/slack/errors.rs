//! Slack failures in Pincer's terms: transient (retry, maybe after Slack's Retry-After)
//! or permanent, each worded with what to do. Slack's error texts carry no token, but
//! only the error code is kept anyway.

use std::time::Duration;

use slack_morphism::errors::SlackClientError;

use crate::channel::ChannelError;

/// Which token a call used, so an auth failure names the right setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    Bot,
    App,
}

impl Token {
    fn fix(self) -> &'static str {
        match self {
            Token::Bot => {
                "check channels.slack.bot_token in .security.yml or SLACK_BOT_TOKEN (the xoxb- token from OAuth & Permissions)"
            }
            Token::App => {
                "check channels.slack.app_token in .security.yml or SLACK_APP_TOKEN (an xapp- app-level token with connections:write)"
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            Token::Bot => "bot token",
            Token::App => "app token",
        }
    }
}

pub(super) fn channel_error(err: &SlackClientError, token: Token) -> ChannelError {
    match err {
        SlackClientError::ApiError(api) => {
            api_error(&api.code, api.http_response_body.as_deref(), token)
        }
        SlackClientError::RateLimitError(limit) => {
            let wait = limit.retry_after.unwrap_or(Duration::from_secs(1));
            ChannelError::rate_limited(
                format!("Slack rate limit: retry after {}s", wait.as_secs()),
                wait,
            )
        }
        SlackClientError::HttpError(http) if http.status_code.is_server_error() => {
            ChannelError::transient(format!("Slack server error ({})", http.status_code))
        }
        SlackClientError::HttpError(http) => {
            ChannelError::permanent(format!("Slack refused the request ({})", http.status_code))
        }
        SlackClientError::HttpProtocolError(err) => ChannelError::transient(format!(
            "cannot reach Slack: {}",
            err.cause
                .as_ref()
                .map(|c| innermost(c.as_ref()))
                .unwrap_or_else(|| "connection failed".into())
        )),
        SlackClientError::ProtocolError(_) => {
            ChannelError::transient("Slack sent a reply Pincer could not read")
        }
        other => ChannelError::transient(format!(
            "Slack connection problem: {}",
            first_line(&other.to_string())
        )),
    }
}

/// An `{"ok": false, "error": code}` answer.
pub(super) fn api_error(code: &str, body: Option<&str>, token: Token) -> ChannelError {
    match code {
        "invalid_auth"
        | "not_authed"
        | "account_inactive"
        | "token_revoked"
        | "token_expired"
        | "not_allowed_token_type" => ChannelError::permanent(format!(
            "Slack rejected the {} ({code}); {}",
            token.name(),
            token.fix()
        )),
        "missing_scope" => {
            let needed = body
                .and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok())
                .and_then(|v| v["needed"].as_str().map(str::to_string))
                .unwrap_or_else(|| "a scope".into());
            ChannelError::permanent(format!(
                "the Slack app lacks the {needed} scope: add it under OAuth & Permissions and reinstall the app"
            ))
        }
        "ratelimited" | "rate_limited" => {
            ChannelError::rate_limited("Slack rate limit", Duration::from_secs(1))
        }
        "internal_error"
        | "fatal_error"
        | "service_unavailable"
        | "request_timeout"
        | "team_added_to_org" => ChannelError::transient(format!("Slack server error ({code})")),
        "not_in_channel" | "channel_not_found" => ChannelError::permanent(format!(
            "Slack refused the message ({code}): invite the bot to the channel with /invite @<bot name>"
        )),
        other => ChannelError::permanent(format!("Slack refused the request ({other})")),
    }
}

fn innermost(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = err;
    while let Some(next) = cause.source() {
        cause = next;
    }
    first_line(&cause.to_string())
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_failures_name_the_setting_and_the_variable() {
        let bot = api_error("invalid_auth", None, Token::Bot);
        assert!(!bot.retryable);
        assert!(bot.message.contains("channels.slack.bot_token"), "{bot}");
        assert!(bot.message.contains("SLACK_BOT_TOKEN"), "{bot}");
        let app = api_error("invalid_auth", None, Token::App);
        assert!(app.message.contains("SLACK_APP_TOKEN"), "{app}");
    }

    #[test]
    fn errors_are_classified() {
        assert!(api_error("internal_error", None, Token::Bot).retryable);
        assert!(!api_error("channel_not_found", None, Token::Bot).retryable);
        let scope = api_error(
            "missing_scope",
            Some(r#"{"ok":false,"error":"missing_scope","needed":"files:write"}"#),
            Token::Bot,
        );
        assert!(scope.message.contains("files:write"), "{scope}");
    }
}
