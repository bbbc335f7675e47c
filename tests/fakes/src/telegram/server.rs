//! The router. An API request is recorded, then checked in Telegram's order — token (401),
//! method (404), a scripted fault — and only then handed to its method. Also the file
//! download route, the `/_fake/*` control routes and a JSON 404 for anything else.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde_json::json;

use super::TOKEN;
use super::control;
use super::fault::{Refusal, respond};
use super::listener;
use super::methods;
use super::params;
use super::record::Call;
use super::state::Shared;

/// Telegram takes uploads up to 50 MB (axum's default limit is 2 MB); a little more is
/// read so an upload just over the limit gets the method's own 413, and a body past
/// this gets the same 413.
const MAX_BODY: usize = 52 * 1024 * 1024;

/// What every handler gets.
#[derive(Clone)]
pub(crate) struct App {
    pub shared: Arc<Shared>,
    /// For `POST /_fake/outage`.
    pub listener: listener::Control,
}

/// Every route of the fake.
pub(crate) fn app(state: App) -> Router {
    Router::new()
        .route("/_fake/inject", post(control::inject))
        .route("/_fake/sent", get(control::sent))
        .route("/_fake/calls", get(control::calls))
        .route("/_fake/files", get(control::files))
        .route("/_fake/reactions", get(control::reactions))
        .route("/_fake/updates", get(control::updates))
        .route("/_fake/fail", post(control::fail))
        .route("/_fake/reject_html", post(control::reject_html))
        .route("/_fake/outage", post(control::outage))
        .route("/_fake/stall", post(control::stall))
        .route("/file/{bot}/{*path}", get(file))
        .route("/{bot}/{method}", any(api))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
}

fn token_ok(bot: &str) -> bool {
    bot.strip_prefix("bot") == Some(TOKEN)
}

async fn api(
    State(app): State<App>,
    Path((bot, method)): Path<(String, String)>,
    request: Request,
) -> Response {
    let known = methods::canonical(&method);
    let name = known.map_or_else(|| method.clone(), str::to_string);
    let parsed = params::read(request).await;
    let recorded = match &parsed {
        Ok(params) => params.value.clone(),
        Err(unreadable) => json!({"unreadable_body": unreadable.why}),
    };
    let call = Call {
        method: name,
        params: recorded,
        at: Instant::now(),
    };
    app.shared.update(|inner| inner.calls.push(call));

    if !token_ok(&bot) {
        return Refusal::new(401, "Unauthorized").into_response();
    }
    let Some(method) = known else {
        return Refusal::new(404, "Not Found: method not found").into_response();
    };
    let params = match parsed {
        Ok(params) => params,
        Err(unreadable) if unreadable.too_large => {
            return Refusal::too_large().into_response();
        }
        Err(unreadable) => return Refusal::bad_request(&unreadable.why).into_response(),
    };
    match app.shared.update(|inner| inner.take_fault(method)) {
        Some(super::Fault::Hang) => std::future::pending::<()>().await,
        Some(super::Fault::Pass) | None => {}
        Some(fault) => return fault.refusal().into_response(),
    }
    respond(methods::call(method, params, &app.shared).await)
}

async fn file(State(app): State<App>, Path((bot, path)): Path<(String, String)>) -> Response {
    if !token_ok(&bot) {
        return Refusal::new(401, "Unauthorized").into_response();
    }
    methods::download(&app.shared, &path)
}

async fn not_found() -> Response {
    Refusal::new(404, "Not Found").into_response()
}
