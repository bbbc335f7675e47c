//! The accept loop. Unlike `axum::serve`, it owns every connection's task, so an outage
//! can stop listening *and* drop open connections (a held long poll included), then
//! listen again on the same address. Dropping the fake ends it the same way.
//!
//! An outage asked for during an outage starts when the current one ends.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;

/// How long to keep trying to listen again after an outage (the port may linger).
const REBIND_FOR: Duration = Duration::from_secs(5);

pub(crate) enum Command {
    /// Go down for `dur`; `down` is told once nothing listens and no connection is open.
    Outage {
        dur: Duration,
        down: oneshot::Sender<()>,
    },
}

/// The handle side: ask for outages, learn when serving again.
#[derive(Clone)]
pub(crate) struct Control {
    commands: mpsc::UnboundedSender<Command>,
    /// `true` while listening.
    up: watch::Receiver<bool>,
}

/// The loop side of `Control`.
pub(crate) struct Commands {
    commands: mpsc::UnboundedReceiver<Command>,
    up: watch::Sender<bool>,
}

pub(crate) fn channel() -> (Control, Commands) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (up_tx, up_rx) = watch::channel(true);
    let control = Control {
        commands: tx,
        up: up_rx,
    };
    let commands = Commands {
        commands: rx,
        up: up_tx,
    };
    (control, commands)
}

impl Control {
    /// Starts an outage of `dur`; returns once the fake is down.
    pub(crate) async fn outage(&self, dur: Duration) {
        let (down, is_down) = oneshot::channel();
        if self.commands.send(Command::Outage { dur, down }).is_ok() {
            // An error means the loop has ended: the fake is down for good.
            let _ = is_down.await;
        }
    }

    /// Returns once the fake listens (at once if it does).
    pub(crate) async fn wait_until_up(&self) {
        let mut up = self.up.clone();
        // An error means the loop has ended; there is nothing more to wait for.
        let _ = up.wait_for(|up| *up).await;
    }
}

/// Serves `app` on `listener` until `shutdown` becomes `true` (or its sender goes).
pub(crate) fn spawn(
    listener: TcpListener,
    app: Router,
    mut commands: Commands,
    mut shutdown: watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        let Ok(addr) = listener.local_addr() else {
            return;
        };
        let mut listener = Some(listener);
        while let Some(current) = listener.take() {
            let command = serve(current, &app, &mut commands, &mut shutdown).await;
            commands.up.send_replace(false);
            let Some(Command::Outage { dur, down }) = command else {
                return;
            };
            // The asker may have stopped waiting; the outage goes on regardless.
            let _ = down.send(());
            tokio::select! {
                () = tokio::time::sleep(dur) => {}
                () = stopped(&mut shutdown) => return,
            }
            listener = rebind(addr).await;
            if listener.is_some() {
                commands.up.send_replace(true);
            }
        }
    });
}

/// Accepts until a command or shutdown; then drops the listener and every connection.
async fn serve(
    listener: TcpListener,
    app: &Router,
    commands: &mut Commands,
    shutdown: &mut watch::Receiver<bool>,
) -> Option<Command> {
    let mut connections = JoinSet::new();
    let command = loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(connection(stream, app.clone()));
                }
                Err(e) => {
                    eprintln!("pincer-fakes: the fake Telegram could not accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            command = commands.commands.recv() => break command,
            () = stopped(shutdown) => break None,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    };
    drop(listener);
    connections.shutdown().await;
    command
}

/// Resolves once the fake is dropped.
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    // An error means the handle is gone, which is also a reason to stop.
    let _ = shutdown.wait_for(|stop| *stop).await;
}

async fn connection(stream: TcpStream, app: Router) {
    let service = TowerToHyperService::new(app);
    // An error is a client that went away mid-request; nothing to clean up.
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn rebind(addr: SocketAddr) -> Option<TcpListener> {
    let deadline = tokio::time::Instant::now() + REBIND_FOR;
    loop {
        match TcpListener::bind(addr).await {
            Ok(listener) => return Some(listener),
            Err(e) if tokio::time::Instant::now() >= deadline => {
                eprintln!("pincer-fakes: the fake Telegram could not listen on {addr} again: {e}");
                return None;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}
