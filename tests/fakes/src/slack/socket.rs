//! The Socket Mode WebSocket (`/socket?ticket=N`). On connect: `hello`, then every
//! envelope not yet acknowledged (see `Inner::send_pending`). A text frame with an
//! `envelope_id` from the client is an acknowledgement. The handle can make the fake
//! send `disconnect` (then it waits up to 10 s for the client to close, as Slack does)
//! or drop the connection without a close frame, or make it go silent (`stall`): it
//! stays open and neither sends (no envelope, no pong to the client's pings) nor reads
//! anything; envelopes wait for the next connection.

use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::sync::mpsc;

use super::server::App;
use super::state::ToSocket;

/// How long a `disconnect` waits for the client to close before the fake does.
const DISCONNECT_GRACE: Duration = Duration::from_secs(10);

pub(crate) async fn upgrade(State(app): State<App>, ws: WebSocketUpgrade) -> Response {
    if app.shared.read(|inner| inner.down()) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    ws.on_upgrade(move |socket| run(socket, app))
}

async fn run(mut socket: WebSocket, app: App) {
    let (tx, mut commands) = mpsc::unbounded_channel();
    let connection = app.shared.update(|inner| {
        inner.connections += 1;
        if inner.stall_next {
            inner.stall_next = false;
            inner.stalled += 1;
            return None;
        }
        inner.live = Some((inner.connections, tx));
        Some(inner.connections)
    });
    let Some(connection) = connection else {
        let _keep_open = socket;
        let _ = app.stop.clone().changed().await; // silent until the fake stops
        return;
    };
    let hello = json!({
        "type": "hello",
        "num_connections": 1,
        "debug_info": { "host": "fake-slack", "approximate_connection_time": 18060 },
        "connection_info": { "app_id": "AFAKE" },
    });
    if socket
        .send(Message::Text(hello.to_string().into()))
        .await
        .is_err()
    {
        return;
    }
    app.shared.update(|inner| inner.send_pending(connection));
    let mut stop = app.stop.clone();
    let mut closing_by: Option<tokio::time::Instant> = None;
    loop {
        let deadline = async {
            match closing_by {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            frame = socket.recv() => match frame {
                Some(Ok(Message::Text(text))) => {
                    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text.as_str())
                        && let Some(id) = value["envelope_id"].as_str()
                    {
                        app.shared.update(|inner| inner.acked(id));
                    }
                }
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                Some(Ok(_)) => {} // pings are answered by the library
            },
            command = commands.recv() => match command {
                Some(ToSocket::Frame(frame)) => {
                    if socket.send(Message::Text(frame.into())).await.is_err() {
                        break;
                    }
                }
                Some(ToSocket::Disconnect(reason)) => {
                    let frame = json!({
                        "type": "disconnect", "reason": reason,
                        "debug_info": { "host": "fake-slack" },
                    });
                    if socket.send(Message::Text(frame.to_string().into())).await.is_err() {
                        break;
                    }
                    // Nothing more goes out on a connection being retired.
                    app.shared.update(|inner| retire(inner, connection));
                    closing_by = Some(tokio::time::Instant::now() + DISCONNECT_GRACE);
                }
                Some(ToSocket::Drop) | None => {
                    app.shared.update(|inner| retire(inner, connection));
                    return; // dropping the socket closes TCP with no close frame
                }
                Some(ToSocket::Stall) => {
                    app.shared.update(|inner| {
                        retire(inner, connection);
                        inner.stalled += 1;
                    });
                    let _ = stop.changed().await; // silent until the fake stops
                    return;
                }
            },
            () = deadline => break,
            _ = stop.changed() => return,
        }
    }
    app.shared.update(|inner| retire(inner, connection));
    let _ = socket.send(Message::Close(None)).await; // the client may be gone already
}

fn retire(inner: &mut super::state::Inner, connection: u64) {
    if inner
        .live
        .as_ref()
        .is_some_and(|(live, _)| *live == connection)
    {
        inner.live = None;
    }
}
