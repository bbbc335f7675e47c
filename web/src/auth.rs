//! Who may use the panel. The login link (`/login?token=…`, printed by `pincer web
//! url`) checks `web.token` and sets an HttpOnly, SameSite=Strict session cookie; each
//! session has its own CSRF token, which every state-changing request must carry (a
//! form's `csrf` field or an `x-csrf-token` header). A program may instead send the
//! token as `Authorization: Bearer …`, which no browser sends by itself, so it needs no
//! CSRF token. Sessions live in memory: a restart logs everyone out.
//!
//! Every response gets the security headers: a CSP without inline scripts, no framing,
//! no sniffing, no referrer, no caching.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use secrecy::{ExposeSecret, SecretString};
use subtle::ConstantTimeEq;

use super::WebState;

/// The session cookie's name.
pub(crate) const COOKIE: &str = "pincer_session";
/// How long a login lasts.
const SESSION_LIFE: Duration = Duration::from_secs(7 * 24 * 3600);
/// Logins kept at once; the oldest goes first.
const MAX_SESSIONS: usize = 32;
/// The largest form an action takes (a job's prompt is the biggest field).
pub(crate) const MAX_FORM: usize = 64 * 1024;
/// How long a form's body may take to arrive.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The logged-in browser a request comes from, for pages that render forms.
#[derive(Clone)]
pub(crate) struct Login {
    /// Put in every form as `csrf`.
    pub csrf: String,
}

struct Session {
    csrf: String,
    created: Instant,
}

/// The panel's logins.
#[derive(Default)]
pub struct Sessions(Mutex<HashMap<String, Session>>);

impl Sessions {
    /// A new login: its cookie value and CSRF token.
    fn open(&self) -> Option<(String, String)> {
        let (id, csrf) = (random()?, random()?);
        let mut map = self.0.lock().ok()?;
        map.retain(|_, s| s.created.elapsed() < SESSION_LIFE);
        while map.len() >= MAX_SESSIONS {
            let oldest = map
                .iter()
                .min_by_key(|(_, s)| s.created)
                .map(|(k, _)| k.clone())?;
            map.remove(&oldest);
        }
        map.insert(
            id.clone(),
            Session {
                csrf: csrf.clone(),
                created: Instant::now(),
            },
        );
        Some((id, csrf))
    }

    /// The CSRF token of a live session.
    fn csrf(&self, id: &str) -> Option<String> {
        let map = self.0.lock().ok()?;
        let session = map.get(id)?;
        (session.created.elapsed() < SESSION_LIFE).then(|| session.csrf.clone())
    }

    fn close(&self, id: &str) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(id);
        }
    }
}

/// 32 random bytes as hex.
pub(crate) fn random() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

/// Whether `headers` carry `token` as a bearer token.
pub(crate) fn bearer(headers: &HeaderMap, token: &SecretString) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| same(given.trim(), token.expose_secret()))
}

#[derive(serde::Deserialize)]
pub(crate) struct LoginQuery {
    token: Option<String>,
}

/// `GET /login?token=…`: set the session cookie, then go to the overview by a page of
/// our own (a redirect would keep the link's cross-site origin, and a SameSite=Strict
/// cookie is not sent on it).
pub(crate) async fn login(
    State(state): State<Arc<WebState>>,
    Query(q): Query<LoginQuery>,
) -> Response {
    let valid = q
        .token
        .as_deref()
        .is_some_and(|t| same(t, state.token.expose_secret()));
    if !valid {
        return (
            StatusCode::UNAUTHORIZED,
            Html(super::layout::bare(
                "Not logged in",
                "This login link is not valid (the token was rotated, or it was copied wrong). Run `pincer web url` on the machine Pincer runs on for the current link.",
            )),
        )
            .into_response();
    }
    let Some((id, _)) = state.sessions.open() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let set = format!(
        "{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        SESSION_LIFE.as_secs()
    );
    let mut response = Html(super::layout::forward("/")).into_response();
    if let Ok(value) = HeaderValue::from_str(&set) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// `POST /logout`: end this browser's session.
pub(crate) async fn logout(State(state): State<Arc<WebState>>, headers: HeaderMap) -> Response {
    if let Some(id) = cookie(&headers) {
        state.sessions.close(id);
    }
    let mut response = Html(super::layout::bare(
        "Logged out",
        "You are logged out. Open the link from `pincer web url` to log in again.",
    ))
    .into_response();
    let clear = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    if let Ok(value) = HeaderValue::from_str(&clear) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// Let through a logged-in browser (checking the CSRF token of anything but a GET) or
/// a program with the bearer token; 401 otherwise, 403 for a missing CSRF token.
pub(crate) async fn require_login(
    State(state): State<Arc<WebState>>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    if bearer(headers, &state.token) {
        let mut request = request;
        request.extensions_mut().insert(Login {
            csrf: String::new(),
        });
        return next.run(request).await;
    }
    let Some(csrf) = cookie(headers).and_then(|id| state.sessions.csrf(id)) else {
        return (
            StatusCode::UNAUTHORIZED,
            Html(super::layout::bare(
                "Log in",
                "Open the login link that `pincer web url` prints on the machine Pincer runs on.",
            )),
        )
            .into_response();
    };
    let (parts, body) = request.into_parts();
    let body = if parts.method == Method::GET || parts.method == Method::HEAD {
        body
    } else {
        let read = tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, MAX_FORM));
        let bytes = match read.await {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(_)) => {
                return (StatusCode::PAYLOAD_TOO_LARGE, "request too large").into_response();
            }
            Err(_) => return (StatusCode::REQUEST_TIMEOUT, "request too slow").into_response(),
        };
        let given = parts
            .headers
            .get("x-csrf-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
            .or_else(|| {
                form_urlencoded::parse(&bytes)
                    .find(|(k, _)| k == "csrf")
                    .map(|(_, v)| v.into_owned())
            });
        if !given.is_some_and(|g| same(&g, &csrf)) {
            return (
                StatusCode::FORBIDDEN,
                Html(super::layout::bare(
                    "Refused",
                    "This request did not carry the page's CSRF token, so it may not come from the panel. Reload the page and try again.",
                )),
            )
                .into_response();
        }
        Body::from(bytes)
    };
    let mut request = Request::from_parts(parts, body);
    request.extensions_mut().insert(Login { csrf });
    next.run(request).await
}

/// The `Host` names a loopback panel answers to; `None` (any) for a panel listening on
/// the network, which is reached by whatever name its address has.
pub(crate) fn hosts(listen: &str) -> Option<Vec<String>> {
    let addr: std::net::SocketAddr = listen.parse().ok()?;
    if !addr.ip().is_loopback() {
        return None;
    }
    let port = addr.port();
    let mut hosts = vec![
        addr.to_string(),
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ];
    if port == 80 {
        let bare: Vec<String> = hosts
            .iter()
            .filter_map(|h| h.strip_suffix(":80").map(str::to_string))
            .collect();
        hosts.extend(bare);
    }
    Some(hosts)
}

/// Refuse a request whose `Host` is not the panel's own: a web page whose name was
/// made to resolve to 127.0.0.1 (DNS rebinding) then reads nothing, not even
/// `/healthz` or `/metrics`.
pub(crate) async fn own_host(
    State(state): State<Arc<WebState>>,
    request: Request,
    next: Next,
) -> Response {
    // No Host at all (HTTP/1.0) is not the panel's own either.
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if let Some(allowed) = hosts(&state.config.web.listen)
        && !allowed.iter().any(|a| a.eq_ignore_ascii_case(host))
    {
        return (
            StatusCode::MISDIRECTED_REQUEST,
            format!("This panel answers to {} only.", allowed.join(", ")),
        )
            .into_response();
    }
    next.run(request).await
}

/// The headers every response carries.
pub(crate) async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let set = |headers: &mut HeaderMap, name: &'static str, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(
        headers,
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    );
    set(headers, "x-frame-options", "DENY");
    set(headers, "x-content-type-options", "nosniff");
    set(headers, "referrer-policy", "no-referrer");
    if !headers.contains_key(header::CACHE_CONTROL) {
        set(headers, "cache-control", "no-store");
    }
    response
}
