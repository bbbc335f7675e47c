//! `GET /metrics`: the process's metrics (`pincer_core::metrics`) in the Prometheus text
//! format, with what is read at scrape time — each channel's health and when it last
//! heard from its platform, the buses' depths,
//! the resident memory. Open unless `web.metrics_token` is set; then only with it as a
//! bearer token (the panel's login does not open it, nor does it open the panel).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pincer_channels::Health;

use super::WebState;
use pincer_core::metrics::{CONTENT_TYPE, ChannelNow, Scrape};

pub(crate) async fn handler(State(state): State<Arc<WebState>>, headers: HeaderMap) -> Response {
    if let Some(token) = &state.metrics_token
        && !super::auth::bearer(&headers, token)
    {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "/metrics needs web.metrics_token from .security.yml: send it as `Authorization: Bearer <token>` (in Prometheus: `authorization: {credentials: <token>}` in the scrape config).\n",
        )
            .into_response();
    }
    let depth = |bus: usize, free: usize| bus.saturating_sub(free);
    let outbound = &state.agent.outbound();
    let scrape = Scrape {
        channels: state
            .registry
            .handles()
            .map(|h| ChannelNow {
                name: h.name(),
                up: matches!(h.health(), Health::Up),
                last_event_ms: h.liveness().and_then(|l| l.last_event_ms),
            })
            .collect(),
        inbound_queue: depth(state.inbound.max_capacity(), state.inbound.capacity()),
        outbound_queue: depth(outbound.max_capacity(), outbound.capacity()),
    };
    match pincer_core::metrics::encode(&scrape) {
        Ok(text) => (
            [(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE))],
            text,
        )
            .into_response(),
        Err(err) => {
            tracing::error!("cannot encode the metrics: {err}");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the metrics could not be encoded; see the gateway's log\n",
            )
                .into_response()
        }
    }
}
