//! `FakeTelegram`, the handle a test holds. Starting it binds a port and spawns the
//! server; dropping it stops the server and drops its connections.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use super::fault::Fault;
use super::incoming::{self, Incoming};
use super::record::{Call, Sent, SentFile};
use super::server::{self, App};
use super::state::Shared;
use super::{BOT_ID, BOT_USERNAME, TOKEN, listener, methods};

/// A fake Telegram Bot API server for one bot (id 999, `@pincer_test_bot`).
pub struct FakeTelegram {
    addr: SocketAddr,
    pub(super) shared: Arc<Shared>,
    /// Asks the accept loop for outages.
    listener: listener::Control,
    /// Set to `true` on drop: the accept loop stops and drops every connection.
    shutdown: watch::Sender<bool>,
}

impl FakeTelegram {
    /// Binds `127.0.0.1:0` and starts serving. Panics if no port can be bound (a test
    /// cannot go on without its fake).
    pub async fn start() -> FakeTelegram {
        let any_port = SocketAddr::from(([127, 0, 0, 1], 0));
        FakeTelegram::bind(any_port)
            .await
            .expect("the fake Telegram should bind 127.0.0.1:0")
    }

    /// Binds `addr` and starts serving on the current tokio runtime.
    pub async fn bind(addr: SocketAddr) -> io::Result<FakeTelegram> {
        let tcp = TcpListener::bind(addr).await?;
        let addr = tcp.local_addr()?;
        let shared = Arc::new(Shared::new());
        let (control, commands) = listener::channel();
        let (shutdown, stopped) = watch::channel(false);
        let app = server::app(App {
            shared: Arc::clone(&shared),
            listener: control.clone(),
        });
        listener::spawn(tcp, app, commands, stopped);
        Ok(FakeTelegram {
            addr,
            shared,
            listener: control,
            shutdown,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, what `Bot::set_api_url` takes; requests then go to
    /// `{api_url}/bot{TOKEN}/{Method}`.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `123456:TEST-TOKEN`.
    pub fn token(&self) -> &str {
        TOKEN
    }

    /// `999`.
    pub fn bot_id(&self) -> i64 {
        BOT_ID
    }

    /// `pincer_test_bot` (without `@`).
    pub fn bot_username(&self) -> &str {
        BOT_USERNAME
    }

    /// Queues `msg` as a `message` update; returns its message id.
    pub fn inject(&self, msg: Incoming) -> i64 {
        self.shared.update(|inner| incoming::inject(inner, msg)).0
    }

    /// User `user_id` presses the inline button whose `callback_data` ends with
    /// `suffix` on the bot's newest message with buttons in `chat_id`: queues a
    /// `callback_query` update. Returns the callback query's id, or `None` when no such
    /// button is on screen (as on Telegram, there is nothing to press).
    pub fn press(&self, chat_id: i64, user_id: i64, suffix: &str) -> Option<String> {
        self.shared.update(|inner| {
            let (_, message) = inner.store.newest_with_buttons(chat_id)?;
            let data = message.json["reply_markup"]["inline_keyboard"]
                .as_array()?
                .iter()
                .flat_map(|row| row.as_array().into_iter().flatten())
                .filter_map(|button| button["callback_data"].as_str())
                .find(|data| data.ends_with(suffix))?
                .to_string();
            let message = message.json.clone();
            let query_id = format!("cb{}", inner.updates.pending() + inner.calls.len());
            let query = serde_json::json!({
                "id": query_id,
                "from": crate::telegram::objects::user(user_id, "Presser", None),
                "message": message,
                "chat_instance": format!("ci{chat_id}"),
                "data": data,
            });
            inner.updates.push("callback_query", query);
            Some(query_id)
        })
    }

    /// The inline buttons on message `message_id` in `chat_id` now, as (text, data).
    pub fn buttons(&self, chat_id: i64, message_id: i64) -> Vec<(String, String)> {
        self.shared.read(|inner| {
            let Some(message) = inner.store.message(chat_id, message_id) else {
                return Vec::new();
            };
            message.json["reply_markup"]["inline_keyboard"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|row| row.as_array().into_iter().flatten())
                .map(|b| {
                    let text = |key: &str| b[key].as_str().unwrap_or_default().to_string();
                    (text("text"), text("callback_data"))
                })
                .collect()
        })
    }

    /// Every API call so far, oldest first (refused ones too).
    pub fn calls(&self) -> Vec<Call> {
        self.shared.read(|inner| inner.calls.clone())
    }

    /// The calls of one method (matched case-insensitively), oldest first.
    pub fn calls_of(&self, method: &str) -> Vec<Call> {
        self.shared.read(|inner| matching(&inner.calls, method))
    }

    /// Every message the bot sent or edited successfully, oldest first.
    pub fn sent(&self) -> Vec<Sent> {
        self.shared.read(|inner| inner.sent.clone())
    }

    /// Waits until at least `n` messages were sent or edited, or `timeout` passes, then
    /// returns them all (fewer than `n` on timeout).
    pub async fn wait_for_sent(&self, n: usize, timeout: Duration) -> Vec<Sent> {
        self.shared
            .wait_until(timeout, |inner| inner.sent.len() >= n)
            .await;
        self.sent()
    }

    /// Every file the bot sent (photos, documents, voice notes, audio), oldest first,
    /// with its bytes and caption.
    pub fn sent_files(&self) -> Vec<SentFile> {
        self.shared.read(|inner| inner.sent_files.clone())
    }

    /// The files the bot sent to `chat_id`, oldest first.
    pub fn sent_files_in(&self, chat_id: i64) -> Vec<SentFile> {
        self.shared.read(|inner| {
            inner
                .sent_files
                .iter()
                .filter(|f| f.chat_id == chat_id)
                .cloned()
                .collect()
        })
    }

    /// Waits until the bot sent at least `n` files or `timeout` passes, then returns
    /// them all (fewer than `n` on timeout).
    pub async fn wait_for_sent_files(&self, n: usize, timeout: Duration) -> Vec<SentFile> {
        self.shared
            .wait_until(timeout, |inner| inner.sent_files.len() >= n)
            .await;
        self.sent_files()
    }

    /// Every reaction the bot set (`setMessageReaction` calls that were accepted), oldest
    /// first: (chat id, message id, emoji), the emoji `""` when the call removed the
    /// reaction.
    pub fn reactions(&self) -> Vec<(i64, i64, String)> {
        self.shared.read(|inner| inner.reactions.clone())
    }

    /// Waits until the bot set at least `n` reactions or `timeout` passes, then returns
    /// them all (fewer than `n` on timeout).
    pub async fn wait_for_reactions(&self, n: usize, timeout: Duration) -> Vec<(i64, i64, String)> {
        self.shared
            .wait_until(timeout, |inner| inner.reactions.len() >= n)
            .await;
        self.reactions()
    }

    /// The first call of `method` (case-insensitive), waiting up to `timeout` for one.
    pub async fn wait_for_call(&self, method: &str, timeout: Duration) -> Option<Call> {
        self.wait_for_calls(method, 1, timeout)
            .await
            .into_iter()
            .next()
    }

    /// Waits until `method` was called at least `n` times or `timeout` passes; returns
    /// its calls (fewer than `n` on timeout).
    pub async fn wait_for_calls(&self, method: &str, n: usize, timeout: Duration) -> Vec<Call> {
        self.shared
            .wait_until(timeout, |inner| matching(&inner.calls, method).len() >= n)
            .await;
        self.calls_of(method)
    }

    /// The highest `offset` the bot passed to `getUpdates` (0 before any).
    pub fn confirmed_offset(&self) -> i64 {
        self.shared.read(|inner| inner.updates.confirmed_offset())
    }

    /// Updates injected but not yet confirmed.
    pub fn pending_updates(&self) -> usize {
        self.shared.read(|inner| inner.updates.pending())
    }

    /// The last `setMyCommands` list as `(command, description)`.
    pub fn commands(&self) -> Vec<(String, String)> {
        self.shared.read(|inner| {
            inner
                .commands
                .iter()
                .map(|c| {
                    let text = |key: &str| c[key].as_str().unwrap_or_default().to_string();
                    (text("command"), text("description"))
                })
                .collect()
        })
    }

    /// The next call of `method` (case-insensitive) fails with `fault`; call again to
    /// queue more (FIFO per method). The call is still recorded.
    pub fn fail_next(&self, method: &str, fault: Fault) {
        let key = methods::canonical(method)
            .unwrap_or(method)
            .to_ascii_lowercase();
        self.shared
            .update(|inner| inner.faults.entry(key).or_default().push_back(fault));
    }

    /// While on, every `sendMessage`/`editMessageText` (and media caption) with
    /// `parse_mode: HTML` gets 400 `Bad Request: can't parse entities: …`.
    pub fn reject_html(&self, on: bool) {
        self.shared.update(|inner| inner.reject_html = on);
    }

    /// Whether HTML is checked like Telegram does (on by default; see `html`). Off, any
    /// HTML is accepted.
    pub fn validate_html(&self, on: bool) {
        self.shared.update(|inner| inner.lenient_html = !on);
    }

    /// Privacy mode (on by default): `getMe.can_read_all_group_messages` is its opposite.
    /// The fake delivers every injected message either way.
    pub fn privacy_mode(&self, on: bool) {
        self.shared
            .update(|inner| inner.reads_all_group_messages = !on);
    }

    /// Goes away for `dur`: stops listening and drops every open connection (a held long
    /// poll included), then listens again on the same port. Returns as soon as the fake
    /// is down; `wait_until_up` waits for the return. State (updates, logs) is kept.
    pub async fn outage(&self, dur: Duration) {
        self.listener.outage(dur).await;
    }

    /// The connection goes silent: the `getUpdates` held now (or, if none is, the next
    /// one) is never answered, what it would have carried stays pending, and only a new
    /// poll, once the bot gives up on that one, is answered again.
    pub fn stall(&self) {
        self.shared.update(|inner| inner.stalls += 1);
    }

    /// How many `getUpdates` calls were stalled so far (`stall`).
    pub fn stalled(&self) -> usize {
        self.shared.read(|inner| inner.stalled)
    }

    /// Returns once the fake is listening (at once outside an outage).
    pub async fn wait_until_up(&self) {
        self.listener.wait_until_up().await;
    }
}

fn matching(calls: &[Call], method: &str) -> Vec<Call> {
    calls
        .iter()
        .filter(|c| c.method.eq_ignore_ascii_case(method))
        .cloned()
        .collect()
}

impl Drop for FakeTelegram {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
    }
}
