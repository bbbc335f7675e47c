//! The dispatcher: takes admitted messages off the inbound bus, stores them (then
//! acks them to their adapter), answers chat commands, and hands each message to its
//! session's worker. One worker per session key runs turns strictly one at a time;
//! different sessions run side by side; idle workers are reaped. A finished turn's
//! reply may be spoken too (`speak`, `[voice]`).

mod commands;
mod lanes;
mod probe;
mod recover;
mod speak;

/// The chat commands, for hosts that list them or tell them from messages.
pub use commands::{Command, HELP, PinError, parse as parse_command};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pincer_channels::{
    Ack, Done, Inbound, InboundMessage, OutboundBody, OutboundMessage, SessionKey, Target,
    TurnFailed,
};
use pincer_config::QueueMode;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::access::{Decision, Gate, Rated};
use crate::agent::{Agent, Ended};
use crate::steering::{Pushed, Queued, SessionQueue, StopReason};
use crate::store::{Status, Store};

/// A message for the model on its way from the bus to its session's queue, the one
/// shape it has there: checked (`handle`), stored with the others taken off the bus
/// with it (`store_held`), its files read (`admit`), then queued as a `Queued`.
struct Arrival {
    /// The message as its adapter sent it; `admit` fetches its files into it.
    message: InboundMessage,
    /// Fired once it is stored (or is a redelivery of a stored one).
    ack: Option<Ack>,
    /// Told when the turn that answers it ends.
    done: Option<Done>,
    key: SessionKey,
    target: Target,
    /// The text as the model will read it (context and speaker added).
    text: String,
    origin: crate::access::Origin,
    rated: Rated,
    /// When the dispatcher took it off the bus (`Queued::arrived`).
    arrived: Instant,
}

/// Where a message was stored: its session, and its own id.
#[derive(Debug, Clone, Copy)]
struct Stored {
    session_id: i64,
    id: i64,
}

/// Why an arrival was not stored: it is not acked, so its platform delivers it again.
#[derive(Debug, thiserror::Error)]
enum NotStored {
    #[error(transparent)]
    Store(crate::store::StoreError),
    #[error("nothing stored")]
    Nothing,
}

pub struct Dispatcher {
    agent: Arc<Agent>,
    gate: Gate,
    /// Where messages are stored and sessions kept.
    store: Store,
    /// Where what the dispatcher says itself goes (command answers, notices).
    outbound: mpsc::Sender<OutboundMessage>,
    mode: QueueMode,
    /// A worker with nothing to do for this long exits (and frees its memory).
    idle: Duration,
    /// Live workers by session key; pushing and reaping both hold this lock, so a
    /// message never lands in a queue whose worker just left.
    sessions: Mutex<HashMap<SessionKey, Arc<SessionQueue>>>,
    workers: TaskTracker,
    /// Fired at shutdown: workers start no new turns.
    closing: CancellationToken,
    started: Instant,
    /// Turns running at once across all sessions: a burst of conversations queues
    /// here instead of opening a model connection (and its buffers) each.
    turns: Arc<tokio::sync::Semaphore>,
    /// Messages with files are admitted off the loop, in order per conversation.
    lanes: Arc<lanes::Lanes>,
    /// The questions waiting in chats with buttons: a message typed by the person asked
    /// answers theirs (`answer_questions`).
    questions: std::sync::OnceLock<Arc<pincer_channels::approval::PendingApprovals>>,
    /// The watchdog's questions to the loop (`answers`).
    probes: probe::Probes,
}

/// What a non-owner past `access.rate_per_minute` hears, once a minute.
const RATE_NOTICE: &str = "You're sending messages faster than I can answer; I'll skip the ones sent in the next minute. Please wait a moment.";

/// The most turns that run at the same time; the rest wait their turn, in order.
pub const MAX_PARALLEL_TURNS: usize = 32;

/// Messages taken off the bus together, and stored in one store call, at most.
const INBOUND_BATCH: usize = 64;

impl Dispatcher {
    pub fn new(
        agent: Arc<Agent>,
        gate: Gate,
        outbound: mpsc::Sender<OutboundMessage>,
        mode: QueueMode,
        idle: Duration,
    ) -> Arc<Self> {
        Arc::new(Self {
            store: agent.store().clone(),
            agent,
            gate,
            outbound,
            mode,
            idle,
            sessions: Mutex::new(HashMap::new()),
            workers: TaskTracker::new(),
            closing: CancellationToken::new(),
            started: Instant::now(),
            turns: Arc::new(tokio::sync::Semaphore::new(MAX_PARALLEL_TURNS)),
            lanes: Arc::default(),
            questions: std::sync::OnceLock::new(),
            probes: probe::Probes::new(),
        })
    }

    /// Take a message as the answer to the `question` waiting for its sender in its
    /// chat, when one waits there.
    pub fn answer_questions(&self, pending: Arc<pincer_channels::approval::PendingApprovals>) {
        let _ = self.questions.set(pending);
    }

    /// Whether the loop (`run`) answers: it does between batches, so a loop stuck in
    /// one, or ended, does not. Waits for the answer; the caller bounds the wait.
    pub async fn answers(&self) -> bool {
        self.probes.ask().await
    }

    /// Serve the bus until `shutdown`, then let running turns finish for up to
    /// `grace` before stopping them (their messages are answered after a restart).
    pub async fn run(
        self: Arc<Self>,
        mut inbound: mpsc::Receiver<Inbound>,
        shutdown: CancellationToken,
        grace: Duration,
    ) {
        let mut messages = Vec::with_capacity(INBOUND_BATCH);
        let mut held = Vec::with_capacity(INBOUND_BATCH);
        let mut probes = self.probes.take();
        loop {
            // What waits on the bus is taken together: its messages are stored in one
            // store call instead of one call (and one wait) each.
            let taken = tokio::select! {
                _ = shutdown.cancelled() => break,
                Some(probe) = probe::next(&mut probes) => {
                    let _ = probe.send(()); // the asker may have stopped waiting
                    continue;
                }
                taken = inbound.recv_many(&mut messages, INBOUND_BATCH) => taken,
            };
            if taken == 0 {
                break;
            }
            for message in messages.drain(..) {
                self.handle(message, &mut held).await;
            }
            self.store_held(&mut held).await;
        }
        self.closing.cancel();
        self.workers.close();
        if tokio::time::timeout(grace, self.workers.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "stopping turns still running after {}s; they resume after restart",
                grace.as_secs()
            );
            for queue in self.queues() {
                queue.stop_turn(StopReason::Shutdown);
            }
            self.workers.wait().await;
        }
    }

    /// Check a message and answer what is not for the model (commands, strangers, a
    /// question's answer); a message for the model is `held`, to be stored with the
    /// others taken off the bus with it. What `held` has is stored first whenever
    /// this message's handling could depend on it.
    async fn handle(self: &Arc<Self>, inbound: Inbound, held: &mut Vec<Arrival>) {
        let arrived = Instant::now();
        let Inbound {
            message,
            ack,
            mut done,
        } = inbound;
        crate::metrics::message_in(&message.channel);
        let key = message.session_key();
        let target = message.target();
        let (text, origin) = match self.gate.check(&message).await {
            Ok(Decision::Admit { text, origin }) => (text, origin),
            Ok(Decision::Reply { text, owners_note }) => {
                fire(ack);
                self.say_text(&target, Some(&message.message_id), text)
                    .await;
                if let Some(note) = owners_note {
                    for owner in self.gate.owner_targets(&message.channel) {
                        self.say_text(&owner, None, note.clone()).await;
                    }
                }
                return;
            }
            Ok(Decision::Refuse) => {
                fire(ack);
                return;
            }
            Err(err) => {
                // Not acked: the platform delivers it again once the store works.
                tracing::error!("cannot check who sent a message: {err}");
                return;
            }
        };
        // Non-owners are held to access.rate_per_minute, commands included.
        let rated = if origin.is_owner() {
            Rated::Within
        } else {
            self.gate.rate(&origin.sender)
        };
        // What answers the message names it (the web chat streams each request's own).
        let to = message.message_id.clone();
        if let Some(command) = commands::parse(&message.text) {
            // `/new` after a message must find it stored in the session it closes.
            self.store_held(held).await;
            fire(ack);
            if let Rated::Over { notify } = rated {
                if notify {
                    self.say_text(&target, Some(&to), RATE_NOTICE.to_string())
                        .await;
                }
                return;
            }
            if command == commands::Command::Dream {
                self.dream(&target, &to, &origin, done).await;
                return;
            }
            let text = self.command(command, &key, &message, &origin).await;
            self.say_text(&target, Some(&to), text).await;
            self.say(&target, Some(&to), OutboundBody::Done).await;
            return;
        }
        // The answer to a question the running turn asked them here: it goes to the
        // waiting call (as its result), not into the conversation as a new message.
        let typed = message.text.trim();
        let questions = self.questions.get().filter(|q| !q.is_empty());
        if questions.is_some() {
            // Messages before the answer reach the conversation before it does.
            self.store_held(held).await;
        }
        if matches!(rated, Rated::Within)
            && message.media.is_empty()
            && !typed.is_empty()
            && questions.is_some_and(|q| q.answer_typed(&target.key(), &origin.sender, typed))
        {
            fire(ack);
            // Taken in by the running turn, which asked: whoever waits on it hears so.
            if let Some(done) = done.take() {
                done.fire(Ok(()));
            }
            return;
        }
        held.push(Arrival {
            message,
            ack,
            done,
            key,
            target,
            text,
            origin,
            rated,
            arrived,
        });
    }

    /// Store the held messages in one call, then ack each and queue it for its session
    /// (or say it could not be saved, unacked, so its platform delivers it again).
    async fn store_held(self: &Arc<Self>, held: &mut Vec<Arrival>) {
        if held.is_empty() {
            return;
        }
        let row = |h: &Arrival| crate::store::Received {
            key: h.key.clone(),
            channel: h.message.channel.clone(),
            platform_id: h.message.message_id.clone(),
            sender: h.message.sender.canonical.clone(),
            text: h.text.clone(),
        };
        let stored: Vec<Result<_, NotStored>> =
            match self.store.receive_all(held.iter().map(row).collect()).await {
                Ok(stored) => stored.into_iter().map(Ok).collect(),
                Err(err) if held.len() == 1 => vec![Err(NotStored::Store(err))],
                Err(_) => {
                    // None was stored: each on its own, so one that cannot be stored costs
                    // the others nothing.
                    let mut each = Vec::with_capacity(held.len());
                    for h in held.iter() {
                        let one = self.store.receive_all(vec![row(h)]).await;
                        each.push(match one {
                            Ok(mut one) => one.pop().ok_or(NotStored::Nothing),
                            Err(err) => Err(NotStored::Store(err)),
                        });
                    }
                    each
                }
            };
        for (held, stored) in held.drain(..).zip(stored) {
            match stored {
                Ok((session_id, id)) => {
                    let stored = id.map(|id| Stored { session_id, id });
                    self.stored(held, stored).await;
                }
                Err(err) => {
                    // Not acked: the platform will deliver it again.
                    tracing::error!("cannot store a message: {err}");
                    let to = Some(held.message.message_id.as_str());
                    self.say(
                        &held.target,
                        to,
                        OutboundBody::Error(format!(
                            "Your message could not be saved ({err}). Please send it again."
                        )),
                    )
                    .await;
                    self.say(&held.target, to, OutboundBody::Done).await;
                }
            }
        }
    }

    /// A message once stored (`None` when it was a redelivery of a stored one).
    async fn stored(self: &Arc<Self>, mut arrival: Arrival, stored: Option<Stored>) {
        // Stored (or already stored): its adapter may confirm it.
        fire(arrival.ack.take());
        let Some(stored) = stored else {
            // A redelivery of a message we already have: nothing more to do.
            return;
        };
        if let Rated::Over { notify } = arrival.rated {
            // Kept in the transcript, never answered (and not answered after a restart);
            // its files are never fetched.
            tracing::info!(sender = %arrival.origin.sender, "over access.rate_per_minute; message stored, not answered");
            if let Err(err) = self
                .store
                .set_status(vec![stored.id], Status::Ignored)
                .await
            {
                tracing::warn!("cannot mark a rate-limited message: {err}");
            }
            if notify {
                let to = Some(arrival.message.message_id.as_str());
                self.say_text(&arrival.target, to, RATE_NOTICE.to_string())
                    .await;
            }
            return;
        }
        // A message with files, or one behind such a message of the same conversation,
        // is read off this loop: downloads, transcriptions and PDFs take seconds, and
        // nobody else's message may wait for them.
        if arrival.message.media.is_empty() && self.lanes.idle(&arrival.key) {
            self.admit(arrival, stored).await;
            return;
        }
        let place = self.lanes.join(&arrival.key);
        let this = Arc::clone(self);
        self.workers.spawn(async move {
            let lanes = Arc::clone(&this.lanes);
            lanes.run(place, this.admit(arrival, stored)).await;
        });
    }

    /// Fetch and read the stored message's files (the sender is admitted and within
    /// their rate), put what they say into it, and queue it for its session.
    async fn admit(self: &Arc<Self>, arrival: Arrival, stored: Stored) {
        let Arrival {
            mut message,
            done,
            key,
            target,
            mut text,
            origin,
            arrived,
            ..
        } = arrival;
        let Stored { session_id, id } = stored;
        if !message.media.is_empty() {
            let notes = self
                .gate
                .fetch_media(&mut message, &origin, self.agent.start_of_day_ms())
                .await;
            // Transcripts, inlined documents and pictures, from the files just saved.
            let digest = self.agent.media().digest(&message.media).await;
            // In a group, indented like the rest of a speaker's text: no line of it is a
            // speaker.
            let notes = notes + digest.text.as_str();
            match origin.place {
                crate::access::Place::Group => text.push_str(&crate::access::indent(&notes)),
                _ => text.push_str(&notes),
            }
            if let Err(err) = self.store.rewrite_user(id, &text, digest.images).await {
                tracing::error!("cannot store what a message's files hold: {err}");
            }
        }
        let to = message.message_id.clone();
        let item = Queued {
            session_id,
            message_ids: vec![id],
            text,
            origin,
            target: target.clone(),
            reply_to: Some(message.message_id),
            retry: false,
            attachment: !message.media.is_empty(),
            voice: message
                .media
                .iter()
                .any(|m| m.kind == pincer_channels::MediaKind::Voice),
            done: done.into_iter().collect(),
            task: None,
            // Files take seconds to fetch and read: not overhead.
            arrived: message.media.is_empty().then_some(arrived),
        };
        match self.enqueue(&key, item) {
            Pushed::Queued | Pushed::Folded => {}
            Pushed::Refused => {
                let text = "I'm still working and too many messages are waiting; yours is saved, but please resend it after my reply.".to_string();
                self.say_text(&target, Some(&to), text).await;
            }
        }
    }

    fn enqueue(self: &Arc<Self>, key: &SessionKey, item: Queued) -> Pushed {
        let Ok(mut sessions) = self.sessions.lock() else {
            return Pushed::Refused;
        };
        let queue = match sessions.get(key) {
            Some(queue) => Arc::clone(queue),
            None => {
                let queue = Arc::new(SessionQueue::new(self.mode));
                sessions.insert(key.clone(), Arc::clone(&queue));
                let this = Arc::clone(self);
                let worker_queue = Arc::clone(&queue);
                let key = key.clone();
                self.workers
                    .spawn(async move { this.worker(key, worker_queue).await });
                queue
            }
        };
        let pushed = queue.push(item);
        drop(sessions);
        if self.mode == QueueMode::Interrupt {
            queue.stop_turn(StopReason::Interrupted);
        }
        pushed
    }

    /// One session's worker: strictly one turn at a time.
    async fn worker(self: Arc<Self>, key: SessionKey, queue: Arc<SessionQueue>) {
        loop {
            if self.closing.is_cancelled() {
                return;
            }
            if !queue.is_empty() {
                let permit = tokio::select! {
                    permit = Arc::clone(&self.turns).acquire_owned() => permit,
                    _ = self.closing.cancelled() => return,
                };
                // Messages that came while waiting join the batch (steer, collect).
                if let Some(batch) = queue.next_batch() {
                    self.run_batch(&queue, batch).await;
                }
                drop(permit);
                continue;
            }
            tokio::select! {
                _ = queue.notify.notified() => {}
                _ = self.closing.cancelled() => return,
                _ = tokio::time::sleep(self.idle) => {
                    let Ok(mut sessions) = self.sessions.lock() else { return };
                    if queue.is_empty() {
                        sessions.remove(&key);
                        return;
                    }
                }
            }
        }
    }

    async fn run_batch(&self, queue: &SessionQueue, mut batch: Queued) {
        let store = &self.store;
        let status = if batch.retry {
            Status::Retried
        } else {
            Status::Active
        };
        if let Err(err) = store
            .take(batch.session_id, batch.message_ids.clone(), status)
            .await
        {
            tracing::error!("cannot start a turn: {err}");
        }
        let mut done = std::mem::take(&mut batch.done);
        let spoken = self
            .agent
            .media()
            .speaker
            .as_ref()
            .and_then(|s| speak::Spoken::wanted(&batch, s.reply));
        let control = queue.begin_turn();
        let report = self
            .agent
            .run_turn(batch.session_id, batch, queue, &control)
            .await;
        queue.end_turn();
        if let Some(spoken) = spoken {
            self.speak(spoken, &report.ended, &report.last_text).await;
        }
        if report.ended != Ended::Stopped(StopReason::Shutdown)
            && let Err(err) = store.set_status(report.answered, Status::Done).await
        {
            tracing::error!("cannot mark messages answered: {err}");
        }
        done.extend(report.done);
        let outcome = match &report.ended {
            Ended::Finished => Ok(()),
            other => Err(TurnFailed(
                other.notice().unwrap_or_else(|| "stopped".to_string()),
            )),
        };
        for handle in done {
            handle.fire(outcome.clone());
        }
    }

    /// Every text the dispatcher says (command answers, refusals, errors) is scrubbed:
    /// `/model <label>` echoes its input, `/memory` shows what the model wrote. What
    /// answers a message names it (`reply_to`).
    async fn say(&self, target: &Target, reply_to: Option<&str>, body: OutboundBody) {
        let message = OutboundMessage {
            target: target.clone(),
            body: self.agent.scrubber().scrub_body(body),
            reply_to: reply_to.map(str::to_string),
            entry: None,
        };
        // A closed bus means we are shutting down; nobody is left to tell.
        let _ = self.outbound.send(message).await;
    }

    pub(super) async fn say_text(&self, target: &Target, reply_to: Option<&str>, text: String) {
        self.say(target, reply_to, OutboundBody::Text(text)).await;
    }

    fn queues(&self) -> Vec<Arc<SessionQueue>> {
        self.sessions
            .lock()
            .map(|sessions| sessions.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Stop the turn running in `key` and its tasks (what `/stop` does); whether
    /// anything was running.
    pub fn stop(&self, key: &SessionKey) -> bool {
        let turn = self
            .queue(key)
            .is_some_and(|q| q.stop_turn(StopReason::User));
        let tasks = self.agent.tasks().stop_all(key, crate::tasks::Whose::All);
        turn || tasks > 0
    }

    fn queue(&self, key: &SessionKey) -> Option<Arc<SessionQueue>> {
        self.sessions.lock().ok().and_then(|s| s.get(key).cloned())
    }

    /// Sessions with a live worker (for `pincer status` and tests).
    pub fn live_sessions(&self) -> usize {
        self.sessions.lock().map(|s| s.len()).unwrap_or(0)
    }
}

/// Confirm a message to its adapter (stored, or deliberately not kept).
fn fire(ack: Option<Ack>) {
    if let Some(ack) = ack {
        ack.fire();
    }
}
