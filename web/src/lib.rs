//! # pincer-web
//!
//! The control panel in the browser, `/healthz` and `/metrics`, served by `pincer run`
//! when `[web] enabled`. Pages are rendered on the server (maud: HTML compiled from
//! Rust, escaped by default); one small static script streams the chat. Every page
//! needs the login cookie that the link from `pincer web url` sets (or the token as a
//! bearer), every state-changing request a CSRF token; `/healthz` is open and says
//! nothing private; `/metrics` takes an optional bearer token of its own.
//!
//! It never talks to a model or a tool itself: the chat goes through the bus as the
//! owner's local conversation (`web:dm:owner`), actions call the same store and
//! scheduler functions as the CLI. It sits on `pincer-core` and knows no other surface.
//!
//! # Layout
//! - `auth`     — login link, session cookie, CSRF, security headers
//! - `layout`   — the page shell and navigation, the stylesheet and script
//! - `overview` — `/`: health, uptime, today's spend, recent errors; `/healthz`
//! - `conversations` — sessions by channel, a transcript
//! - `access`   — pairing codes, approved senders, owners, spend per sender
//! - `cron`     — scheduled jobs and their actions
//! - `memory`   — MEMORY.md, typed files, the dream history, restore
//! - `usage`    — tokens and cost per day and model, as SVG
//! - `chat`     — `/chat` and `/api/chat` (AI SDK v6 UI message stream over SSE): one
//!   response per request, carrying the answer to its message
//! - `request`  — what `/api/chat` reads of a `useChat` request, and what it refuses
//! - `relay`    — which open response an outbound message of the web chat goes to
//! - `wire`     — outbound messages as UI message chunks, always well-formed
//! - `metrics`  — `/metrics`
//! - `token`    — making and storing `web.token`
//! - `pool`     — the open connections: per-address and total limits that close idle
//!   ones to make room rather than refuse the owner
//! - `peer`     — whether a connection comes from a sandboxed command (refused: the
//!   panel is the owner's, never the model's)

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod access;
mod auth;
mod chat;
mod conversations;
mod cron;
mod layout;
mod memory;
mod metrics;
mod overview;
mod peer;
mod pool;
mod relay;
mod request;
pub mod token;
mod usage;
mod wire;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::routing::{get, post};
use pincer_channels::{Inbound, OutboundMessage, Registry};
use pincer_config::Config;
use secrecy::SecretString;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

pub use auth::Sessions;
pub use chat::CHANNEL;
pub use overview::ErrorLog;
pub use relay::WebChat;

use pincer_core::agent::Agent;
use pincer_core::cron::Scheduler;
use pincer_core::home::Home;

/// What the pages read and the actions change: the running gateway's parts.
pub struct WebState {
    pub home: Home,
    pub config: Arc<Config>,
    pub agent: Arc<Agent>,
    /// The chat channels, for their live health.
    pub registry: Arc<Registry>,
    /// Where the web chat's messages go, like any channel's.
    pub inbound: mpsc::Sender<Inbound>,
    /// Runs a job now from the Scheduled tasks page.
    pub scheduler: Option<Arc<Scheduler>>,
    /// Wakes the scheduler after a job changed.
    pub wake: Arc<Notify>,
    /// The web chat's replies, handed over by the outbound tee.
    pub chat: Arc<WebChat>,
    /// `web.token`: the login link's token, also accepted as a bearer token.
    pub token: SecretString,
    /// `web.metrics_token`: when set, `/metrics` needs it as a bearer token.
    pub metrics_token: Option<SecretString>,
    pub sessions: Sessions,
    pub started: Instant,
}

/// Every route. Pages and actions need a login; `/healthz` and `/metrics` do not (the
/// latter may need its own token).
pub fn app(state: Arc<WebState>) -> Router {
    let private = Router::new()
        .route("/", get(overview::page))
        .route("/conversations", get(conversations::list))
        .route("/conversations/{id}", get(conversations::transcript))
        .route("/media/{*path}", get(conversations::media))
        .route("/access", get(access::page))
        .route("/access/approve", post(access::approve))
        .route("/access/deny", post(access::deny))
        .route("/access/revoke", post(access::revoke))
        .route("/cron", get(cron::page))
        .route("/cron/add", post(cron::add))
        .route("/cron/run", post(cron::run))
        .route("/cron/enable", post(cron::enable))
        .route("/cron/disable", post(cron::disable))
        .route("/cron/remove", post(cron::remove))
        .route("/memory", get(memory::page))
        .route("/memory/restore", post(memory::restore))
        .route("/usage", get(usage::page))
        .route("/chat", get(chat::page))
        .route("/api/chat", post(chat::stream))
        .route("/api/chat/{id}/stream", get(chat::resume))
        .route("/logout", post(auth::logout))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            auth::require_login,
        ));
    Router::new()
        .merge(private)
        .route("/login", get(auth::login))
        .route("/healthz", get(overview::healthz))
        .route("/metrics", get(metrics::handler))
        .route("/assets/panel.css", get(layout::stylesheet))
        .route("/assets/panel.js", get(layout::script))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            auth::own_host,
        ))
        .layer(axum::middleware::from_fn(auth::security_headers))
        .with_state(state)
}

/// Whether the panel may listen on `listen` with `token`: a token, when there is one,
/// must be long enough to guess no sooner than never, and a non-loopback address needs
/// one.
pub fn check_listen(
    listen: &str,
    token: Option<&SecretString>,
) -> Result<SocketAddr, token::ListenError> {
    let addr: SocketAddr = listen
        .parse()
        .map_err(|_| token::ListenError::NotAnAddress(listen.to_string()))?;
    if let Some(token) = token {
        token::check(token)?;
    }
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(token::ListenError::OpenWithoutToken(listen.to_string()));
    }
    Ok(addr)
}

/// How long requests in flight may finish after a shutdown before they are cut.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(2);
/// How long a request's head may take to arrive.
const HEAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serve the panel on `listener` until `shutdown`. Each connection is a task of ours,
/// so at shutdown the ones still open (a chat stream, a request that never finishes
/// sending) are ended after `DRAIN`, and with them the last references to the core.
/// How many stay open, and which are closed to make room, is `pool`'s; a connection
/// from a sandboxed command (`peer`) is closed unanswered.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<WebState>,
    shutdown: CancellationToken,
) {
    let app = app(state);
    let mut connections = tokio::task::JoinSet::new();
    let mut pool = pool::Pool::default();
    let mut warned: Option<std::time::Instant> = None;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        // Out of file descriptors and the like: try again shortly, and
                        // say so once a minute, not a hundred times.
                        if warned.is_none_or(|at| at.elapsed().as_secs() >= 60) {
                            tracing::warn!("web panel: cannot accept a connection: {err}");
                            warned = Some(std::time::Instant::now());
                        }
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        continue;
                    }
                };
                if !pool.make_room(peer.ip()) {
                    // Closed unanswered: every open one is being answered.
                    drop(stream);
                    continue;
                }
                let activity = pool::Activity::default();
                let abort = connections.spawn(connection(stream, peer, app.clone(), activity.clone()));
                pool.insert(peer.ip(), activity, abort);
            }
            Some(ended) = connections.join_next_with_id(), if !connections.is_empty() => {
                let id = match ended {
                    Ok((id, ())) => id,
                    Err(err) => err.id(),
                };
                pool.remove(id);
            }
        }
    }
    drop(listener);
    let drain = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(DRAIN, drain).await.is_err() {
        connections.shutdown().await;
    }
}

/// Serve one connection, unless a sandboxed command opened it.
async fn connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    app: Router,
    activity: pool::Activity,
) {
    if let Ok(local) = stream.local_addr() {
        let holder = tokio::task::spawn_blocking(move || peer::sandboxed_holder(peer, local));
        if let Ok(Some(pid)) = holder.await {
            tracing::warn!(
                pid,
                "web panel: refused a connection from a sandboxed command (exec, a hook or an MCP server)"
            );
            return;
        }
    }
    let service = hyper::service::service_fn(
        move |request: axum::extract::Request<hyper::body::Incoming>| {
            let mut app = app.clone();
            let activity = activity.clone();
            let request = request.map(|body| activity.receive(axum::body::Body::new(body)));
            async move {
                let response = tower_service::Service::call(&mut app, request).await?;
                Ok::<_, std::convert::Infallible>(response.map(|body| activity.answer(body)))
            }
        },
    );
    let io = hyper_util::rt::TokioIo::new(stream);
    // A connection that breaks off is the browser's business.
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .serve_connection(io, service)
        .await;
}

/// Hand the web chat's outbound messages to the panel and everything else to the
/// channels: the gateway's one outbound bus feeds both.
pub async fn tee(
    mut outbound: mpsc::Receiver<OutboundMessage>,
    chat: Arc<WebChat>,
    channels: mpsc::Sender<OutboundMessage>,
) {
    while let Some(message) = outbound.recv().await {
        if message.target.channel == CHANNEL {
            chat.deliver(message);
        } else if channels.send(message).await.is_err() {
            return;
        }
    }
}
