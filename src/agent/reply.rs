//! The agent's side of the outbound bus for one turn: streamed deltas (never lost
//! when the bus is momentarily full), finished messages, errors and the turn's end.
//! Every text passes the scrubber before it leaves; streamed text through a
//! `StreamScrubber`, so a secret split across deltas is still caught.

use pincer_channels::{OutboundBody, OutboundMessage, Target};
use std::sync::Arc;

use tokio::sync::mpsc::{self, error::TrySendError};

use super::clean::StreamCleaner;
use crate::scrub::{Scrubber, StreamScrubber};

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
    /// Streamed text, held back while it may end in part of a secret.
    stream: StreamScrubber,
    /// Streamed text, held back while it may be reasoning or leaked tool markup.
    cleaner: StreamCleaner,
    /// A subagent's turn: nothing goes to the chat (its answer goes to its parent).
    silent: bool,
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
            stream: StreamScrubber::new(Arc::clone(&scrubber)),
            scrubber,
            cleaner: StreamCleaner::default(),
            silent: false,
        }
    }

    /// Send nothing to the chat from now on.
    pub fn silence(&mut self) {
        self.silent = true;
        self.quiet = true;
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
        // Only what the cleaner and then the stream scrubber release: the end of the
        // text so far waits until the next delta or the finished message shows it is
        // neither a marker's nor a secret's start.
        let visible = self.cleaner.push(text);
        self.backlog.push_str(&self.stream.push(&visible));
        if self.backlog.is_empty() {
            return;
        }
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
        self.cleaner.reset();
        self.stream.discard();
        self.backlog.clear();
        if self.silent {
            return;
        }
        // Best effort like deltas: a full bus drops the retraction, and the finished
        // text still replaces the streamed one where the channel edits in place.
        let _ = self.tx.try_send(self.message(OutboundBody::Retract));
    }

    async fn send(&mut self, body: OutboundBody) {
        if self.silent {
            return;
        }
        // A finished text is scrubbed whole, whatever its deltas were.
        let body = self.scrubber.scrub_body(body);
        // What the cleaner holds is reasoning or a marker's start: the finished text,
        // cleaned whole, stands in for it.
        self.cleaner.reset();
        // Whatever comes next, the stream so far has ended: its held-back end goes
        // out (scrubbed) ahead of it.
        let rest = self.stream.finish();
        self.backlog.push_str(&rest);
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

    /// Acknowledge the person's message with `emoji` (`channels.<name>.ack_reaction`).
    pub async fn react(&mut self, emoji: &str) {
        let Some(message_id) = self.reply_to.clone().filter(|_| !self.quiet) else {
            return;
        };
        let emoji = emoji.to_string();
        self.send(OutboundBody::React { message_id, emoji }).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "pw-7Hq2xLz9Vb4Nc8Rt1Kd5";

    fn scrubber() -> Arc<Scrubber> {
        Arc::new(Scrubber::new(vec![SECRET.to_string()]))
    }

    fn reply(scrubber: &Arc<Scrubber>) -> (Reply, mpsc::Receiver<OutboundMessage>) {
        let (tx, rx) = mpsc::channel(1024);
        let target = Target::chat("terminal", "local", None);
        let reply = Reply::new(tx, target, None, false, Arc::clone(scrubber));
        (reply, rx)
    }

    fn drain(rx: &mut mpsc::Receiver<OutboundMessage>) -> Vec<OutboundBody> {
        let mut bodies = Vec::new();
        while let Ok(message) = rx.try_recv() {
            bodies.push(message.body);
        }
        bodies
    }

    /// The text of the deltas after the last retraction.
    fn streamed(bodies: &[OutboundBody]) -> String {
        let start = bodies
            .iter()
            .rposition(|b| *b == OutboundBody::Retract)
            .map_or(0, |i| i + 1);
        bodies[start..]
            .iter()
            .filter_map(|b| match b {
                OutboundBody::Delta(text) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn a_secret_split_across_two_deltas_never_reaches_the_channel() {
        let scrubber = scrubber();
        let text = format!("The key in .security.yml is {SECRET}; rotate it soon please.");
        for (at, _) in text.char_indices().skip(1) {
            let (mut reply, mut rx) = reply(&scrubber);
            reply.delta(&text[..at]);
            reply.delta(&text[at..]);
            reply.finished_text(text.clone()).await;
            let bodies = drain(&mut rx);
            let shown = streamed(&bodies);
            assert!(!shown.contains(SECRET), "cut at {at}: {shown}");
            assert_eq!(shown, scrubber.scrub(&text), "cut at {at}");
            // The held-back end went out before the finished message.
            let finished = OutboundBody::Text {
                text: scrubber.scrub(&text).into_owned(),
                streamed: true,
            };
            assert_eq!(bodies.last(), Some(&finished), "cut at {at}");
        }
    }

    #[tokio::test]
    async fn a_retracted_stream_drops_what_it_held_back() {
        let (mut reply, mut rx) = reply(&scrubber());
        reply.delta("an abandoned reply that ends in the middle of a long wo");
        reply.retract();
        reply.delta("fresh answer");
        reply.finished_text("fresh answer".into()).await;
        let bodies = drain(&mut rx);
        assert!(bodies.contains(&OutboundBody::Retract));
        assert_eq!(streamed(&bodies), "fresh answer");
    }
}
