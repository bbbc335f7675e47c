//! Which open `/api/chat` response an outbound message of the web chat goes to. Each
//! response answers one message, and `reply_to` names the message an outbound one
//! answers: a turn's chunks, a command's answer, and the marker `chat` sends when the
//! message was answered in another one's turn go to that message's response only, so
//! two requests never read each other's chunks. A complete message that names none (a
//! question or a file the running turn's tool sends, a background task's report) is shown
//! in the response whose turn is running, and never ends it; with no turn running it
//! reaches no response (the transcript keeps it). It never turns messages into chunks
//! (`wire` does).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pincer_channels::chunk::Chunk;
use pincer_channels::{OutboundBody, OutboundMessage};
use tokio::sync::mpsc;

use super::chat::CHANNEL;

/// Outbound messages one response may fall behind by before it is cut off.
const BACKLOG: usize = 1024;

/// Hands the web chat's outbound messages to the responses they belong to.
#[derive(Default)]
pub struct WebChat {
    routes: Mutex<Routes>,
}

#[derive(Default)]
struct Routes {
    /// The open responses, by the id of the message each answers.
    open: HashMap<String, mpsc::Sender<OutboundMessage>>,
    /// The message whose turn streams now (its `start` went out, its `finish` not yet):
    /// where what names no message is shown.
    running: Option<String>,
}

/// An open response; dropping it closes the route.
pub struct Opened {
    chat: Arc<WebChat>,
    id: String,
}

impl Drop for Opened {
    fn drop(&mut self) {
        if let Ok(mut routes) = self.chat.routes.lock() {
            routes.open.remove(&self.id);
        }
    }
}

impl WebChat {
    /// Open the response to the message `id`: what answers it arrives on the receiver
    /// while the returned handle lives.
    pub fn open(self: &Arc<Self>, id: &str) -> (Opened, mpsc::Receiver<OutboundMessage>) {
        let (tx, rx) = mpsc::channel(BACKLOG);
        if let Ok(mut routes) = self.routes.lock() {
            routes.open.insert(id.to_string(), tx);
        }
        let opened = Opened {
            chat: Arc::clone(self),
            id: id.to_string(),
        };
        (opened, rx)
    }

    /// Give `message` to the response it belongs to; one that is closed or hopelessly
    /// behind is dropped (its reader hears it was cut).
    pub fn deliver(&self, message: OutboundMessage) {
        let began = Instant::now();
        if let OutboundBody::File { sent, .. } = &message.body {
            sent.fire(Ok(CHANNEL.into()));
        }
        let seen = message.body.complete_text().is_some()
            || matches!(
                message.body,
                OutboundBody::Notice(_) | OutboundBody::Error(_) | OutboundBody::File { .. }
            );
        let mut shown = false;
        if let Ok(mut routes) = self.routes.lock()
            && let Some((id, message)) = routes.route(message)
            && let Some(tx) = routes.open.get(&id)
        {
            shown = tx.try_send(message).is_ok();
            if !shown {
                routes.open.remove(&id);
            }
        }
        if seen {
            // Nobody had the chat open: the reply is stored, but no one saw it go out.
            pincer_core::metrics::message_out(CHANNEL, shown.then(|| began.elapsed()));
        }
    }
}

impl Routes {
    /// The response `message` goes to, and the message as it goes there.
    fn route(&mut self, message: OutboundMessage) -> Option<(String, OutboundMessage)> {
        if let Some(id) = message.reply_to.clone() {
            match &message.body {
                OutboundBody::Chunk(Chunk::Start { .. }) => self.running = Some(id.clone()),
                OutboundBody::Chunk(Chunk::Finish { .. }) if self.running.as_ref() == Some(&id) => {
                    self.running = None;
                }
                _ => {}
            }
            return Some((id, message));
        }
        // Only whole messages: the chunks, `error` and end of a turn that answers no
        // open request (a scheduled run delivered here) must not break into this one.
        let body = match message.body {
            OutboundBody::Chunk(Chunk::TextEnd { text, .. }) if !text.trim().is_empty() => {
                OutboundBody::Text(text)
            }
            body
            @ (OutboundBody::Text(_) | OutboundBody::Notice(_) | OutboundBody::File { .. }) => body,
            _ => return None,
        };
        let id = self.running.clone()?;
        Some((id, OutboundMessage { body, ..message }))
    }
}

#[cfg(test)]
mod tests {
    use pincer_channels::{FinishReason, Target, TurnUsage};

    use super::*;

    fn to(reply_to: Option<&str>, body: OutboundBody) -> OutboundMessage {
        OutboundMessage {
            target: Target::chat(CHANNEL, "owner", None),
            body,
            reply_to: reply_to.map(str::to_string),
            entry: None,
        }
    }

    fn bodies(rx: &mut mpsc::Receiver<OutboundMessage>) -> Vec<OutboundBody> {
        std::iter::from_fn(|| rx.try_recv().ok().map(|m| m.body)).collect()
    }

    #[test]
    fn each_response_gets_its_own_message_and_the_running_turn_what_names_none() {
        let chat = Arc::new(WebChat::default());
        let (_a, mut a) = chat.open("a");
        let (_b, mut b) = chat.open("b");
        let start = OutboundBody::Chunk(Chunk::Start {
            message_id: "m".into(),
        });
        chat.deliver(to(Some("a"), start.clone()));
        // A question the running turn's tool asks names no message.
        chat.deliver(to(None, OutboundBody::Text("Which one?".into())));
        // A scheduled run's end, delivered here, must end nobody's response.
        let finish = OutboundBody::Chunk(Chunk::Finish {
            reason: FinishReason::Stop,
            usage: TurnUsage::default(),
        });
        chat.deliver(to(None, finish.clone()));
        chat.deliver(to(None, OutboundBody::Done));
        chat.deliver(to(
            Some("b"),
            OutboundBody::Text("Nothing is running.".into()),
        ));
        chat.deliver(to(Some("a"), finish.clone()));
        // No turn runs now: what names no message reaches nobody.
        chat.deliver(to(None, OutboundBody::Text("a report".into())));
        assert_eq!(
            bodies(&mut a),
            [start, OutboundBody::Text("Which one?".into()), finish]
        );
        assert_eq!(
            bodies(&mut b),
            [OutboundBody::Text("Nothing is running.".into())]
        );
    }

    #[test]
    fn a_response_closed_or_gone_closes_its_route() {
        let chat = Arc::new(WebChat::default());
        let open = |chat: &WebChat| chat.routes.lock().map(|r| r.open.len()).unwrap_or(9);
        let (opened, _rx) = chat.open("a");
        drop(opened);
        assert_eq!(open(&chat), 0, "the response ended");
        let (_opened, rx) = chat.open("b");
        drop(rx);
        chat.deliver(to(Some("b"), OutboundBody::Done));
        assert_eq!(open(&chat), 0, "its reader went away");
    }
}
