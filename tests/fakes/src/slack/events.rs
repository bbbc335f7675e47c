//! Slack's side of the Events API: the fake posts events to the adapter's listener,
//! signed like Slack signs them (`X-Slack-Signature: v0=HMAC-SHA256(secret,
//! "v0:{timestamp}:{body}")`, `X-Slack-Request-Timestamp`), or signed wrongly on purpose.
//! Plain HTTP/1.1 over a TCP stream to 127.0.0.1: one request per connection.

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::json;
use sha2::Sha256;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::SIGNING_SECRET;
use super::fake::FakeSlack;
use super::incoming::{self, Incoming};

/// How a request is signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signing {
    /// Correctly, now.
    Good,
    /// With the wrong secret.
    BadSignature,
    /// Correctly, but with a timestamp 10 minutes old (a replay).
    Stale,
    /// No signature headers at all.
    Missing,
}

/// The listener's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventsAnswer {
    pub status: u16,
    pub body: String,
}

/// `v0=<hex>` for `body` at `timestamp`.
pub(super) fn signature(secret: &str, timestamp: &str, body: &str) -> String {
    // HMAC accepts keys of any length.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(format!("v0:{timestamp}:{body}").as_bytes());
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("v0={hex}")
}

impl FakeSlack {
    /// Posts the events `msg` makes (as `inject` would send them over the socket) to the
    /// listener at `listen`, one request each; returns each answer.
    pub async fn post_events(
        &self,
        listen: SocketAddr,
        msg: Incoming,
        signing: Signing,
    ) -> Vec<EventsAnswer> {
        let base = self.base();
        let (_, payloads) = self
            .shared
            .update(|inner| incoming::events(inner, msg, &base));
        let mut answers = Vec::new();
        for payload in payloads {
            answers.push(post(listen, &payload.to_string(), "application/json", signing).await);
        }
        answers
    }

    /// Slack's check of a new Request URL.
    pub async fn url_verification(
        &self,
        listen: SocketAddr,
        challenge: &str,
        signing: Signing,
    ) -> EventsAnswer {
        let body = json!({ "token": "fake", "challenge": challenge, "type": "url_verification" });
        post(listen, &body.to_string(), "application/json", signing).await
    }
}

/// One signed POST to `listen`.
pub(super) async fn post(
    listen: SocketAddr,
    body: &str,
    content_type: &str,
    signing: Signing,
) -> EventsAnswer {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let timestamp = match signing {
        Signing::Stale => now - 600,
        _ => now,
    }
    .to_string();
    let secret = match signing {
        Signing::BadSignature => "not-the-secret",
        _ => SIGNING_SECRET,
    };
    let mut request = format!(
        "POST /slack/events HTTP/1.1\r\nHost: {listen}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if signing != Signing::Missing {
        request.push_str(&format!(
            "X-Slack-Request-Timestamp: {timestamp}\r\nX-Slack-Signature: {}\r\n",
            signature(secret, &timestamp, body)
        ));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let Ok(mut stream) = TcpStream::connect(listen).await else {
        return EventsAnswer {
            status: 0,
            body: "connection refused".into(),
        };
    };
    if stream.write_all(request.as_bytes()).await.is_err() {
        return EventsAnswer {
            status: 0,
            body: "write failed".into(),
        };
    }
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response).await; // a cut answer is read as far as it got
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    EventsAnswer { status, body }
}
