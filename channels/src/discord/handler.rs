//! serenity's event handler. serenity runs each call in its own task, so this does as
//! little as it can: messages go to the listen loop's ordered forwarder untouched;
//! button presses are answered here at once (Discord wants an answer within 3 s, and
//! the forwarder may be busy); connection changes set the health. Every event is
//! something heard from Discord (the channel's pulse).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serenity::gateway::{ConnectionStage, ShardManager, ShardStageUpdateEvent};
use serenity::model::application::Interaction;
use serenity::model::channel::Message;
use serenity::model::event::ResumedEvent;
use serenity::model::gateway::Ready;
use serenity::prelude::{Context, EventHandler};
use tokio::sync::mpsc;

use super::buttons;
use super::rest::Rest;
use crate::approval::PendingApprovals;
use crate::channel::{Health, HealthCell};

/// What the handler passes to the listen loop.
#[derive(Debug)]
pub(super) enum Event {
    Message(Box<Message>),
    /// A new session began (READY): messages sent while no session was up must be
    /// fetched over REST.
    Ready,
    /// The connection was lost: what was seen so far is where a catch-up starts.
    Lost,
    /// The session was resumed: Discord replays what was missed, no catch-up needed.
    Resumed,
}

pub(super) struct Handler {
    pub events: mpsc::UnboundedSender<Event>,
    pub rest: Arc<Rest>,
    pub approvals: Arc<PendingApprovals>,
    pub health: Arc<HealthCell>,
    /// Set once the client is built; read for the true stage on a stage change.
    pub shards: Arc<Mutex<Option<Arc<ShardManager>>>>,
}

#[async_trait]
impl EventHandler for Handler {
    async fn message(&self, _ctx: Context, message: Message) {
        self.health.pulse().heard();
        // The listen loop is gone only at shutdown; nothing is left to tell then.
        let _ = self.events.send(Event::Message(Box::new(message)));
    }

    async fn ready(&self, _ctx: Context, ready: Ready) {
        tracing::info!(channel = super::CHANNEL, bot = %ready.user.name, "logged in to the gateway");
        self.health.pulse().heard();
        self.health.set(Health::Up);
        let _ = self.events.send(Event::Ready);
    }

    async fn resume(&self, _ctx: Context, _: ResumedEvent) {
        tracing::info!(channel = super::CHANNEL, "gateway session resumed");
        self.health.pulse().heard();
        self.health.set(Health::Up);
        let _ = self.events.send(Event::Resumed);
    }

    async fn shard_stage_update(&self, _ctx: Context, event: ShardStageUpdateEvent) {
        // Stage reports run in parallel tasks; read where the shard really is now.
        let manager = self.shards.lock().ok().and_then(|m| m.clone());
        let stage = match manager {
            Some(manager) => manager
                .runners
                .lock()
                .await
                .get(&event.shard_id)
                .map_or(event.new, |runner| runner.stage),
            None => event.new,
        };
        if stage == ConnectionStage::Connected {
            self.health.set(Health::Up);
        } else if self.health.get() == Health::Up {
            self.health.set(Health::Degraded(format!(
                "reconnecting: the gateway connection was lost ({stage})"
            )));
            let _ = self.events.send(Event::Lost);
        }
    }

    async fn interaction_create(&self, _ctx: Context, interaction: Interaction) {
        self.health.pulse().heard();
        if let Interaction::Component(press) = interaction {
            buttons::pressed(&self.rest, &self.approvals, &press).await;
        }
    }
}
