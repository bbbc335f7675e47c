//! The listen loop. Each round logs in over REST (`GET /users/@me`, which also proves
//! the token), asks for the gateway URL, and runs a serenity client until it fails;
//! serenity heartbeats, resumes and re-identifies by itself meanwhile. Failures are
//! reported as the channel's health and retried with backoff (a rejected token rarely:
//! someone has to fix it).
//!
//! serenity hands every gateway event to a task of its own. The client runs on a
//! thread of its own with a single-threaded runtime, where those tasks run in the order
//! they were spawned, which is the order Discord sent the events: messages arrive in
//! order and need no holding back (a 60 ms hold did that job before, on every message).
//!
//! Messages pass through one forwarder in this loop: sorted per channel (`order`, for
//! a REST catch-up that overlaps what the gateway delivers), repeats dropped, their
//! place (DM, channel, thread) looked up, then sent to the bus one at a time, with
//! their attachments pending: nothing is downloaded before the core has admitted the
//! sender (see `files`). When a new session starts (READY) after messages were seen, each
//! recently active channel is asked over REST, beside the loop, for what came after the
//! last message seen there: a resume replays what a short drop missed, but a
//! re-identify starts a fresh session that replays nothing.
//!
//! Silence: serenity reconnects by itself when a heartbeat goes unacknowledged, and
//! when a new connection says no HELLO within 15 s. Beside it, the session counts
//! what it hears — events, and heartbeat ACKs as the shard manager records them — and
//! a gateway silent past the silence limit ends the session, which is opened again:
//! the backstop for whatever serenity does not notice, and the adapter's pulse.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serenity::client::ClientBuilder;
use serenity::gateway::ShardManager;
use serenity::http::HttpBuilder;
use serenity::model::channel::Message;
use serenity::prelude::GatewayIntents;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::Discord;
use super::convert::{self, CHANNEL, Me, Place};
use super::errors;
use super::handler::{Event, Handler};
use super::order::Reorder;
use super::rest::{Rest, snowflake};
use crate::backoff;
use crate::channel::{Channel, ChannelError, InboundSender};
use crate::inbox::MediaFetcher;
use crate::message::Target;

/// A session that lasted this long was working: the next failure backs off from the start.
const RAN_A_WHILE: Duration = Duration::from_secs(60);
/// How long a message waits for an earlier one of its channel: none, since the
/// gateway's thread delivers them in order (see the top of this file).
const HOLD: Duration = Duration::ZERO;
/// How many messages one catch-up asks for per channel (Discord's maximum).
const CATCH_UP: u32 = 100;
/// How many guild channels and threads are remembered as such.
const PLACES: usize = 1024;
/// How many channels a catch-up covers: the ones with the newest messages. Beyond
/// twice this, the quietest are forgotten.
const TRACKED: usize = 256;

/// Guild text needs the privileged MESSAGE_CONTENT intent (README says how to enable it).
fn intents() -> GatewayIntents {
    GatewayIntents::GUILDS
        | GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT
}

/// Messages between serenity's handler and the bus.
struct Forwarder {
    events: mpsc::UnboundedReceiver<Event>,
    sender: mpsc::UnboundedSender<Event>,
    order: Reorder<Box<Message>>,
    /// The newest message id seen in each recently active channel (at most
    /// `2 * TRACKED`; snowflake ids grow with time, so the smallest are the quietest).
    last_seen: HashMap<u64, u64>,
    /// `last_seen` when the connection was lost: where the next catch-up starts. Taken
    /// then, because after the next READY new messages may race ahead of it.
    gap_from: Option<HashMap<u64, u64>>,
    /// What the messages' pending attachments are fetched with, once admitted.
    fetcher: Arc<dyn MediaFetcher>,
}

#[async_trait]
impl Channel for Discord {
    fn name(&self) -> &str {
        CHANNEL
    }

    async fn listen(
        &self,
        bus: InboundSender,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        // serenity's handler must never wait on the bus (it would stall the shard's
        // heartbeat); Discord's own rate of events bounds what waits here.
        #[expect(clippy::disallowed_methods, reason = "see above")]
        let (sender, events) = mpsc::unbounded_channel();
        let mut forwarder = Forwarder {
            events,
            sender,
            order: Reorder::new(HOLD),
            last_seen: HashMap::new(),
            gap_from: None,
            fetcher: self.fetcher(),
        };
        let mut backoff = backoff::reconnect();
        loop {
            if shutdown.is_cancelled() {
                return Ok(());
            }
            let started = Instant::now();
            self.health.pulse().attempt();
            let err = match self.session(&bus, &shutdown, &mut forwarder).await {
                Ok(()) => return Ok(()),
                Err(err) => err,
            };
            forwarder.mark_gap();
            if started.elapsed() > RAN_A_WHILE {
                backoff.reset(); // it ran a good while: start counting again
            }
            let (health, wait) = backoff::after(&mut backoff, &err);
            self.health.set(health);
            self.health.pulse().waiting(wait);
            tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    async fn send(&self, target: &Target, text: &str) -> Result<String, ChannelError> {
        self.send_text(target, text).await
    }
}

/// Run the serenity client (`client`: build it, then start it) on a thread of its own
/// with a single-threaded runtime (see the top of this file); the receiver gets how it
/// ended. Cancelling `stop` ends the client and its thread, whatever it is doing.
fn on_own_thread(
    client: impl Future<Output = Result<(), ChannelError>> + Send + 'static,
    stop: CancellationToken,
) -> Result<oneshot::Receiver<Result<(), ChannelError>>, ChannelError> {
    let (done, ended) = oneshot::channel();
    std::thread::Builder::new()
        .name("discord-gateway".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    let message = format!("cannot start the gateway's runtime: {e}");
                    let _ = done.send(Err(ChannelError::transient(message)));
                    return;
                }
            };
            let ended = runtime.block_on(async {
                tokio::select! {
                    ended = client => ended,
                    _ = stop.cancelled() => Ok(()),
                }
            });
            let _ = done.send(ended);
        })
        .map_err(|e| ChannelError::transient(format!("cannot start the gateway's thread: {e}")))?;
    Ok(ended)
}

impl Discord {
    /// One client's life: log in, connect, forward until it fails (`Err`) or until
    /// shutdown or the core stops listening (`Ok`).
    async fn session(
        &self,
        bus: &InboundSender,
        shutdown: &CancellationToken,
        forwarder: &mut Forwarder,
    ) -> Result<(), ChannelError> {
        let limit = self.settings.silence_limit();
        let (me, url) = tokio::time::timeout(limit, self.log_in())
            .await
            .map_err(|_| silent(limit))??;
        self.health.pulse().heard();

        let mut http = HttpBuilder::new(&self.settings.token);
        // serenity's own client is this one with a TLS config of its own.
        if let Ok(client) = pincer_net::http::client().build() {
            http = http.client(client);
        }
        let http = http
            .proxy(self.rest.api_url())
            .ratelimiter_disabled(true)
            .build();
        let shards = Arc::new(Mutex::new(None));
        let handler = Handler {
            events: forwarder.sender.clone(),
            rest: Arc::clone(&self.rest),
            approvals: Arc::clone(&self.approvals),
            health: Arc::clone(&self.health),
            shards: Arc::clone(&shards),
        };
        let slot = Arc::clone(&shards);
        // Built on the gateway's thread too: the shard manager spawns the shard runners
        // (and they the event tasks) on the runtime it is built on.
        let client = async move {
            let mut client = ClientBuilder::new_with_http(http, intents())
                .event_handler(handler)
                .await
                .map_err(|e| errors::gateway(&e))?;
            // serenity asked for the gateway URL already and, had that failed, would
            // fall back to Discord's own: always use the one we were given.
            *client.ws_url.lock().await = url;
            if let Ok(mut slot) = slot.lock() {
                *slot = Some(Arc::clone(&client.shard_manager));
            }
            client.start().await.map_err(|e| errors::gateway(&e))
        };
        let stop = CancellationToken::new();
        let _stop_on_return = stop.clone().drop_guard();
        let mut running = on_own_thread(client, stop.clone())?;
        tracing::info!(channel = CHANNEL, bot = %me.username, "connecting to the gateway");

        let opened = tokio::time::Instant::now();
        let mut listening = tokio::time::interval(listen_every(limit));
        let mut acks = Acks::default();
        let outcome = loop {
            let due = forwarder.order.next_due();
            tokio::select! {
                _ = shutdown.cancelled() => break Ok(()),
                _ = listening.tick() => {
                    if acks.new_one(&shards).await {
                        self.health.pulse().heard();
                    }
                    if self.health.pulse().silent_for(opened) > limit {
                        break Err(silent(limit));
                    }
                }
                ended = &mut running => {
                    break Err(match ended {
                        Ok(Err(err)) => err,
                        Ok(Ok(())) => ChannelError::transient("reconnecting: the gateway client stopped"),
                        Err(_) => ChannelError::transient("reconnecting: the gateway client failed"),
                    });
                }
                event = forwarder.events.recv() => match event {
                    Some(Event::Message(message)) => forwarder.take(message),
                    Some(Event::Ready) => self.catch_up(forwarder, &stop),
                    Some(Event::Lost) => forwarder.mark_gap(),
                    Some(Event::Resumed) => forwarder.gap_from = None,
                    None => break Ok(()),
                },
                _ = sleep_until(due) => {
                    for message in forwarder.order.ready(Instant::now()) {
                        if !self.deliver(&message, &me, &forwarder.fetcher, bus).await {
                            break;
                        }
                    }
                    if bus.is_closed() {
                        break Ok(());
                    }
                }
            }
        };
        // Closes the shards cleanly; the guard then ends the gateway's thread.
        let manager = shards.lock().ok().and_then(|slot| slot.clone());
        if let Some(manager) = manager {
            manager.shutdown_all().await;
        }
        outcome
    }

    /// Who the bot is (`GET /users/@me`, which also proves the token) and where the
    /// gateway is.
    async fn log_in(&self) -> Result<(Me, String), ChannelError> {
        let user = self.rest.get("/users/@me").await?;
        let me = Me {
            id: snowflake(&user["id"])
                .ok_or_else(|| ChannelError::transient("Discord's /users/@me had no id"))?,
            username: user["username"].as_str().unwrap_or_default().to_string(),
        };
        let gateway = self.rest.get("/gateway/bot").await?;
        let Some(url) = gateway["url"].as_str().map(str::to_string) else {
            return Err(ChannelError::transient("Discord's /gateway/bot had no url"));
        };
        Ok((me, url))
    }

    /// Asks each channel seen before the gap, over REST, for what came after the last
    /// message seen there. The fetching runs beside the loop (ended by `stop`) and
    /// feeds the forwarder like the gateway does, so live messages are not held up by
    /// it and whatever both deliver goes out once.
    fn catch_up(&self, forwarder: &mut Forwarder, stop: &CancellationToken) {
        let mut from = forwarder
            .gap_from
            .take()
            .unwrap_or_else(|| forwarder.last_seen.clone());
        keep_newest(&mut from, TRACKED);
        if from.is_empty() {
            return;
        }
        let rest = Arc::clone(&self.rest);
        let events = forwarder.sender.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = fetch_missed(&rest, from, &events) => {}
            }
        });
    }

    /// Converts and sends one message, its attachments pending; false once the core
    /// has stopped.
    async fn deliver(
        &self,
        message: &Message,
        me: &Me,
        fetcher: &Arc<dyn MediaFetcher>,
        bus: &InboundSender,
    ) -> bool {
        let place = self.place(message).await;
        let Some((mut inbound, attachments)) = convert::inbound(message, me, place) else {
            return true;
        };
        let prefix = inbound.message_id.clone();
        crate::inbox::attach(&mut inbound, attachments, fetcher, &prefix);
        bus.send(inbound.into()).await.is_ok()
    }

    /// Where a message was posted. Gateway messages carry `guild_id` (none in a DM);
    /// a guild channel is looked up once to tell threads from ordinary channels.
    async fn place(&self, message: &Message) -> Place {
        if message.guild_id.is_none() {
            return Place::Dm;
        }
        let id = message.channel_id.get();
        if let Some(place) = self.places.lock().ok().and_then(|p| p.get(&id).copied()) {
            return place;
        }
        let place = match self.rest.get(&format!("/channels/{id}")).await {
            Ok(found) => Place::from_type(
                found["type"].as_u64().unwrap_or(0),
                snowflake(&found["parent_id"]),
            ),
            Err(err) => {
                tracing::warn!(channel = CHANNEL, "could not look up channel {id}: {err}");
                return Place::Channel; // not remembered: ask again next time
            }
        };
        if let Ok(mut places) = self.places.lock() {
            if places.len() >= PLACES {
                places.clear(); // threads come and go: start again rather than grow
            }
            places.insert(id, place);
        }
        place
    }
}

impl Forwarder {
    /// Remembers where a catch-up starts (the first loss since the last catch-up).
    fn mark_gap(&mut self) {
        if self.gap_from.is_none() {
            self.gap_from = Some(self.last_seen.clone());
        }
    }

    fn take(&mut self, message: Box<Message>) {
        let (channel, id) = (message.channel_id.get(), message.id.get());
        let newest = self.last_seen.entry(channel).or_insert(id);
        *newest = (*newest).max(id);
        if self.last_seen.len() > 2 * TRACKED {
            keep_newest(&mut self.last_seen, TRACKED);
        }
        self.order.push(channel, id, message, Instant::now());
    }
}

/// Keeps the `keep` channels whose last message is newest.
fn keep_newest(seen: &mut HashMap<u64, u64>, keep: usize) {
    if seen.len() <= keep {
        return;
    }
    let mut ids: Vec<u64> = seen.values().copied().collect();
    let at = ids.len() - keep;
    let (_, cutoff, _) = ids.select_nth_unstable(at);
    let cutoff = *cutoff;
    seen.retain(|_, id| *id >= cutoff);
}

async fn fetch_missed(rest: &Rest, from: HashMap<u64, u64>, events: &mpsc::UnboundedSender<Event>) {
    let mut fetched = 0;
    for (channel, after) in from {
        let path = format!("/channels/{channel}/messages?after={after}&limit={CATCH_UP}");
        let listed = match rest.get(&path).await {
            Ok(listed) => listed,
            Err(err) => {
                tracing::warn!(channel = CHANNEL, "could not fetch missed messages: {err}");
                continue;
            }
        };
        let messages: Vec<Message> = match serde_json::from_value(listed) {
            Ok(messages) => messages,
            Err(err) => {
                tracing::warn!(channel = CHANNEL, "could not read missed messages: {err}");
                continue;
            }
        };
        fetched += messages.len();
        for message in messages {
            if events.send(Event::Message(Box::new(message))).is_err() {
                return;
            }
        }
    }
    if fetched > 0 {
        tracing::info!(
            channel = CHANNEL,
            count = fetched,
            "fetched messages missed while disconnected"
        );
    }
}

/// Discord said nothing within the silence limit.
fn silent(limit: Duration) -> ChannelError {
    ChannelError::transient(format!(
        "reconnecting: no word from the Discord gateway for {} s",
        limit.as_secs()
    ))
}

/// How often the session looks for heartbeat ACKs and measures the silence: a quarter
/// of the limit, between 100 ms and a second.
fn listen_every(limit: Duration) -> Duration {
    (limit / 4).clamp(Duration::from_millis(100), Duration::from_secs(1))
}

/// Heartbeat ACKs, as the shard manager shows them. serenity tells the event handler
/// nothing of them; it records the shard's latency (ACK time minus heartbeat time) on
/// each one, so a new latency is a new ACK. (Two ACKs with the same latency to the
/// nanosecond would count as one; the next one counts again.)
#[derive(Default)]
struct Acks {
    latency: Option<Duration>,
}

impl Acks {
    /// Whether an ACK came since the last look.
    async fn new_one(&mut self, shards: &Mutex<Option<Arc<ShardManager>>>) -> bool {
        let manager = shards.lock().ok().and_then(|slot| slot.clone());
        let Some(manager) = manager else {
            return false;
        };
        let latency = manager
            .runners
            .lock()
            .await
            .values()
            .find_map(|runner| runner.latency);
        let new = latency.is_some() && latency != self.latency;
        self.latency = latency;
        new
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quietest_channels_are_forgotten_first() {
        let mut seen: HashMap<u64, u64> = (0..10).map(|c| (c, 100 + c * 7 % 10)).collect();
        keep_newest(&mut seen, 3);
        let mut kept: Vec<u64> = seen.values().copied().collect();
        kept.sort_unstable();
        assert_eq!(kept, vec![107, 108, 109]);
    }
}
