//! The agent's side of the outbound bus for one turn: streamed deltas (never lost
//! when the bus is momentarily full), finished messages, errors and the turn's end.

use pincer_channels::{OutboundBody, OutboundMessage, Target};
use std::sync::Arc;

use tokio::sync::mpsc::{self, error::TrySendError};

use crate::scrub::Scrubber;

pub struct Reply {
    tx: mpsc::Sender<OutboundMessage>,
    target: Target,
    reply_to: Option<String>,
    /// Delta text the bus had no room for yet; sent ahead of the next piece.
    backlog: String,
    /// A scheduled run: nobody watches it stream, so only finished messages go out,
    /// and a heartbeat's "nothing to report" is not delivered at all.
    quiet: bool,
    /// Every text leaving for a channel passes it.
    scrubber: Arc<Scrubber>,
}

/// What a heartbeat answers when nothing needs the owner.
pub const HEARTBEAT_OK: &str = "HEARTBEAT_OK";

impl Reply {
    pub fn new(
        tx: mpsc::Sender<OutboundMessage>,
        target: Target,
        reply_to: Option<String>,
        quiet: bool,
        scrubber: Arc<Scrubber>,
    ) -> Self {
        Self {
            tx,
            target,
            reply_to,
            backlog: String::new(),
            quiet,
            scrubber,
        }
    }

    fn message(&self, body: OutboundBody) -> OutboundMessage {
        OutboundMessage {
            target: self.target.clone(),
            body,
            reply_to: self.reply_to.clone(),
        }
    }

    /// Called from the stream callback, which cannot wait.
    pub fn delta(&mut self, text: &str) {
        if self.quiet {
            return;
        }
        // Best effort: a secret split across two deltas passes here, but the finished
        // text, which replaces the streamed one where channels edit, is scrubbed whole.
        self.backlog.push_str(&self.scrubber.scrub(text));
        let body = OutboundBody::Delta(std::mem::take(&mut self.backlog));
        match self.tx.try_send(self.message(body)) {
            Ok(()) => {}
            Err(TrySendError::Full(message)) => {
                if let OutboundBody::Delta(text) = message.body {
                    self.backlog = text;
                }
            }
            // Nobody listens any more (shutdown); the text is in the store.
            Err(TrySendError::Closed(_)) => {}
        }
    }

    /// The reply streamed so far is abandoned (the model chain switched models).
    pub fn retract(&mut self) {
        self.backlog.clear();
        // Best effort like deltas: a full bus drops the retraction, and the finished
        // text still replaces the streamed one where the channel edits in place.
        let _ = self.tx.try_send(self.message(OutboundBody::Retract));
    }

    async fn send(&mut self, body: OutboundBody) {
        let body = match body {
            OutboundBody::Text { text, streamed } => OutboundBody::Text {
                text: self.scrubber.scrub(&text).into_owned(),
                streamed,
            },
            OutboundBody::Notice(text) => {
                OutboundBody::Notice(self.scrubber.scrub(&text).into_owned())
            }
            OutboundBody::Error(text) => {
                OutboundBody::Error(self.scrubber.scrub(&text).into_owned())
            }
            other => other,
        };
        if !self.backlog.is_empty() {
            let backlog = OutboundBody::Delta(std::mem::take(&mut self.backlog));
            let _ = self.tx.send(self.message(backlog)).await;
        }
        // A closed bus means shutdown; what was said is in the store.
        let _ = self.tx.send(self.message(body)).await;
    }

    /// A complete message whose text already went out as deltas.
    pub async fn finished_text(&mut self, text: String) {
        if text.trim().is_empty() || (self.quiet && text.trim() == HEARTBEAT_OK) {
            return;
        }
        let streamed = !self.quiet;
        self.send(OutboundBody::Text { text, streamed }).await;
    }

    pub async fn notice(&mut self, text: String) {
        self.send(OutboundBody::Notice(text)).await;
    }

    pub async fn error(&mut self, text: String) {
        self.send(OutboundBody::Error(text)).await;
    }

    pub async fn start(&mut self) {
        if !self.quiet {
            self.send(OutboundBody::TurnStart).await;
        }
    }

    pub async fn end(&mut self) {
        self.send(OutboundBody::TurnEnd).await;
    }
}
