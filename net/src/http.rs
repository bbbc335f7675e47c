//! The one place an HTTP client is started: every client of the process — the model
//! providers, the chat platforms' REST APIs, Slack's file downloads, the web tools,
//! `doctor`'s probes — begins from `client()` and adds only its own limits (an overall
//! timeout, a redirect policy, a resolver).

use std::time::Duration;

/// What Pincer says it is.
pub const USER_AGENT: &str = concat!("pincer/", env!("CARGO_PKG_VERSION"));

/// How long connecting may take, for every client.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A client builder with Pincer's settings: rustls with Mozilla's roots parsed once for
/// the whole process (`tls::webpki`, what reqwest's `rustls-tls` trusts), the user
/// agent, a 10 s connect timeout and TCP keep-alive. Proxies are reqwest's own: taken
/// from `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` in the environment, unless the caller
/// turns them off (web_fetch does: a proxy would resolve names past its guard).
pub fn client() -> reqwest::ClientBuilder {
    let mut builder = reqwest::Client::builder().use_rustls_tls();
    if let Some(tls) = crate::tls::webpki() {
        builder = builder.use_preconfigured_tls(tls);
    }
    builder
        .user_agent(USER_AGENT)
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_keepalive(Duration::from_secs(30))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_factory_builds_a_client() {
        assert!(client().build().is_ok());
        assert!(USER_AGENT.starts_with("pincer/"));
    }
}
