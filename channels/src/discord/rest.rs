//! A small client for Discord's REST API (`{api_url}/api/v10/...`): JSON in and out,
//! multipart for files, downloads of attachment URLs. Every non-2xx answer becomes a
//! `ChannelError` through `errors::from_response`, keeping a 429's `retry_after`.
//! It never retries by itself: the channel manager does, at the pace Discord asks.

use std::time::Duration;

use reqwest::header::{AUTHORIZATION, RETRY_AFTER, USER_AGENT};
use reqwest::{Method, RequestBuilder};
use serde_json::Value;

use super::errors;
use crate::channel::ChannelError;

/// Discord wants a bot's user agent in this form.
const AGENT: &str = concat!(
    "DiscordBot (https://github.com/pincer, ",
    env!("CARGO_PKG_VERSION"),
    ")"
);
const TIMEOUT: Duration = Duration::from_secs(30);

pub(super) struct Rest {
    client: reqwest::Client,
    /// `{api_url}/api/v10`.
    base: String,
    /// `Bot <token>`, the Authorization header.
    auth: String,
}

impl Rest {
    pub(super) fn new(api_url: &str, token: &str) -> Result<Self, ChannelError> {
        let api_url = api_url.trim_end_matches('/');
        let parsed = reqwest::Url::parse(api_url).map_err(|err| {
            ChannelError::permanent(format!(
                "channels.discord.api_url = \"{api_url}\" is not a URL: {err}"
            ))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ChannelError::permanent(format!(
                "channels.discord.api_url = \"{api_url}\" must start with https:// (or http:// for a local proxy)"
            )));
        }
        // Each request says it is a bot in its own user agent (`AGENT`).
        let client = pincer_net::http::client().timeout(TIMEOUT);
        let client = client.build().map_err(|err| {
            ChannelError::permanent(format!("cannot build an HTTP client: {err}"))
        })?;
        let token = token.trim();
        let token = token.strip_prefix("Bot ").unwrap_or(token);
        Ok(Self {
            client,
            base: format!("{api_url}/api/v10"),
            auth: format!("Bot {token}"),
        })
    }

    /// The API root the gateway client's `HttpBuilder::proxy` takes.
    pub(super) fn api_url(&self) -> &str {
        self.base.trim_end_matches("/api/v10")
    }

    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .header(AUTHORIZATION, &self.auth)
            .header(USER_AGENT, AGENT)
    }

    pub(super) async fn get(&self, path: &str) -> Result<Value, ChannelError> {
        execute(self.request(Method::GET, path)).await
    }

    /// A JSON body with POST, PATCH or PUT.
    pub(super) async fn json(
        &self,
        method: Method,
        path: &str,
        body: &Value,
    ) -> Result<Value, ChannelError> {
        execute(self.request(method, path).json(body)).await
    }

    /// A request with no body (typing, reactions); the answer is usually 204.
    pub(super) async fn empty(&self, method: Method, path: &str) -> Result<Value, ChannelError> {
        execute(self.request(method, path).header("content-length", "0")).await
    }

    pub(super) async fn multipart(
        &self,
        path: &str,
        form: reqwest::multipart::Form,
    ) -> Result<Value, ChannelError> {
        execute(self.request(Method::POST, path).multipart(form)).await
    }

    /// The bytes at an attachment's URL, refusing more than `max` bytes.
    pub(super) async fn download(&self, url: &str, max: u64) -> Result<Vec<u8>, ChannelError> {
        let mut response = self
            .client
            .get(url)
            .header(USER_AGENT, AGENT)
            .send()
            .await
            .map_err(|e| errors::network(&e))?;
        if !response.status().is_success() {
            return Err(ChannelError::transient(format!(
                "attachment download answered {}",
                response.status()
            )));
        }
        let mut out = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| errors::network(&e))? {
            out.extend_from_slice(&chunk);
            if out.len() as u64 > max {
                return Err(ChannelError::permanent(
                    "larger than channels.discord.media_max_mb",
                ));
            }
        }
        Ok(out)
    }
}

async fn execute(request: RequestBuilder) -> Result<Value, ChannelError> {
    let response = request.send().await.map_err(|e| errors::network(&e))?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = response.bytes().await.map_err(|e| errors::network(&e))?;
    if !status.is_success() {
        return Err(errors::from_response(
            status.as_u16(),
            retry_after.as_deref(),
            &body,
        ));
    }
    if body.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(&body).map_err(|e| {
        ChannelError::transient(format!("Discord sent a reply Pincer could not read: {e}"))
    })
}

/// A snowflake from a JSON string (Discord sends ids as strings).
pub(super) fn snowflake(value: &Value) -> Option<u64> {
    match value {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}
