//! `Proxy`: a TCP proxy on 127.0.0.1 in front of Synapse, so a test can cut or silence
//! the bot's connections while people keep talking to Synapse directly.
//!
//! - `disconnect(outage)`: every proxied connection is closed and the listening socket
//!   dropped, so connects are refused; after `outage` it listens on the same port again.
//! - `stall()`: every open connection, and every one accepted while the stall lasts,
//!   goes silent — bytes from the client are read and dropped, nothing comes back. The
//!   stall ends when the client closes one silent connection (it gave up on it): the
//!   other silent ones are closed too, and new connections are served as usual.
//!   `stalled()` counts the stalls that caught a connection.
//!
//! - `watch(text)`, then `seen(text)`: when the text first passed towards the bot (a sync
//!   delivering it) and from the bot (a request carrying it). The benches take Pincer's
//!   own share of a Matrix round trip from these, without Synapse's.
//!
//! It forwards bytes, nothing more: it does not read HTTP, so it cannot delay or drop
//! single requests, and TLS is not involved (Synapse listens on plain HTTP).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::AbortHandle;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Forward,
    Silent,
    Close,
}

/// The proxy's handle; dropping it stops listening and closes every connection.
pub struct Proxy {
    inner: Arc<Inner>,
}

struct Inner {
    /// The port clients are given; kept across outages.
    port: u16,
    /// Synapse's address.
    upstream: SocketAddr,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Each open connection's mode switch.
    conns: HashMap<u64, watch::Sender<Mode>>,
    next_id: u64,
    /// The accept loop, absent during an outage.
    accepting: Option<AbortHandle>,
    /// Which outage is the latest, so an earlier one's end does not listen too soon.
    outage: u64,
    /// A stall is on: new connections go silent.
    stalling: bool,
    /// The current stall has caught a connection (and was counted).
    counted: bool,
    stalled: usize,
    /// Texts watched for, with when each was first seen towards and from the bot.
    watched: Vec<Watch>,
}

struct Watch {
    text: Vec<u8>,
    to_bot: Option<Instant>,
    from_bot: Option<Instant>,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Proxy {
    /// Listen on a free loopback port and forward to `upstream` (Synapse's port).
    pub async fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the proxy");
        let port = listener.local_addr().expect("the proxy's address").port();
        let inner = Arc::new(Inner {
            port,
            upstream: SocketAddr::from(([127, 0, 0, 1], upstream)),
            state: Mutex::new(State::default()),
        });
        listen(&inner, listener);
        Proxy { inner }
    }

    /// `http://127.0.0.1:PORT`, what the bot is told the homeserver is.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.inner.port)
    }

    /// Close every connection and refuse new ones for `outage` (returns at once).
    pub fn disconnect(&self, outage: Duration) {
        let generation = {
            let mut state = self.inner.state();
            if let Some(accepting) = state.accepting.take() {
                accepting.abort();
            }
            for (_, conn) in state.conns.drain() {
                conn.send_replace(Mode::Close);
            }
            state.outage += 1;
            state.outage
        };
        let inner = Arc::clone(&self.inner);
        tokio::spawn(async move {
            tokio::time::sleep(outage).await;
            // The port was ours a moment ago; retry briefly should the kernel lag.
            for _ in 0..100 {
                if inner.state().outage != generation {
                    return; // a later outage owns the listening again
                }
                if let Ok(listener) = TcpListener::bind(("127.0.0.1", inner.port)).await {
                    listen(&inner, listener);
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
    }

    /// Silence the open connections and the next ones until the client closes one.
    pub fn stall(&self) {
        let mut state = self.inner.state();
        state.stalling = true;
        state.counted = !state.conns.is_empty();
        if state.counted {
            state.stalled += 1;
        }
        for conn in state.conns.values() {
            conn.send_replace(Mode::Silent);
        }
    }

    /// How many client connections are open through the proxy now.
    pub fn connections(&self) -> usize {
        self.inner.state().conns.len()
    }

    /// How many stalls caught a connection so far.
    pub fn stalled(&self) -> usize {
        self.inner.state().stalled
    }

    /// Note when `text` (at most 200 bytes) first passes either way from now on.
    pub fn watch(&self, text: &str) {
        assert!(text.len() <= TAIL, "a watched text is at most {TAIL} bytes");
        self.inner.state().watched.push(Watch {
            text: text.as_bytes().to_vec(),
            to_bot: None,
            from_bot: None,
        });
    }

    /// When the watched `text` first passed towards the bot and from it, and stop
    /// watching it.
    pub fn seen(&self, text: &str) -> (Option<Instant>, Option<Instant>) {
        let mut state = self.inner.state();
        let at = state.watched.iter().position(|w| w.text == text.as_bytes());
        at.map(|at| {
            let watch = state.watched.swap_remove(at);
            (watch.to_bot, watch.from_bot)
        })
        .unwrap_or_default()
    }
}

/// How many bytes of each direction are kept to find a watched text split across reads.
const TAIL: usize = 200;

/// The last bytes that passed one way, then this read's.
#[derive(Default)]
struct Passed {
    bytes: Vec<u8>,
}

impl Passed {
    /// Note the read `chunk` and mark the watched texts it completes (`to_bot`: which way).
    fn note(&mut self, inner: &Inner, chunk: &[u8], to_bot: bool) {
        let now = Instant::now();
        let mut state = inner.state();

        if state.watched.is_empty() {
            self.bytes.clear();
            return;
        }
        self.bytes.extend_from_slice(chunk);
        for watch in &mut state.watched {
            let slot = if to_bot {
                &mut watch.to_bot
            } else {
                &mut watch.from_bot
            };
            if slot.is_none()
                && self
                    .bytes
                    .windows(watch.text.len())
                    .any(|w| w == watch.text)
            {
                *slot = Some(now);
            }
        }
        let keep = self.bytes.len().saturating_sub(TAIL);
        self.bytes.drain(..keep);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let mut state = self.inner.state();
        state.outage += 1;
        if let Some(accepting) = state.accepting.take() {
            accepting.abort();
        }
        for (_, conn) in state.conns.drain() {
            conn.send_replace(Mode::Close);
        }
    }
}

fn listen(inner: &Arc<Inner>, listener: TcpListener) {
    let task = tokio::spawn(accept(Arc::clone(inner), listener));
    inner.state().accepting = Some(task.abort_handle());
}

async fn accept(inner: Arc<Inner>, listener: TcpListener) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let (id, mode) = {
            let mut state = inner.state();
            let first = if state.stalling {
                if !state.counted {
                    state.counted = true;
                    state.stalled += 1;
                }
                Mode::Silent
            } else {
                Mode::Forward
            };
            let (switch, mode) = watch::channel(first);
            state.next_id += 1;
            let id = state.next_id;
            state.conns.insert(id, switch);
            (id, mode)
        };
        tokio::spawn(serve(Arc::clone(&inner), id, client, mode));
    }
}

async fn serve(inner: Arc<Inner>, id: u64, mut client: TcpStream, mut mode: watch::Receiver<Mode>) {
    let gave_up = match TcpStream::connect(inner.upstream).await {
        Ok(mut upstream) => pump(&inner, &mut client, &mut upstream, &mut mode).await,
        Err(_) => false,
    };
    let mut state = inner.state();
    state.conns.remove(&id);
    if gave_up && state.stalling {
        // The client gave up on a silent connection: the stall is over.
        state.stalling = false;
        for conn in state.conns.values() {
            if *conn.borrow() == Mode::Silent {
                conn.send_replace(Mode::Close);
            }
        }
    }
}

/// Forward both ways while the mode says so; true when the client closed a connection
/// that was silent.
async fn pump(
    inner: &Inner,
    client: &mut TcpStream,
    upstream: &mut TcpStream,
    mode: &mut watch::Receiver<Mode>,
) -> bool {
    let (mut client_in, mut client_out) = client.split();
    let (mut up_in, mut up_out) = upstream.split();
    let mut from_client = vec![0u8; 16 * 1024];
    let mut from_up = vec![0u8; 16 * 1024];
    let (mut up, mut down) = (Passed::default(), Passed::default());
    loop {
        let now = *mode.borrow_and_update();
        if now == Mode::Close {
            return false;
        }
        let silent = now == Mode::Silent;
        tokio::select! {
            read = client_in.read(&mut from_client) => match read {
                Ok(0) | Err(_) => return silent,
                Ok(n) => {
                    if silent {
                        continue;
                    }
                    up.note(inner, &from_client[..n], false);
                    if up_out.write_all(&from_client[..n]).await.is_err() {
                        return false;
                    }
                }
            },
            read = up_in.read(&mut from_up), if !silent => match read {
                Ok(0) | Err(_) => return false,
                Ok(n) => {
                    down.note(inner, &from_up[..n], true);
                    if client_out.write_all(&from_up[..n]).await.is_err() {
                        return false;
                    }
                }
            },
            changed = mode.changed() => {
                if changed.is_err() {
                    return false;
                }
            }
        }
    }
}
