//! Slack's half of lazy attachments, and the rule that keeps the bot token on Slack.
//! A converted message carries its files as pending `MediaRef`s; this `MediaFetcher`
//! downloads one from its `url_private` with the bot token only when the core calls
//! `inbox::fetch_all` for an admitted message.
//!
//! The token goes only where `token_may_go` says: https to `slack.com` or a subdomain
//! (files.slack.com), or the configured `api_url`'s own scheme, host and port (a proxy,
//! the test fake). Any other URL (an external file shared in Slack, a hostile
//! `url_private`) is not fetched, and the client follows a redirect only to a URL the
//! same rule allows.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::Url;
use reqwest::redirect::{Attempt, Policy};

use super::Slack;
use crate::channel::ChannelError;
use crate::inbox::{FetchError, MediaFetcher};

/// A download may take this long.
const TIMEOUT: Duration = Duration::from_secs(120);
/// The longest redirect chain followed (reqwest's default).
const REDIRECTS: usize = 10;
/// What the model reads after the file's name when its URL is not Slack's.
const OUTSIDE: &str = "is stored outside Slack; not downloaded";

/// The HTTP client for files (`api_url` as configured): it follows a redirect only to
/// where the token may go.
pub(super) fn client(api_url: &str) -> Result<reqwest::Client, ChannelError> {
    let api = Url::parse(api_url).ok();
    let redirects = Policy::custom(move |attempt: Attempt| {
        if attempt.previous().len() >= REDIRECTS {
            attempt.error("too many redirects")
        } else if token_may_go(attempt.url(), api.as_ref()) {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    pincer_net::http::client()
        .timeout(TIMEOUT)
        .redirect(redirects)
        .build()
        .map_err(|e| ChannelError::permanent(format!("cannot build an HTTP client: {e}")))
}

/// Whether the bot token may be sent to `url`: https to `slack.com` or a subdomain of
/// it on the default port, or the same scheme, host and port as `api` (the configured
/// `api_url`); never with user info (`https://files.slack.com@evil.com/`).
pub(super) fn token_may_go(url: &Url, api: Option<&Url>) -> bool {
    if !url.username().is_empty() || url.password().is_some() {
        return false;
    }
    if url.origin().is_tuple() && api.is_some_and(|api| url.origin() == api.origin()) {
        return true;
    }
    url.scheme() == "https"
        && url.port().is_none()
        && url
            .domain()
            .is_some_and(|host| host == "slack.com" || host.ends_with(".slack.com"))
}

struct Files {
    http: reqwest::Client,
    /// The bot token (`xoxb-…`): Slack's file URLs need it.
    token: String,
    /// The configured `api_url`, whose origin may also receive the token.
    api: Option<Url>,
    inbox: PathBuf,
    max_bytes: u64,
}

impl Slack {
    /// The fetcher the messages this adapter converts carry.
    pub(super) fn fetcher(&self) -> Arc<dyn MediaFetcher> {
        Arc::new(Files {
            http: self.http.clone(),
            token: self.settings.bot_token.clone(),
            // `Slack::new` refused an api_url that is not a URL.
            api: Url::parse(&self.settings.api_url).ok(),
            inbox: self.settings.inbox.clone(),
            max_bytes: self.settings.media_max_bytes,
        })
    }
}

#[async_trait]
impl MediaFetcher for Files {
    fn inbox(&self) -> &Path {
        &self.inbox
    }

    fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    async fn fetch(&self, url: &str, max: u64) -> Result<Vec<u8>, FetchError> {
        let failed = |e: String| FetchError::Failed(e);
        let url = Url::parse(url).map_err(|_| FetchError::Refused(OUTSIDE.into()))?;
        if !token_may_go(&url, self.api.as_ref()) {
            tracing::info!(
                channel = super::CHANNEL,
                host = url.host_str().unwrap_or_default(),
                "a file outside Slack was not fetched (the bot token goes only to Slack)"
            );
            return Err(FetchError::Refused(OUTSIDE.into()));
        }
        let mut response = self
            .http
            .get(url)
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| failed(format!("cannot fetch the file: {}", e.without_url())))?;
        if !response.status().is_success() {
            return Err(failed(format!("Slack answered {}", response.status())));
        }
        if response.content_length().is_some_and(|len| len > max) {
            return Err(FetchError::TooBig);
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| failed(format!("the download broke off: {}", e.without_url())))?
        {
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 > max {
                return Err(FetchError::TooBig);
            }
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::Router;
    use axum::http::{HeaderMap, StatusCode, header};
    use axum::response::{IntoResponse, Response};
    use axum::routing::get;

    use super::*;

    fn may_go(url: &str, api: &str) -> bool {
        token_may_go(&Url::parse(url).unwrap(), Some(&Url::parse(api).unwrap()))
    }

    const SLACK_API: &str = "https://slack.com/api";

    #[test]
    fn the_token_goes_to_slack_over_https_only() {
        assert!(may_go(
            "https://files.slack.com/files-pri/T1-F1/report.pdf",
            SLACK_API
        ));
        assert!(may_go("https://slack.com/x", SLACK_API));
        assert!(may_go("https://FILES.Slack.COM:443/x", SLACK_API));
        for url in [
            "https://files.slack.com.evil.com/x",
            "https://evilslack.com/x",
            "https://slack.com.evil.com/x",
            "http://files.slack.com/x",
            "https://files.slack.com@evil.com/x",
            "https://files.slack.com:x@evil.com/x",
            "https://user:pw@files.slack.com/x",
            "https://files.slack.com:8443/x",
            "https://files.slack.com./x",
            "https://1.2.3.4/x",
            "https://[::1]/x",
            "https://drive.google.com/file/d/1/view",
            "ftp://files.slack.com/x",
        ] {
            assert!(!may_go(url, SLACK_API), "{url} must not get the token");
        }
    }

    #[test]
    fn the_token_goes_to_the_configured_api_origin() {
        let api = "http://127.0.0.1:8080/api";
        assert!(may_go("http://127.0.0.1:8080/files/F1/a.txt", api));
        assert!(!may_go("http://127.0.0.1:8081/files/F1/a.txt", api));
        assert!(!may_go("https://127.0.0.1:8080/files/F1/a.txt", api));
        assert!(!may_go("http://localhost:8080/files/F1/a.txt", api));
        assert!(!may_go("http://u@127.0.0.1:8080/files/F1/a.txt", api));
        // A proxy in front of Slack does not open slack.com's look-alikes.
        assert!(!may_go(
            "https://files.slack.com.evil.com/x",
            "https://proxy.example/api"
        ));
    }

    /// A local server answering `/file` with `answer`; counts all requests and those
    /// that carried a token.
    async fn server(
        answer: impl Fn() -> Response + Clone + Send + Sync + 'static,
    ) -> (Url, Arc<AtomicUsize>, Arc<AtomicUsize>) {
        let (all, with_token) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (a, t) = (Arc::clone(&all), Arc::clone(&with_token));
        let app = Router::new().route(
            "/file",
            get(move |headers: HeaderMap| async move {
                a.fetch_add(1, Ordering::SeqCst);
                if headers.contains_key(header::AUTHORIZATION) {
                    t.fetch_add(1, Ordering::SeqCst);
                }
                answer()
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let url = Url::parse(&format!("http://{addr}/file")).unwrap();
        (url, all, with_token)
    }

    fn files(api: &Url) -> Files {
        Files {
            http: client(api.as_str()).unwrap(),
            token: "xoxb-secret".into(),
            api: Some(api.clone()),
            inbox: std::env::temp_dir(),
            max_bytes: 1024,
        }
    }

    fn ok() -> Response {
        (StatusCode::OK, "bytes").into_response()
    }

    #[tokio::test]
    async fn a_file_elsewhere_is_not_fetched_and_the_model_is_told_why() {
        let (elsewhere, all, _) = server(ok).await;
        let (api, _, _) = server(ok).await;
        let got = files(&api).fetch(elsewhere.as_str(), 1024).await;
        assert_eq!(got, Err(FetchError::Refused(OUTSIDE.into())));
        assert_eq!(all.load(Ordering::SeqCst), 0, "no request left");

        let got = files(&api).fetch(api.as_str(), 1024).await;
        assert_eq!(
            got,
            Ok(b"bytes".to_vec()),
            "the api_url's origin is fetched"
        );
    }

    #[tokio::test]
    async fn a_redirect_away_from_slack_is_not_followed() {
        let (elsewhere, all, _) = server(ok).await;
        // The api_url's own server sends the client elsewhere.
        let to = elsewhere.to_string();
        let (api, _, with_token) =
            server(move || (StatusCode::FOUND, [(header::LOCATION, to.clone())]).into_response())
                .await;
        let got = files(&api).fetch(api.as_str(), 1024).await;
        assert!(matches!(got, Err(FetchError::Failed(_))), "{got:?}");
        assert_eq!(with_token.load(Ordering::SeqCst), 1, "Slack got the token");
        assert_eq!(
            all.load(Ordering::SeqCst),
            0,
            "the redirect was not followed"
        );
    }
}
