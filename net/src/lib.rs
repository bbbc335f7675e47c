//! # pincer-net
//!
//! How Pincer reaches other machines, one way for every client: the chat platforms'
//! adapters, the model providers, MCP servers over HTTP, the web tools and `doctor`'s
//! probes. It knows nothing of what the clients say; it only decides how they connect
//! and how long they wait after a failure.
//!
//! # Layout
//! - `tls`     — the rustls client settings, each kind of roots parsed once per process
//! - `http`    — `http::client()`: a reqwest builder with Pincer's TLS roots, user agent,
//!   connect timeout and proxy rules, which each client finishes with its own limits
//! - `backoff` — `Backoff`: the doubling wait with a ceiling that channels, MCP servers
//!   and the model chain all retry with (the other side's `retry_after` wins; jitter
//!   where many may fail together)

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod backoff;
pub mod http;
pub mod tls;

pub use backoff::Backoff;
