//! Discord failures in Pincer's terms: transient (retry, maybe after Discord's
//! `retry_after`) or permanent, each worded with what to do. Error texts never carry the
//! token (it travels in a header, never in a URL).

use std::time::Duration;

use serenity::gateway::GatewayError;

use crate::channel::ChannelError;

/// What a rejected token says, wherever it is found (REST 401, gateway close 4004).
pub(super) const TOKEN_REJECTED: &str = "Discord rejected the bot token (401 Unauthorized); put a valid token in channels.discord.bot_token in .security.yml or DISCORD_BOT_TOKEN";

/// What a refused MESSAGE_CONTENT intent says (gateway close 4014).
pub(super) const INTENT_REFUSED: &str = "Discord refused the Message Content intent (close 4014); enable it in the Discord developer portal: your application → Bot → Privileged Gateway Intents → Message Content Intent";

/// A REST answer that was not 2xx. `retry_after_header` is the `Retry-After` header.
pub(super) fn from_response(
    status: u16,
    retry_after_header: Option<&str>,
    body: &[u8],
) -> ChannelError {
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let message = json["message"].as_str().unwrap_or("").to_string();
    match status {
        429 => {
            let secs = json["retry_after"]
                .as_f64()
                .or_else(|| retry_after_header.and_then(|h| h.trim().parse::<f64>().ok()))
                .filter(|s| s.is_finite() && *s >= 0.0)
                .unwrap_or(1.0);
            ChannelError::rate_limited(
                format!("Discord rate limit: retry after {secs:.1}s"),
                Duration::from_secs_f64(secs.min(600.0)),
            )
        }
        401 => ChannelError::permanent(TOKEN_REJECTED),
        403 => ChannelError::permanent(format!(
            "Discord refused (403 {message}); give the bot View Channel, Send Messages and Attach Files in that channel"
        )),
        404 => ChannelError::permanent(format!(
            "Discord does not know that channel, message or user (404 {message})"
        )),
        413 => ChannelError::permanent(format!(
            "Discord refused the file as too large (413 {message}); bots may upload up to 10 MB per message (more in boosted servers)"
        )),
        500..=599 => ChannelError::transient(format!("Discord server error ({status})")),
        _ => ChannelError::permanent(format!("Discord refused the request ({status} {message})")),
    }
}

/// A request that got no answer.
pub(super) fn network(err: &reqwest::Error) -> ChannelError {
    let mut cause: &dyn std::error::Error = err;
    while let Some(next) = cause.source() {
        cause = next;
    }
    ChannelError::transient(format!("cannot reach Discord: {cause}"))
}

/// Why serenity's client stopped.
pub(super) fn gateway(err: &serenity::Error) -> ChannelError {
    match err {
        serenity::Error::Gateway(GatewayError::InvalidAuthentication) => {
            ChannelError::permanent(TOKEN_REJECTED)
        }
        serenity::Error::Gateway(GatewayError::DisallowedGatewayIntents) => {
            ChannelError::permanent(INTENT_REFUSED)
        }
        serenity::Error::Gateway(GatewayError::InvalidGatewayIntents) => {
            ChannelError::permanent(format!("Discord refused the gateway intents: {err}"))
        }
        serenity::Error::Http(http) if http.status_code().map(|s| s.as_u16()) == Some(401) => {
            ChannelError::permanent(TOKEN_REJECTED)
        }
        other => ChannelError::transient(format!("reconnecting: Discord gateway: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limits_carry_discords_wait() {
        let body = br#"{"message":"You are being rate limited.","retry_after":2.5,"global":false}"#;
        let err = from_response(429, Some("3"), body);
        assert!(err.retryable);
        assert_eq!(err.retry_after, Some(Duration::from_millis(2500)));
        let err = from_response(429, Some("3"), b"");
        assert_eq!(err.retry_after, Some(Duration::from_secs(3)));
    }

    #[test]
    fn statuses_are_classified() {
        assert!(!from_response(401, None, b"{}").retryable);
        assert!(
            from_response(401, None, b"{}")
                .message
                .contains("DISCORD_BOT_TOKEN")
        );
        assert!(from_response(502, None, b"").retryable);
        let too_large = from_response(
            413,
            None,
            br#"{"message":"Request entity too large","code":40005}"#,
        );
        assert!(!too_large.retryable);
        assert!(too_large.message.contains("10 MB"), "{}", too_large.message);
        assert!(
            !from_response(403, None, br#"{"message":"Missing Access","code":50001}"#).retryable
        );
        assert!(
            !gateway(&serenity::Error::Gateway(
                GatewayError::DisallowedGatewayIntents
            ))
            .message
            .is_empty()
        );
    }
}
