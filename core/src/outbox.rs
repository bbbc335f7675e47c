//! The outbox's side in the core: what a person is to see on a chat platform is booked
//! in the store (`pincer_store::Booking`) before it goes on the outbound bus, and the
//! channel manager settles it once the platform has it (the store is its `Ledger`).
//! After a restart, `left_unsent` turns what the last run booked and never settled
//! back into messages — sent, not made again, once, in order, marked as sent after a
//! restart.
//!
//! Only the channels the gateway names (`keep_for`) are booked: a terminal, the web
//! chat and the stdio hosts have nobody to send to after a restart. Streamed deltas,
//! typing and the turn's markers are never booked; what they show is in the finished
//! text. A booking that cannot be stored (a full disk) is logged and the message goes
//! anyway: it is only not sent again after a crash.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use pincer_channels::{Chunk, Entry, OutboundBody, OutboundMedia, OutboundMessage, Receipt};
use tokio::sync::mpsc;

use crate::scrub::Scrubber;
use crate::store::{Booking, Item, Store, StoredFile, Unsent};

/// Added to what is sent again after a restart, so the person knows why it is late.
pub const RESENT: &str = "_(sent after a restart)_";

/// The outbound bus as the core's speakers see it: every body passes the scrubber, and
/// what a person is to see on a kept channel is booked first. Cheap to clone.
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::Sender<OutboundMessage>,
    scrubber: Arc<Scrubber>,
    store: Store,
    /// The channels whose messages are booked; none until the gateway says.
    kept: Arc<OnceLock<BTreeSet<String>>>,
}

impl Outbox {
    pub fn new(tx: mpsc::Sender<OutboundMessage>, scrubber: Arc<Scrubber>, store: Store) -> Self {
        Self {
            tx,
            scrubber,
            store,
            kept: Arc::default(),
        }
    }

    /// Book what goes to these channels from now on (the gateway's chat platforms).
    pub fn keep_for<'a>(&self, channels: impl IntoIterator<Item = &'a str>) {
        let _ = self
            .kept
            .set(channels.into_iter().map(str::to_string).collect());
    }

    /// Scrub, book and send; an error means the bus is closed (shutdown).
    pub async fn send(&self, mut message: OutboundMessage) -> Result<(), ()> {
        message.body = self.scrubber.scrub_body(message.body);
        self.book(&mut message, None, None).await;
        self.tx.send(message).await.map_err(|_| ())
    }

    /// Scrub and send without booking (a question a restart would leave unanswerable).
    pub async fn send_unkept(&self, mut message: OutboundMessage) -> Result<(), ()> {
        message.body = self.scrubber.scrub_body(message.body);
        self.tx.send(message).await.map_err(|_| ())
    }

    /// Book `message` (already scrubbed) if a person on a kept channel will see it:
    /// its entry goes with it. `session` and `source` (the assistant message its text
    /// came from) tie a reply to its conversation.
    pub async fn book(
        &self,
        message: &mut OutboundMessage,
        session: Option<i64>,
        source: Option<i64>,
    ) {
        if message.entry.is_some()
            || !self
                .kept
                .get()
                .is_some_and(|kept| kept.contains(&message.target.channel))
        {
            return;
        }
        let Some(item) = item(&message.body) else {
            return;
        };
        let booking = Booking {
            session_id: session,
            source,
            target: message.target.clone(),
            reply_to: message.reply_to.clone(),
            item,
        };
        match self.store.book(booking).await {
            Ok(id) => message.entry = Some(Entry { id, parts_sent: 0 }),
            Err(err) => tracing::warn!(
                channel = %message.target.channel,
                "a message goes out without its outbox entry (a crash before it is sent would lose it): {err}"
            ),
        }
    }

    /// Book the text of stored assistant message `source` and send it, marked as sent
    /// after a restart: a crash came between storing a reply and booking it.
    pub async fn send_stored_reply(
        &self,
        target: pincer_channels::Target,
        session: i64,
        source: i64,
        text: String,
    ) {
        let mut message = OutboundMessage::new(
            target,
            OutboundBody::Text(self.scrubber.scrub_owned(text)),
            None,
        );
        self.book(&mut message, Some(session), Some(source)).await;
        if let OutboundBody::Text(text) = &mut message.body {
            mark(text);
        }
        let _ = self.tx.send(message).await;
    }

    /// Send again what the last run booked and never settled, in order, each marked
    /// as sent after a restart; only to the channels kept now. Returns how many.
    pub async fn send_left_unsent(&self) -> usize {
        let unsent = match self.store.unsent().await {
            Ok(unsent) => unsent,
            Err(err) => {
                tracing::error!("cannot read what the last run left unsent: {err}");
                return 0;
            }
        };
        let kept = self.kept.get();
        let mut sent = 0;
        for unsent in unsent {
            if !kept.is_some_and(|kept| kept.contains(&unsent.booking.target.channel)) {
                continue;
            }
            tracing::info!(
                channel = %unsent.booking.target.channel,
                "sending what the last run left unsent"
            );
            if self.tx.send(again(unsent)).await.is_err() {
                break;
            }
            sent += 1;
        }
        sent
    }
}

/// What of `body` a person sees, as the outbox keeps it; `None` for what is not kept.
fn item(body: &OutboundBody) -> Option<Item> {
    Some(match body {
        OutboundBody::Text(text) | OutboundBody::Chunk(Chunk::TextEnd { text, .. })
            if !text.trim().is_empty() =>
        {
            Item::Text(text.clone())
        }
        OutboundBody::Notice(text) => Item::Notice(text.clone()),
        OutboundBody::Error(text)
        | OutboundBody::Chunk(Chunk::Error {
            error_text: text, ..
        }) => Item::Error(text.clone()),
        OutboundBody::File { media, .. } => Item::File(StoredFile {
            file_name: media.file_name.clone(),
            caption: media.caption.clone(),
            as_photo: media.as_photo,
            as_voice: media.as_voice,
            bytes: media.bytes.clone(),
        }),
        OutboundBody::React { message_id, emoji } => Item::React {
            message_id: message_id.clone(),
            emoji: emoji.clone(),
        },
        _ => return None,
    })
}

/// An unsent entry as the message that sends it again.
fn again(unsent: Unsent) -> OutboundMessage {
    let Unsent {
        id,
        booking,
        parts_sent,
        ..
    } = unsent;
    let body = match booking.item {
        Item::Text(mut text) => {
            mark(&mut text);
            OutboundBody::Text(text)
        }
        Item::Notice(mut text) => {
            mark(&mut text);
            OutboundBody::Notice(text)
        }
        Item::Error(mut text) => {
            mark(&mut text);
            OutboundBody::Error(text)
        }
        Item::File(file) => OutboundBody::File {
            media: OutboundMedia {
                caption: Some(match file.caption {
                    Some(caption) => format!("{caption}\n\n{RESENT}"),
                    None => RESENT.to_string(),
                }),
                file_name: file.file_name,
                bytes: file.bytes,
                source: None,
                as_photo: file.as_photo,
                as_voice: file.as_voice,
            },
            // Nobody waits on it now.
            sent: Receipt::pair().0,
        },
        Item::React { message_id, emoji } => OutboundBody::React { message_id, emoji },
    };
    OutboundMessage {
        target: booking.target,
        body,
        reply_to: booking.reply_to,
        entry: Some(Entry { id, parts_sent }),
    }
}

fn mark(text: &mut String) {
    text.push_str("\n\n");
    text.push_str(RESENT);
}
