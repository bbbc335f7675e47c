//! The Events API listener (`mode = "events"`): Slack posts events, button presses and
//! slash commands to `listen` (one URL for all three, e.g. `https://host/slack/events`
//! behind a proxy; any path is accepted). Every request must carry a valid
//! `X-Slack-Signature` — v0 HMAC-SHA256 of `v0:{timestamp}:{body}` with the signing
//! secret, timestamp within 5 minutes (slack-morphism's verifier) — or it is refused with
//! 401 before anything reads it. `url_verification` is answered with its challenge.
//! Events are answered 200 once stored (2 s at the latest), 500 when the core could not
//! store them, so Slack sends them again.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use slack_morphism::prelude::*;
use slack_morphism::signature_verifier::SlackEventSignatureVerifier;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::Slack;
use super::convert::{self, CHANNEL};
use super::inbound::{self, Delivery, acknowledge_when};
use crate::backoff;
use crate::channel::{ChannelError, Health, InboundSender};

/// A verified request for the adapter to take in.
enum Job {
    Event(Value, oneshot::Sender<bool>),
    Command(Value, oneshot::Sender<bool>),
    Press(Value),
}

#[derive(Clone)]
struct Listener {
    verifier: SlackEventSignatureVerifier,
    jobs: mpsc::Sender<Job>,
}

impl Slack {
    pub(super) async fn listen_events(
        &self,
        bus: InboundSender,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        let (queue, queued) = inbound::queue();
        let (presses, pressed) = mpsc::channel::<Value>(64);
        tokio::select! {
            () = self.forward(queued, bus) => Ok(()),
            () = self.answer_presses(pressed) => Ok(()),
            result = self.serve_events(&queue, &presses, &shutdown) => result,
        }
    }

    async fn serve_events(
        &self,
        queue: &mpsc::Sender<Delivery>,
        presses: &mpsc::Sender<Value>,
        shutdown: &CancellationToken,
    ) -> Result<(), ChannelError> {
        let mut backoff = backoff::reconnect();
        while let Err(err) = self.setup().await {
            let (health, wait) = backoff::after(&mut backoff, &err);
            self.set_health(health);
            tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                () = tokio::time::sleep(wait) => {}
            }
        }
        let Some(addr) = self.settings.listen else {
            return Err(ChannelError::permanent(
                "channels.slack.mode = \"events\" needs channels.slack.listen",
            ));
        };
        let tcp = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
            let err = ChannelError::permanent(format!(
                "cannot listen on {addr} for Slack events ({e}); change channels.slack.listen"
            ));
            self.set_health(Health::Down(err.message.clone()));
            err
        })?;
        let (jobs, mut incoming) = mpsc::channel(256);
        let secret =
            SlackSigningSecret::new(self.settings.signing_secret.clone().unwrap_or_default());
        let app = router(Listener {
            verifier: SlackEventSignatureVerifier::new(&secret),
            jobs,
        });
        tracing::info!(channel = CHANNEL, %addr, "listening for Slack events");
        self.set_health(Health::Up);
        let stop = shutdown.clone();
        let server = std::future::IntoFuture::into_future(
            axum::serve(tcp, app).with_graceful_shutdown(stop.cancelled_owned()),
        );
        tokio::pin!(server);
        loop {
            tokio::select! {
                result = &mut server => {
                    return result.map_err(|e| ChannelError::transient(format!("the Slack events listener stopped: {e}")));
                }
                Some(job) = incoming.recv() => self.take(job, queue, presses),
            }
        }
    }

    fn take(&self, job: Job, queue: &mpsc::Sender<Delivery>, presses: &mpsc::Sender<Value>) {
        self.health.pulse().heard();
        let (stored, reply) = match job {
            Job::Event(payload, reply) => (self.accept(&payload, queue), reply),
            Job::Command(payload, reply) => {
                let incoming = self
                    .me
                    .get()
                    .and_then(|me| convert::slash_command(&payload, me));
                (incoming.and_then(|i| self.accept_incoming(i, queue)), reply)
            }
            Job::Press(payload) => {
                if presses.try_send(payload).is_err() {
                    tracing::warn!(
                        channel = CHANNEL,
                        "a button press was dropped (too many at once)"
                    );
                }
                return;
            }
        };
        tokio::spawn(async move {
            let _ = reply.send(acknowledge_when(stored).await); // the request may be gone
        });
    }
}

fn router(listener: Listener) -> Router {
    Router::new().fallback(receive).with_state(listener)
}

async fn receive(State(listener): State<Listener>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(signature), Some(timestamp)) = (
        header(SlackEventSignatureVerifier::SLACK_SIGNED_HASH_HEADER),
        header(SlackEventSignatureVerifier::SLACK_SIGNED_TIMESTAMP),
    ) else {
        return (StatusCode::UNAUTHORIZED, "missing Slack signature").into_response();
    };
    let Ok(text) = std::str::from_utf8(&body) else {
        return (StatusCode::BAD_REQUEST, "body is not UTF-8").into_response();
    };
    if let Err(err) = listener.verifier.verify(signature, text, timestamp) {
        tracing::warn!(
            channel = CHANNEL,
            "refused a request with a bad signature: {err}"
        );
        return (StatusCode::UNAUTHORIZED, "invalid signature").into_response();
    }
    let is_form = header(header::CONTENT_TYPE.as_str())
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    if is_form {
        let fields: serde_json::Map<String, Value> = form_urlencoded::parse(text.as_bytes())
            .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
            .collect();
        if let Some(Value::String(payload)) = fields.get("payload") {
            let Ok(payload) = serde_json::from_str::<Value>(payload) else {
                return (StatusCode::BAD_REQUEST, "payload is not JSON").into_response();
            };
            // Answered at once; the presser sees the outcome as an ephemeral message.
            let _ = listener.jobs.send(Job::Press(payload)).await;
            return StatusCode::OK.into_response();
        }
        return wait(&listener, |reply| {
            Job::Command(Value::Object(fields), reply)
        })
        .await;
    }
    let Ok(event) = serde_json::from_str::<Value>(text) else {
        return (StatusCode::BAD_REQUEST, "body is not JSON").into_response();
    };
    match event["type"].as_str() {
        Some("url_verification") => {
            let body = json!({ "challenge": event["challenge"] }).to_string();
            ([(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        Some("event_callback") => wait(&listener, |reply| Job::Event(event, reply)).await,
        _ => StatusCode::OK.into_response(),
    }
}

/// Hand a job to the adapter and answer once it says whether the message was stored.
async fn wait(listener: &Listener, job: impl FnOnce(oneshot::Sender<bool>) -> Job) -> Response {
    let (reply, stored) = oneshot::channel();
    if listener.jobs.send(job(reply)).await.is_err() {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    match stored.await {
        Ok(true) => StatusCode::OK.into_response(),
        _ => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}
