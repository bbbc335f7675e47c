//! The gateway's WebSocket, as Discord runs it: HELLO (op 10) on connect; IDENTIFY
//! (op 2) → READY with a new `session_id` and a `resume_gateway_url` pointing here;
//! HEARTBEAT (op 1) → ACK (op 11); dispatches (op 0) numbered by `s`; RESUME (op 6)
//! → every event after the given `s`, then RESUMED (a stale session gets op 9
//! INVALID_SESSION); a bad or revoked token is closed with 4004, and while
//! `refuse_intents(true)` every IDENTIFY with 4014. Events made while no
//! socket is open wait in the session and are replayed on resume; a new session
//! (re-identify) starts empty, as on Discord — except dispatches made before the
//! first session ever, which the first READY is followed by.
//!
//! A test ends the open socket with a kick: dropped without a close frame, or after
//! op 7 RECONNECT. During an outage new sockets are refused with 503. A stall makes the
//! open socket (or the next one, which then says no HELLO) go silent: it stays open,
//! reads what the client sends, and answers nothing — no ACK, no dispatch — until the
//! client closes it.

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};

use super::TOKEN;
use super::objects;
use super::server::App;
use super::state::{Inner, Kick, Session};

/// The heartbeat interval HELLO asks for.
pub(crate) const HEARTBEAT_MS: u64 = 2000;

pub(crate) async fn upgrade(State(app): State<App>, ws: WebSocketUpgrade) -> Response {
    if app.shared.read(|inner| inner.gateway.is_down()) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    ws.on_upgrade(move |socket| serve(app, socket))
}

/// Where one socket is in its session.
struct Place {
    session: String,
    /// Index of the next event to send.
    cursor: usize,
}

/// What the socket must do after a client frame.
enum Reply {
    Send(Vec<Value>),
    Close(u16, &'static str),
}

async fn serve(app: App, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    if stalls(&app) {
        silent(&mut stream).await;
        return;
    }
    let kick = app.shared.read(|inner| inner.gateway.kick);
    let mut changes = app.shared.changes();
    let mut place: Option<Place> = None;
    let hello = json!({"op": 10, "d": {"heartbeat_interval": HEARTBEAT_MS}});
    if sink.send(text(&hello)).await.is_err() {
        return;
    }
    let _live = Live::new(&app);
    loop {
        if stalls(&app) {
            silent(&mut stream).await;
            return;
        }
        // Send what the session has that this socket has not sent; obey kicks.
        let (frames, kicked, stale) = app.shared.read(|inner| pending(inner, &place, kick));
        if let Some(kind) = kicked {
            if kind == Kick::Reconnect {
                let _ = sink.send(text(&json!({"op": 7, "d": null}))).await;
            }
            return; // dropping the socket closes it without a close frame
        }
        if stale {
            return;
        }
        if let Some(place) = &mut place {
            place.cursor += frames.len();
        }
        for frame in frames {
            if sink.send(text(&frame)).await.is_err() {
                return;
            }
        }
        tokio::select! {
            frame = stream.next() => {
                let Some(Ok(frame)) = frame else { return };
                let Message::Text(payload) = frame else { continue };
                let Ok(payload) = serde_json::from_str::<Value>(payload.as_str()) else { continue };
                match app.shared.update(|inner| handle(inner, &app, &payload, &mut place)) {
                    Reply::Send(frames) => {
                        for frame in frames {
                            if sink.send(text(&frame)).await.is_err() {
                                return;
                            }
                        }
                    }
                    Reply::Close(code, reason) => {
                        let close = CloseFrame { code, reason: reason.into() };
                        let _ = sink.send(Message::Close(Some(close))).await;
                        return;
                    }
                }
            }
            changed = changes.changed() => if changed.is_err() { return },
        }
    }
}

/// Whether this socket is to go silent now (`stall`).
fn stalls(app: &App) -> bool {
    app.shared.read(|inner| inner.gateway.stall)
        && app.shared.update(|inner| inner.gateway.take_stall())
}

/// Reads and drops what the client sends until it closes the socket; sends nothing.
async fn silent(stream: &mut futures_util::stream::SplitStream<WebSocket>) {
    while let Some(Ok(_)) = stream.next().await {}
}

fn text(value: &Value) -> Message {
    Message::Text(value.to_string().into())
}

/// The events to send now, whether a kick ends the socket, and whether its session was
/// replaced by a newer one.
fn pending(inner: &Inner, place: &Option<Place>, kick: u64) -> (Vec<Value>, Option<Kick>, bool) {
    let gateway = &inner.gateway;
    if gateway.kick != kick {
        return (
            Vec::new(),
            Some(gateway.kick_kind.unwrap_or(Kick::Drop)),
            false,
        );
    }
    let Some(place) = place else {
        return (Vec::new(), None, false);
    };
    match &gateway.session {
        Some(session) if session.id == place.session => {
            let from = place.cursor.min(session.events.len());
            (session.events[from..].to_vec(), None, false)
        }
        _ => (Vec::new(), None, true),
    }
}

fn handle(inner: &mut Inner, app: &App, payload: &Value, place: &mut Option<Place>) -> Reply {
    let d = &payload["d"];
    match payload["op"].as_u64() {
        Some(1) => {
            inner.gateway.heartbeats += 1;
            Reply::Send(vec![json!({"op": 11})])
        }
        Some(2) => {
            if !token_ok(inner, d) {
                return Reply::Close(4004, "Authentication failed.");
            }
            if inner.gateway.refuse_intents {
                return Reply::Close(4014, "Disallowed intent(s).");
            }
            let gateway = &mut inner.gateway;
            gateway.identifies += 1;
            gateway.sessions += 1;
            let id = format!("fake-session-{}", gateway.sessions);
            let first = gateway.session.is_none();
            gateway.session = Some(Session {
                id: id.clone(),
                events: Vec::new(),
            });
            gateway.dispatch("READY", objects::ready(&id, &app.gateway_url()));
            if first {
                for (t, d) in std::mem::take(&mut gateway.backlog) {
                    gateway.dispatch(&t, d);
                }
            }
            *place = Some(Place {
                session: id,
                cursor: 0,
            });
            Reply::Send(Vec::new())
        }
        Some(6) => {
            if !token_ok(inner, d) {
                return Reply::Close(4004, "Authentication failed.");
            }
            let seq = d["seq"].as_u64().unwrap_or(0) as usize;
            let gateway = &mut inner.gateway;
            let valid = gateway.session.as_ref().filter(|s| {
                d["session_id"].as_str() == Some(s.id.as_str()) && seq <= s.events.len()
            });
            let Some(session) = valid else {
                return Reply::Send(vec![json!({"op": 9, "d": false})]);
            };
            let id = session.id.clone();
            gateway.resumes += 1;
            gateway.dispatch("RESUMED", json!({}));
            *place = Some(Place {
                session: id,
                cursor: seq,
            });
            Reply::Send(Vec::new())
        }
        _ => Reply::Send(Vec::new()),
    }
}

fn token_ok(inner: &Inner, d: &Value) -> bool {
    let token = d["token"].as_str().unwrap_or_default();
    !inner.revoked && token.strip_prefix("Bot ").unwrap_or(token) == TOKEN
}

/// Counts the socket as live for its lifetime once past HELLO.
struct Live(App);

impl Live {
    fn new(app: &App) -> Live {
        app.shared.update(|inner| inner.gateway.live += 1);
        Live(app.clone())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.shared.update(|inner| inner.gateway.live -= 1);
    }
}
