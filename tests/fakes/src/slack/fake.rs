//! `FakeSlack`, the handle a test holds. Starting it binds a port and spawns the server;
//! dropping it stops the server and closes its sockets.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::incoming::{self, Incoming};
use super::record::{Call, Delivery, Posted, Upload};
use super::server::{self, App};
use super::state::{Shared, ToSocket};
use super::{APP_TOKEN, BOT_TOKEN, BOT_USER, SIGNING_SECRET};

/// A scripted failure for the next call of one method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlackFault {
    /// 429 with `Retry-After: N` and `{"ok":false,"error":"ratelimited"}`.
    RateLimited { retry_after: u64 },
    /// 200 `{"ok":false,"error":code}`, e.g. `invalid_auth`, `channel_not_found`.
    Error(String),
    /// That 5xx status with a text body.
    ServerError(u16),
}

/// A fake Slack workspace with one bot (`UBOT`).
pub struct FakeSlack {
    addr: SocketAddr,
    pub(crate) shared: Arc<Shared>,
    stop: watch::Sender<bool>,
}

impl FakeSlack {
    /// Binds `127.0.0.1:0` and starts serving. Panics if no port can be bound.
    pub async fn start() -> FakeSlack {
        FakeSlack::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .expect("the fake Slack should bind 127.0.0.1:0")
    }

    pub async fn bind(addr: SocketAddr) -> io::Result<FakeSlack> {
        let tcp = TcpListener::bind(addr).await?;
        let addr = tcp.local_addr()?;
        let shared = Arc::new(Shared::new());
        let (stop, stopped) = watch::channel(false);
        let app = server::app(App {
            shared: Arc::clone(&shared),
            base: format!("http://{addr}"),
            stop: stopped.clone(),
        });
        let mut until_stopped = stopped;
        tokio::spawn(async move {
            let serve = axum::serve(tcp, app).with_graceful_shutdown(async move {
                // An error means the handle is gone, which is also a reason to stop.
                let _ = until_stopped.wait_for(|stop| *stop).await;
            });
            if let Err(e) = serve.await {
                eprintln!("pincer-fakes: the fake Slack stopped: {e}");
            }
        });
        Ok(FakeSlack { addr, shared, stop })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/api`, the adapter's `api_url`.
    pub fn api_url(&self) -> String {
        format!("{}/api", self.base())
    }

    pub(crate) fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn bot_token(&self) -> &'static str {
        BOT_TOKEN
    }

    pub fn app_token(&self) -> &'static str {
        APP_TOKEN
    }

    pub fn signing_secret(&self) -> &'static str {
        SIGNING_SECRET
    }

    /// Delivers `msg` over the socket (now, or when one connects); returns its ts.
    pub fn inject(&self, msg: Incoming) -> String {
        let base = self.base();
        self.shared
            .update(|inner| incoming::inject(inner, msg, &base))
    }

    /// A message that exists in `channel` (a thread's parent) but is not delivered.
    pub fn existing_message(&self, channel: &str, user: &str, text: &str) -> String {
        self.shared.update(|inner| {
            let ts = inner.ts();
            inner.messages.push(Posted {
                channel: channel.into(),
                ts: ts.clone(),
                text: text.into(),
                thread_ts: None,
                blocks: None,
                edits: 0,
                history: vec![text.into()],
                user: user.into(),
                ephemeral: false,
                at: std::time::Instant::now(),
            });
            ts
        })
    }

    /// `user` presses the button whose value ends with `:{choice}` on the newest
    /// message with buttons in `channel`; false if there is none.
    pub fn press(&self, channel: &str, user: &str, choice: &str) -> bool {
        let base = self.base();
        self.shared.update(|inner| {
            let Some(message) = inner
                .messages
                .iter()
                .rev()
                .find(|m| m.channel == channel && m.has_buttons())
                .cloned()
            else {
                return false;
            };
            let Some(button) = message
                .buttons()
                .find(|b| {
                    b["value"]
                        .as_str()
                        .is_some_and(|v| v.ends_with(&format!(":{choice}")))
                })
                .cloned()
            else {
                return false;
            };
            let payload = incoming::button_press(
                user,
                &message,
                &button["value"],
                &button["action_id"],
                &base,
            );
            inner.envelope("interactive", payload);
            true
        })
    }

    /// Every Web API call so far, oldest first (refused ones too; file downloads appear
    /// as method `download`).
    pub fn calls(&self) -> Vec<Call> {
        self.shared.read(|inner| inner.calls.clone())
    }

    pub fn calls_of(&self, method: &str) -> Vec<Call> {
        self.shared.read(|inner| {
            inner
                .calls
                .iter()
                .filter(|c| c.method == method)
                .cloned()
                .collect()
        })
    }

    pub async fn wait_for_calls(&self, method: &str, n: usize, timeout: Duration) -> Vec<Call> {
        self.shared
            .wait_until(timeout, |inner| {
                inner.calls.iter().filter(|c| c.method == method).count() >= n
            })
            .await;
        self.calls_of(method)
    }

    /// Every message, users' and the bot's, with edits applied, oldest first.
    pub fn messages(&self) -> Vec<Posted> {
        self.shared.read(|inner| inner.messages.clone())
    }

    /// The bot's messages (not ephemeral), oldest first.
    pub fn posted(&self) -> Vec<Posted> {
        self.messages()
            .into_iter()
            .filter(|m| m.user == BOT_USER && !m.ephemeral)
            .collect()
    }

    /// Ephemeral messages the bot showed, oldest first.
    pub fn ephemerals(&self) -> Vec<Posted> {
        self.messages()
            .into_iter()
            .filter(|m| m.ephemeral)
            .collect()
    }

    /// Waits until the bot showed `n` ephemeral messages; returns them.
    pub async fn wait_for_ephemerals(&self, n: usize) -> Vec<Posted> {
        self.shared
            .wait_until(Duration::from_secs(10), |inner| {
                inner.messages.iter().filter(|m| m.ephemeral).count() >= n
            })
            .await;
        self.ephemerals()
    }

    pub async fn wait_for_posted(&self, n: usize, timeout: Duration) -> Vec<Posted> {
        self.shared
            .wait_until(timeout, |inner| {
                inner
                    .messages
                    .iter()
                    .filter(|m| m.user == BOT_USER && !m.ephemeral)
                    .count()
                    >= n
            })
            .await;
        self.posted()
    }

    /// The first bot message in `channel` whose text now contains `needle`.
    pub async fn wait_for_text(
        &self,
        channel: &str,
        needle: &str,
        timeout: Duration,
    ) -> Option<Posted> {
        let matches =
            |m: &Posted| m.channel == channel && m.user == BOT_USER && m.text.contains(needle);
        self.shared
            .wait_until(timeout, |inner| inner.messages.iter().any(matches))
            .await;
        self.messages().into_iter().find(matches)
    }

    /// Every envelope sent over the socket and what became of it.
    pub fn deliveries(&self) -> Vec<Delivery> {
        self.shared.read(|inner| inner.deliveries.clone())
    }

    /// Waits until `n` envelopes are acknowledged.
    pub async fn wait_for_acks(&self, n: usize, timeout: Duration) -> Vec<Delivery> {
        self.shared
            .wait_until(timeout, |inner| {
                inner
                    .deliveries
                    .iter()
                    .filter(|d| d.acked_at.is_some())
                    .count()
                    >= n
            })
            .await;
        self.deliveries()
    }

    /// The IM the bot opened (`conversations.open`) with `user` (`U7`); `None` if it
    /// never did.
    pub fn opened_im(&self, user: &str) -> Option<String> {
        self.shared.read(|inner| inner.ims.get(user).cloned())
    }

    /// Every upload the bot began, oldest first, completed or not.
    pub fn uploads(&self) -> Vec<Upload> {
        self.shared.read(|inner| inner.uploads.clone())
    }

    /// The uploads `files.completeUploadExternal` shared, oldest first: each with its
    /// file name, bytes, channel, thread, title and initial comment.
    pub fn completed_uploads(&self) -> Vec<Upload> {
        self.uploads().into_iter().filter(|u| u.completed).collect()
    }

    /// Waits until at least `n` uploads are completed or `timeout` passes; returns the
    /// completed ones.
    pub async fn wait_for_uploads(&self, n: usize, timeout: Duration) -> Vec<Upload> {
        self.shared
            .wait_until(timeout, |inner| {
                inner.uploads.iter().filter(|u| u.completed).count() >= n
            })
            .await;
        self.completed_uploads()
    }

    /// `(channel, ts, name)` of every reaction added.
    pub fn reactions(&self) -> Vec<(String, String, String)> {
        self.shared.read(|inner| inner.reactions.clone())
    }

    /// The next call of `method` fails with `fault` (FIFO per method).
    pub fn fail_next(&self, method: &str, fault: SlackFault) {
        self.shared.update(|inner| {
            inner
                .faults
                .entry(method.to_string())
                .or_default()
                .push_back(fault)
        });
    }

    /// While on, every token is refused with `invalid_auth` (a revoked app).
    pub fn reject_tokens(&self, on: bool) {
        self.shared.update(|inner| inner.reject_tokens = on);
    }

    /// The display name users.info gives `user` (default `user U7`).
    pub fn set_name(&self, user: &str, name: &str) {
        self.shared
            .update(|inner| inner.names.insert(user.into(), name.into()));
    }

    /// How many socket connections were opened so far.
    pub fn connections(&self) -> u64 {
        self.shared.read(|inner| inner.connections)
    }

    /// Waits until a socket connection is open (at least `n` opened in all).
    pub async fn wait_for_connection(&self, n: u64, timeout: Duration) -> bool {
        self.shared
            .wait_until(timeout, |inner| {
                inner.live.is_some() && inner.connections >= n
            })
            .await
    }

    /// Sends `disconnect` (reason e.g. `refresh_requested`) on the open socket.
    pub fn ask_to_reconnect(&self, reason: &str) -> bool {
        self.to_socket(ToSocket::Disconnect(reason.into()))
    }

    /// Drops the open socket's TCP connection, with no close frame.
    pub fn drop_socket(&self) -> bool {
        self.to_socket(ToSocket::Drop)
    }

    /// The open socket (or, if none is open, the next one, which then says no `hello`)
    /// goes silent: it stays open but sends nothing — no envelope, no pong to the
    /// bot's pings — until the fake is dropped. Envelopes wait for the next connection,
    /// which is served as usual.
    pub fn stall(&self) {
        self.shared.update(|inner| {
            let told = inner
                .live
                .as_ref()
                .is_some_and(|(_, socket)| socket.send(ToSocket::Stall).is_ok());
            if !told {
                inner.stall_next = true;
            }
        });
    }

    /// How many socket connections went silent so far (`stall`).
    pub fn stalled(&self) -> u64 {
        self.shared.read(|inner| inner.stalled)
    }

    /// Drops the socket and refuses new ones (and `apps.connections.open`, with 503)
    /// for `outage`.
    pub fn outage(&self, outage: Duration) {
        self.shared
            .update(|inner| inner.down_until = Some(Instant::now() + outage));
        self.drop_socket();
    }

    fn to_socket(&self, command: ToSocket) -> bool {
        self.shared.update(|inner| match &inner.live {
            Some((_, socket)) => socket.send(command).is_ok(),
            None => false,
        })
    }

    /// The payloads of the envelopes sent so far, for checks on what the adapter saw.
    pub fn payloads(&self) -> Vec<Value> {
        self.deliveries().into_iter().map(|d| d.payload).collect()
    }
}

impl Drop for FakeSlack {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}
