//! `FakeDiscord`, the handle a test holds. Starting it binds a port and spawns the
//! server; dropping it stops the server.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::watch;

use super::fault::Fault;
use super::incoming::{self, Incoming};
use super::objects;
use super::server::{self, App};
use super::state::{Answer, Call, Kick, SentFile, Shared, Stored};
use super::{BOT_ID, TOKEN};

/// A fake Discord (REST API and gateway) for one bot.
pub struct FakeDiscord {
    addr: SocketAddr,
    pub(crate) shared: Arc<Shared>,
    /// Set to `true` on drop: the server stops.
    shutdown: watch::Sender<bool>,
}

impl FakeDiscord {
    /// Binds `127.0.0.1:0` and starts serving. Panics if no port can be bound (a test
    /// cannot go on without its fake).
    pub async fn start() -> FakeDiscord {
        FakeDiscord::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .expect("the fake Discord should bind 127.0.0.1:0")
    }

    pub async fn bind(addr: SocketAddr) -> io::Result<FakeDiscord> {
        let tcp = TcpListener::bind(addr).await?;
        let addr = tcp.local_addr()?;
        let shared = Arc::new(Shared::new());
        let app = server::app(App {
            shared: Arc::clone(&shared),
            base_url: format!("http://{addr}"),
        });
        let (shutdown, mut stopped) = watch::channel(false);
        tokio::spawn(async move {
            let stop = async move {
                // Either a `true` or the handle gone: stop.
                let _ = stopped.wait_for(|stop| *stop).await;
            };
            // The fake serves until dropped; an accept error ends it early, and the
            // test then fails on its own timeouts.
            let _ = axum::serve(tcp, app).with_graceful_shutdown(stop).await;
        });
        Ok(FakeDiscord {
            addr,
            shared,
            shutdown,
        })
    }

    /// `http://127.0.0.1:PORT`, what `channels.discord.api_url` takes.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn token(&self) -> &str {
        TOKEN
    }

    pub fn bot_id(&self) -> u64 {
        BOT_ID
    }

    /// Queues `msg` as a MESSAGE_CREATE dispatch; returns its message id.
    pub fn inject(&self, msg: Incoming) -> u64 {
        let base = self.api_url();
        self.shared
            .update(|inner| incoming::inject(inner, &base, msg))
    }

    /// Test user `user` presses the button `custom_id` on message `message` of
    /// `channel` (an INTERACTION_CREATE dispatch); returns the interaction id, `None` if
    /// there is no such message.
    pub fn press(&self, channel: u64, message: u64, user: u64, custom_id: &str) -> Option<u64> {
        self.shared.update(|inner| {
            let json = inner
                .messages
                .iter()
                .find(|m| m.id == message && m.channel == channel)?
                .json
                .clone();
            let id = inner.snowflake();
            let d = objects::button_press(id, &json, objects::user_id(user), custom_id);
            inner.pressed.insert(id, (channel, message));
            inner.gateway.dispatch("INTERACTION_CREATE", d);
            Some(id)
        })
    }

    /// Every REST request so far, oldest first (refused ones too).
    pub fn calls(&self) -> Vec<Call> {
        self.shared.read(|inner| inner.calls.clone())
    }

    /// The calls of one route (`create_message`, `typing`, … see `Call::route`).
    pub fn calls_of(&self, route: &str) -> Vec<Call> {
        self.shared.read(|inner| {
            inner
                .calls
                .iter()
                .filter(|c| c.route == route)
                .cloned()
                .collect()
        })
    }

    /// Waits until `route` was called `n` times or `timeout` passes; returns its calls.
    pub async fn wait_for_calls(&self, route: &str, n: usize, timeout: Duration) -> Vec<Call> {
        self.shared
            .wait_until(timeout, |inner| {
                inner.calls.iter().filter(|c| c.route == route).count() >= n
            })
            .await;
        self.calls_of(route)
    }

    /// Every message, the users' and the bot's, with edits applied, oldest first.
    pub fn messages(&self) -> Vec<Stored> {
        self.shared.read(|inner| inner.messages.clone())
    }

    /// The bot's messages, oldest first.
    pub fn bot_messages(&self) -> Vec<Stored> {
        self.messages().into_iter().filter(|m| m.from_bot).collect()
    }

    /// Waits until a bot message in `channel` contains `needle`.
    pub async fn wait_for_bot_text(
        &self,
        channel: u64,
        needle: &str,
        timeout: Duration,
    ) -> Option<Stored> {
        let found =
            |m: &&Stored| m.from_bot && m.channel == channel && m.content().contains(needle);
        self.shared
            .wait_until(timeout, |inner| inner.messages.iter().any(|m| found(&m)))
            .await;
        self.shared
            .read(|inner| inner.messages.iter().find(|m| found(m)).cloned())
    }

    /// Every file the bot attached to a message, oldest first: its channel and
    /// message, file name, content type, bytes, and the message's text.
    pub fn sent_files(&self) -> Vec<SentFile> {
        self.shared.read(|inner| inner.sent_files.clone())
    }

    /// The files the bot sent in `channel`, oldest first.
    pub fn sent_files_in(&self, channel: u64) -> Vec<SentFile> {
        self.sent_files()
            .into_iter()
            .filter(|f| f.channel == channel)
            .collect()
    }

    /// Waits until the bot sent at least `n` files or `timeout` passes; returns them all.
    pub async fn wait_for_sent_files(&self, n: usize, timeout: Duration) -> Vec<SentFile> {
        self.shared
            .wait_until(timeout, |inner| inner.sent_files.len() >= n)
            .await;
        self.sent_files()
    }

    /// Every reaction the bot added, oldest first: (channel, message, emoji), the emoji
    /// percent-decoded (`"👀"`, or `name:id` for a custom one).
    pub fn reactions(&self) -> Vec<(u64, u64, String)> {
        self.shared.read(|inner| inner.reactions.clone())
    }

    /// Waits until the bot added at least `n` reactions or `timeout` passes; returns them
    /// all.
    pub async fn wait_for_reactions(&self, n: usize, timeout: Duration) -> Vec<(u64, u64, String)> {
        self.shared
            .wait_until(timeout, |inner| inner.reactions.len() >= n)
            .await;
        self.reactions()
    }

    /// The DM channel the bot opened (`POST /users/@me/channels`) with the user whose
    /// snowflake is `user`; `None` if it never did.
    pub fn opened_dm(&self, user: u64) -> Option<u64> {
        self.shared.read(|inner| inner.dms.get(&user).copied())
    }

    /// The bot's answers to interactions, oldest first.
    pub fn answers(&self) -> Vec<Answer> {
        self.shared.read(|inner| inner.answers.clone())
    }

    pub async fn wait_for_answers(&self, n: usize, timeout: Duration) -> Vec<Answer> {
        self.shared
            .wait_until(timeout, |inner| inner.answers.len() >= n)
            .await;
        self.answers()
    }

    /// The next call of `route` fails with `fault` (FIFO per route; still recorded).
    pub fn fail_next(&self, route: &str, fault: Fault) {
        self.shared.update(|inner| {
            inner
                .faults
                .entry(route.to_string())
                .or_default()
                .push_back(fault)
        });
    }

    /// The next call of `route` is answered as usual but only after `delay` (FIFO per
    /// route; recorded when it arrives).
    pub fn slow_next(&self, route: &str, delay: Duration) {
        self.shared.update(|inner| {
            inner
                .delays
                .entry(route.to_string())
                .or_default()
                .push_back(delay)
        });
    }

    /// While on, every REST call gets 401 and the gateway closes IDENTIFY with 4004.
    pub fn revoke_token(&self, revoked: bool) {
        self.shared.update(|inner| inner.revoked = revoked);
    }

    /// While on, IDENTIFY is closed with 4014 (a privileged intent not enabled).
    pub fn refuse_intents(&self, on: bool) {
        self.shared
            .update(|inner| inner.gateway.refuse_intents = on);
    }

    /// Drops the open gateway socket without a close frame (a network cut).
    pub fn drop_socket(&self) {
        self.kick(Kick::Drop);
    }

    /// Sends op 7 RECONNECT on the open socket, then closes it.
    pub fn send_reconnect(&self) {
        self.kick(Kick::Reconnect);
    }

    fn kick(&self, kind: Kick) {
        self.shared.update(|inner| {
            inner.gateway.kick += 1;
            inner.gateway.kick_kind = Some(kind);
        });
    }

    /// Drops the open socket and refuses new ones (503) for `dur`; REST stays up.
    pub fn outage(&self, dur: Duration) {
        self.shared.update(|inner| {
            inner.gateway.down_until = Some(Instant::now() + dur);
            inner.gateway.kick += 1;
            inner.gateway.kick_kind = Some(Kick::Drop);
        });
    }

    /// The gateway goes silent: the open socket (or, if none is open, the next one,
    /// which then says no HELLO) stays open but answers nothing — no heartbeat ACK, no
    /// dispatch — until the bot closes it. Sockets after it are served as usual, and
    /// what happened meanwhile reaches the bot as after any drop. REST stays up.
    pub fn stall(&self) {
        self.shared.update(|inner| inner.gateway.stall = true);
    }

    /// How many gateway sockets went silent so far (`stall`).
    pub fn stalled(&self) -> usize {
        self.shared.read(|inner| inner.gateway.stalled)
    }

    /// How many IDENTIFYs and RESUMEs the gateway accepted.
    pub fn identifies(&self) -> usize {
        self.shared.read(|inner| inner.gateway.identifies)
    }

    pub fn resumes(&self) -> usize {
        self.shared.read(|inner| inner.gateway.resumes)
    }

    /// Waits until a socket is open with a session (READY sent).
    pub async fn wait_connected(&self, timeout: Duration) -> bool {
        self.shared
            .wait_until(timeout, |inner| {
                inner.gateway.live > 0
                    && inner.gateway.session.is_some()
                    && !inner.gateway.is_down()
            })
            .await
    }

    /// How many heartbeats the gateway acknowledged so far.
    pub fn heartbeats(&self) -> usize {
        self.shared.read(|inner| inner.gateway.heartbeats)
    }

    /// Waits until `n` heartbeats in all were acknowledged.
    pub async fn wait_for_heartbeats(&self, n: usize, timeout: Duration) -> bool {
        self.shared
            .wait_until(timeout, |inner| inner.gateway.heartbeats >= n)
            .await
    }

    /// Waits until `n` RESUMEs were accepted.
    pub async fn wait_for_resumes(&self, n: usize, timeout: Duration) -> bool {
        self.shared
            .wait_until(timeout, |inner| inner.gateway.resumes >= n)
            .await
    }

    /// Typing indications sent to channel `channel`.
    pub fn typing_in(&self, channel: u64) -> usize {
        let path = format!("/api/v10/channels/{channel}/typing");
        self.calls_of("typing")
            .iter()
            .filter(|c| c.path == path)
            .count()
    }
}

impl Drop for FakeDiscord {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
    }
}
