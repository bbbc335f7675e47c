//! The router: the REST API under `/api/v10/`, attachment downloads, the gateway's
//! WebSocket at `/gateway`, and a JSON 404 for anything else.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{any, get};

use super::fault::error;
use super::state::Shared;
use super::{gateway, rest};

/// Discord takes uploads up to 25 MB for bots (axum's default limit is 2 MB).
const MAX_BODY: usize = 25 * 1024 * 1024;

/// What every handler gets.
#[derive(Clone)]
pub(crate) struct App {
    pub shared: Arc<Shared>,
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
}

impl App {
    /// `ws://127.0.0.1:PORT/gateway`, what `GET /gateway` and READY hand out.
    pub(crate) fn gateway_url(&self) -> String {
        format!("{}/gateway", self.base_url.replacen("http://", "ws://", 1))
    }
}

pub(crate) fn app(state: App) -> Router {
    Router::new()
        .route("/gateway", get(gateway::upgrade))
        .route("/api/v10/{*path}", any(rest::api))
        .route("/attachments/{*path}", get(rest::download))
        .fallback(|| async { error(404, "404: Not Found", 0) })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
}
