//! The Socket Mode connection. `apps.connections.open` (app token) gives a one-time
//! WebSocket URL, used verbatim (so `ws://` works against a local fake). Slack says
//! `hello` (the channel is up), sends envelopes — `events_api`, `interactive`,
//! `slash_commands` — that must each be acknowledged with their `envelope_id` within
//! 3 s, and `disconnect` when it wants us to reconnect. A dropped socket, a `disconnect`
//! or silence past the limit (60 s unless set; pinged every third of it, so a live
//! connection answers with pongs) ends the connection, and so does opening one that
//! takes longer than the limit; the loop reconnects (at once when asked or
//! after a connection that lasted, a second after a shorter one that Slack greeted,
//! with growing backoff after failures) and reports each step as the channel's health. A
//! rejected token is `Down` with the setting to fix. Envelopes not acknowledged when a
//! connection ends are sent again by Slack on the next one; dedupe makes that harmless.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use slack_morphism::prelude::*;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

use super::convert::{self, CHANNEL};
use super::errors::{Token, channel_error};
use super::inbound::{self, Delivery, acknowledge_when};
use super::{SILENCE, Slack};
use crate::backoff;
use crate::channel::{ChannelError, Health, InboundSender};

/// An open Socket Mode WebSocket.
type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A connection that lasted this long was healthy: reconnect without backoff.
const STABLE: Duration = Duration::from_secs(30);

/// Why a connection ended.
enum Ended {
    Shutdown,
    /// Reconnect; `asked` when Slack said so (no backoff then).
    Reconnect {
        why: String,
        asked: bool,
    },
}

impl Slack {
    pub(super) async fn listen_socket(
        &self,
        bus: InboundSender,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        let (queue, queued) = inbound::queue();
        let (presses, pressed) = mpsc::channel::<Value>(64);
        tokio::select! {
            () = self.forward(queued, bus) => Ok(()), // the core is gone
            () = self.answer_presses(pressed) => Ok(()),
            result = self.connect_loop(&queue, &presses, &shutdown) => result,
        }
    }

    async fn connect_loop(
        &self,
        queue: &mpsc::Sender<Delivery>,
        presses: &mpsc::Sender<Value>,
        shutdown: &CancellationToken,
    ) -> Result<(), ChannelError> {
        let mut backoff = backoff::reconnect();
        let pulse = self.health.pulse();
        loop {
            if shutdown.is_cancelled() {
                return Ok(());
            }
            let started = Instant::now();
            let mut greeted = false;
            pulse.attempt();
            let outcome = match self.open().await {
                Ok(socket) => {
                    self.connect_once(socket, queue, presses, shutdown, &mut greeted)
                        .await
                }
                Err(err) => Err(err),
            };
            let wait = match outcome {
                Ok(Ended::Shutdown) => return Ok(()),
                Ok(Ended::Reconnect { why, asked }) => {
                    self.set_health(Health::Degraded(format!("reconnecting: {why}")));
                    if asked || started.elapsed() >= STABLE {
                        backoff.reset();
                        Duration::ZERO
                    } else if greeted {
                        // A working connection dropped: that is not a failure to
                        // back off from, or a link that flaps would stay down for
                        // longer and longer while messages wait.
                        backoff.reset();
                        backoff.wait(None)
                    } else {
                        backoff.wait(None)
                    }
                }
                Err(err) => {
                    let (health, wait) = backoff::after(&mut backoff, &err);
                    self.set_health(match health {
                        Health::Degraded(why) => Health::Degraded(format!("reconnecting: {why}")),
                        other => other,
                    });
                    wait
                }
            };
            pulse.waiting(wait);
            tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// How long the socket may stay silent.
    fn silence(&self) -> Duration {
        self.settings.silence_limit().unwrap_or(SILENCE)
    }

    /// Log in (`auth.test`, once), ask for a connection URL and open the WebSocket,
    /// all within the silence limit.
    async fn open(&self) -> Result<Socket, ChannelError> {
        let limit = self.silence();
        let opening = async {
            self.setup().await?;
            let app_token =
                SlackApiToken::new(self.settings.app_token.clone().unwrap_or_default().into());
            let opened = self
                .client
                .open_session(&app_token)
                .apps_connections_open(&SlackApiAppsConnectionOpenRequest::new())
                .await
                .map_err(|e| channel_error(&e, Token::App))?;
            // The system's roots, parsed once for the process rather than on every connect.
            let tls = pincer_net::tls::native().map(tokio_tungstenite::Connector::Rustls);
            let (socket, _) = tokio_tungstenite::connect_async_tls_with_config(
                opened.url.0.as_str(),
                None,
                false,
                tls,
            )
            .await
            .map_err(|e| {
                ChannelError::transient(format!("cannot open the Socket Mode connection: {e}"))
            })?;
            Ok(socket)
        };
        tokio::time::timeout(limit, opening).await.map_err(|_| {
            ChannelError::transient(format!(
                "Slack did not open a Socket Mode connection within {} s",
                limit.as_secs()
            ))
        })?
    }

    /// One connection, from its opening until it ends; `greeted` once Slack said hello
    /// on it.
    async fn connect_once(
        &self,
        socket: Socket,
        queue: &mpsc::Sender<Delivery>,
        presses: &mpsc::Sender<Value>,
        shutdown: &CancellationToken,
        greeted: &mut bool,
    ) -> Result<Ended, ChannelError> {
        let silence = self.silence();
        let (mut write, mut read) = socket.split();
        // Acknowledgements come from tasks that wait for the store; they go out here.
        // One acknowledgement per envelope Slack sent, written out by this loop.
        #[expect(
            clippy::disallowed_methods,
            reason = "bounded by the envelopes in flight"
        )]
        let (frames, mut outgoing) = mpsc::unbounded_channel::<String>();
        let mut ping = tokio::time::interval(silence / 3);
        ping.tick().await; // the first tick is immediate
        let opened = Instant::now();
        let pulse = self.health.pulse();
        loop {
            tokio::select! {
                () = shutdown.cancelled() => {
                    let _ = write.send(Message::Close(None)).await; // going away regardless
                    return Ok(Ended::Shutdown);
                }
                frame = read.next() => {
                    pulse.heard();
                    let dropped = |why: String| Ok(Ended::Reconnect { why, asked: false });
                    match frame {
                        Some(Ok(Message::Text(text))) => {
                            if let Some(ended) = self.on_frame(text.as_str(), queue, presses, &frames, greeted) {
                                let _ = write.send(Message::Close(None)).await;
                                return Ok(ended);
                            }
                        }
                        Some(Ok(Message::Close(_))) => return dropped("Slack closed the connection".into()),
                        Some(Ok(_)) => {} // pings are answered by tungstenite; pongs only count as life
                        Some(Err(err)) => return dropped(format!("the connection dropped ({err})")),
                        None => return dropped("the connection dropped".into()),
                    }
                }
                Some(frame) = outgoing.recv() => {
                    if let Err(err) = write.send(Message::Text(frame.into())).await {
                        return Ok(Ended::Reconnect { why: format!("the connection dropped ({err})"), asked: false });
                    }
                }
                _ = ping.tick() => {
                    if pulse.silent_for(opened) > silence {
                        return Ok(Ended::Reconnect { why: format!("no word from Slack for {} s", silence.as_secs()), asked: false });
                    }
                    // A failed ping shows up as a read error next.
                    let _ = write.send(Message::Ping(Vec::new().into())).await;
                }
            }
        }
    }

    /// One text frame. Returns how the connection ends, if it should.
    fn on_frame(
        &self,
        text: &str,
        queue: &mpsc::Sender<Delivery>,
        presses: &mpsc::Sender<Value>,
        frames: &mpsc::UnboundedSender<String>,
        greeted: &mut bool,
    ) -> Option<Ended> {
        let Ok(frame) = serde_json::from_str::<Value>(text) else {
            tracing::warn!(
                channel = CHANNEL,
                "Slack sent a frame that is not JSON; ignored"
            );
            return None;
        };
        let envelope = frame["envelope_id"].as_str().map(str::to_string);
        let ack = move |frames: &mpsc::UnboundedSender<String>| {
            if let Some(id) = &envelope {
                // The connection may be gone; Slack then sends the envelope again.
                let _ = frames.send(json!({ "envelope_id": id }).to_string());
            }
        };
        match frame["type"].as_str().unwrap_or_default() {
            "hello" => {
                *greeted = true;
                self.set_health(Health::Up);
            }
            "disconnect" => {
                let reason = frame["reason"].as_str().unwrap_or("no reason given");
                return Some(Ended::Reconnect {
                    why: format!("Slack asked to reconnect ({reason})"),
                    asked: true,
                });
            }
            "events_api" => {
                let payload = &frame["payload"];
                let stored = match payload["type"].as_str() {
                    Some("event_callback") => self.accept(payload, queue),
                    _ => None,
                };
                let frames = frames.clone();
                tokio::spawn(async move {
                    if acknowledge_when(stored).await {
                        ack(&frames);
                    }
                });
            }
            "slash_commands" => {
                let stored = self
                    .me
                    .get()
                    .and_then(|me| convert::slash_command(&frame["payload"], me))
                    .and_then(|incoming| self.accept_incoming(incoming, queue));
                let frames = frames.clone();
                tokio::spawn(async move {
                    if acknowledge_when(stored).await {
                        ack(&frames);
                    }
                });
            }
            "interactive" => {
                // Button presses are answered at once; the toast follows.
                ack(frames);
                if presses.try_send(frame["payload"].clone()).is_err() {
                    tracing::warn!(
                        channel = CHANNEL,
                        "a button press was dropped (too many at once)"
                    );
                }
            }
            other => {
                tracing::debug!(
                    channel = CHANNEL,
                    kind = other,
                    "unhandled Socket Mode frame"
                );
                ack(frames);
            }
        }
        None
    }
}
