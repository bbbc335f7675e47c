//! One chat's delivery worker: messages to a chat go out strictly in order, paced,
//! with retries. It streams a reply by editing it in place where the channel can, and
//! keeps "typing…" alive from a turn's start to its end — stopped on every path out,
//! error or not.
//!
//! Streaming starts only once a reply has been coming for `FIRST_SHOW`: a reply that
//! finishes sooner goes out whole as one message (no placeholder, no edit); a longer one
//! is sent with the text so far and then edited as more arrives.
//!
//! Pacing: everything a person sees waits for a token from the chat's bucket and the
//! channel's. A progress edit of a streaming reply never waits: it goes only when both
//! buckets can spare a token and still keep one, and is skipped otherwise (the next
//! one, or the final text, shows what it would have) — so the final text, which takes
//! the kept token, is never held behind its own placeholder's edits.
//!
//! A worker whose target names a person (`Target::user`) opens their direct chat
//! before its first operation (retried like a send) and addresses that chat from then
//! on: text, edits and typing alike. A failure to open drops the message like a failed
//! send; after a permanent one, nothing is tried for `REOPEN_AFTER`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::pace::{Bucket, Pace};
use super::retry::with_retries;
use crate::channel::ChannelError;
use crate::chunk::Chunk;
use crate::direct;
use crate::ledger::Ledger;
use crate::message::{Entry, OutboundBody, OutboundMessage, Target};
use crate::registry::ChannelHandle;

/// A chat worker with nothing to do for this long exits (and frees its few KiB); far
/// longer than any platform's per-chat bucket takes to fill, so a fresh worker's full
/// bucket allows nothing the old one would not have.
const IDLE: Duration = Duration::from_secs(30);
/// How long a reply streams unseen before its first part is shown.
const FIRST_SHOW: Duration = Duration::from_millis(500);
/// After a person's direct chat could not be opened for good (an unknown user, DMs
/// closed), their messages are dropped without asking the platform again for this long.
const REOPEN_AFTER: Duration = Duration::from_secs(30);

pub(super) struct ChatWorker {
    handle: ChannelHandle,
    /// Where the messages go; a person's target becomes their direct chat's on first use.
    target: Target,
    /// Until when a person's direct chat is not asked for again (see `REOPEN_AFTER`).
    unreachable_until: Option<Instant>,
    pace: Pace,
    typing: Option<Typing>,
    /// A reply coming in, not shown yet: its text and when it began.
    pending: Option<(String, Instant)>,
    stream: Option<Stream>,
    /// Told what became of each message with an outbox entry.
    ledger: Option<Arc<dyn Ledger>>,
    /// The outbox entry of the message being delivered now.
    entry: Option<Entry>,
}

/// A reply being streamed into a message it edits.
struct Stream {
    message_id: String,
    text: String,
    last_edit: Instant,
    /// What the platform shows now (no edit is sent to show the same again).
    shown: String,
    /// The text outgrew one message; stop editing until the final delivery splits it.
    frozen: bool,
}

/// The "typing…" refresher; dropping it stops it.
struct Typing(JoinHandle<()>);

impl Drop for Typing {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl ChatWorker {
    pub(super) fn new(
        handle: ChannelHandle,
        target: Target,
        channel_bucket: Arc<Bucket>,
        ledger: Option<Arc<dyn Ledger>>,
    ) -> Self {
        let pace = Pace::new((handle.info.chat_rate)(&target), channel_bucket);
        Self {
            ledger,
            entry: None,
            handle,
            target,
            unreachable_until: None,
            pace,
            typing: None,
            pending: None,
            stream: None,
        }
    }

    /// Messages come boxed: a queue's buffer is a block of slots, and a chat queue
    /// of pointers costs a tenth of one of whole messages.
    pub(super) async fn run(mut self, mut rx: mpsc::Receiver<Box<OutboundMessage>>) {
        let mut next: Option<Box<OutboundMessage>> = None;
        loop {
            let wait = match &self.pending {
                Some((_, since)) => FIRST_SHOW.saturating_sub(since.elapsed()),
                None => IDLE,
            };
            let message = match next.take() {
                Some(message) => message,
                None => match tokio::time::timeout(wait, rx.recv()).await {
                    Ok(Some(message)) => message,
                    Ok(None) => break,
                    Err(_) if self.pending.is_some() => {
                        self.open_stream().await;
                        continue;
                    }
                    Err(_) if self.typing.is_none() && self.stream.is_none() => break,
                    Err(_) => continue,
                },
            };
            if !self.reachable().await {
                if seen(&message.body) {
                    super::delivered(&self.target.channel, None);
                }
                self.settle(message.entry, false).await;
                continue; // dropped; `reachable` said why
            }
            // Deltas that piled up while we waited on the platform go out as one, so a
            // slow chat never backs up the manager (and with it every other chat).
            if let OutboundBody::Chunk(Chunk::TextDelta {
                delta: mut text, ..
            }) = message.body
            {
                while let Ok(more) = rx.try_recv() {
                    match more.body {
                        OutboundBody::Chunk(Chunk::TextDelta { delta, .. }) => {
                            text.push_str(&delta);
                        }
                        _ => {
                            next = Some(more);
                            break;
                        }
                    }
                }
                self.delta(&text).await;
                continue;
            }
            self.handle(*message).await;
        }
        self.typing = None;
    }

    async fn handle(&mut self, message: OutboundMessage) {
        let began = seen(&message.body).then(Instant::now);
        let entry = message.entry;
        self.entry = entry;
        let delivered = self.act(message).await;
        self.entry = None;
        if let Some(began) = began {
            super::delivered(&self.target.channel, delivered.then(|| began.elapsed()));
        }
        self.settle(entry, delivered).await;
    }

    /// Tell the ledger what became of a message with an outbox entry; it returns once
    /// that is recorded, so nothing after it goes out before.
    async fn settle(&self, entry: Option<Entry>, delivered: bool) {
        if let (Some(entry), Some(ledger)) = (entry, &self.ledger) {
            ledger.settled(entry.id, delivered).await;
        }
    }

    /// Part `done` of `of` parts went out: a long text's progress is recorded before
    /// its next part is sent, so a restart between two sends neither.
    async fn progress(&self, done: usize, of: usize) {
        if done > 0
            && done < of
            && let (Some(entry), Some(ledger)) = (self.entry, &self.ledger)
        {
            ledger.progress(entry.id, done).await;
        }
    }

    /// The parts of this message the platform already has (a restart came between two).
    fn parts_sent(&self) -> usize {
        self.entry.map_or(0, |entry| entry.parts_sent)
    }

    /// Do what `message` asks; false if something to be seen did not reach the platform.
    async fn act(&mut self, message: OutboundMessage) -> bool {
        match message.body {
            OutboundBody::Chunk(chunk) => match chunk {
                Chunk::Start { .. } => self.start_typing(),
                Chunk::TextDelta { delta, .. } => self.delta(&delta).await,
                Chunk::Retract => {
                    if let Some(stream) = self.stream.as_mut() {
                        stream.text.clear();
                    }
                    self.pending = None;
                }
                // Only the streamed reply belongs in the placeholder; a command's
                // answer sent mid-stream goes out on its own.
                Chunk::TextEnd { text, .. } => return self.deliver(&text).await,
                Chunk::Error { error_text } => {
                    return self.send_all(&format!("⚠️ {error_text}")).await;
                }
                Chunk::Finish { .. } => self.end().await,
                // Reasoning, tool calls and steps are for other consumers.
                _ => {}
            },
            OutboundBody::Text(text) | OutboundBody::Notice(text) => {
                return self.send_all(&text).await;
            }
            OutboundBody::Error(text) => return self.send_all(&format!("⚠️ {text}")).await,
            OutboundBody::Done => self.end().await,
            OutboundBody::File { media, sent } => {
                let outcome = self.send_file(&media).await;
                let went = outcome.is_ok();
                sent.fire(outcome);
                return went;
            }
            OutboundBody::React { message_id, emoji } => self.react(&message_id, &emoji).await,
        }
        true
    }

    /// A file, paced and retried like a message; the error says why it did not go.
    async fn send_file(
        &mut self,
        media: &crate::channel::OutboundMedia,
    ) -> Result<String, ChannelError> {
        let Some(sender) = self.handle.media.clone() else {
            return Err(ChannelError::permanent(format!(
                "{} cannot send files",
                self.target.channel
            )));
        };
        // What streamed before the file stays before it.
        self.close_stream().await;
        self.pace().await;
        with_retries("send a file", || sender.send_media(&self.target, media))
            .await
            .inspect_err(|err| {
                tracing::warn!(channel = %self.target.channel, chat = %self.target.chat_id, "file not delivered: {err}");
            })
    }

    /// A reaction is a courtesy: tried once, and a failure only logged.
    async fn react(&self, message_id: &str, emoji: &str) {
        let Some(reactions) = self.handle.reactions.clone() else {
            return;
        };
        self.pace().await;
        if let Err(err) = reactions.react(&self.target, message_id, emoji).await {
            tracing::debug!(channel = %self.target.channel, "reaction not added: {err}");
        }
    }

    /// Whether the target can be addressed now: a person's target is resolved to their
    /// direct chat first (retried like a send).
    async fn reachable(&mut self) -> bool {
        if !self.target.user {
            return true;
        }
        let Some(opener) = self.handle.direct.clone() else {
            // The channel opens no direct chats: it addresses a person's private chat by
            // their user id (on Telegram a user's id is their private chat's id).
            self.target.user = false;
            return true;
        };
        if self
            .unreachable_until
            .is_some_and(|until| Instant::now() < until)
        {
            tracing::debug!(channel = %self.target.channel, user = %self.target.chat_id, "message dropped: their direct chat could not be opened");
            return false;
        }
        let person = self.target.clone();
        match with_retries("opening a direct chat", || {
            direct::resolve(opener.as_ref(), &person)
        })
        .await
        {
            Ok(chat) => {
                self.target = chat;
                self.unreachable_until = None;
                true
            }
            Err(err) => {
                tracing::error!(channel = %person.channel, user = %person.chat_id, "message not delivered: cannot open a direct chat with the user: {err}");
                if !err.retryable {
                    self.unreachable_until = Some(Instant::now() + REOPEN_AFTER);
                }
                false
            }
        }
    }

    fn start_typing(&mut self) {
        let Some(typing) = self.handle.typing.clone() else {
            return;
        };
        let target = self.target.clone();
        let every = self.handle.info.typing_interval;
        self.typing = Some(Typing(tokio::spawn(async move {
            loop {
                if let Err(err) = typing.typing(&target).await {
                    tracing::debug!("typing indicator failed: {err}");
                }
                tokio::time::sleep(every).await;
            }
        })));
    }

    async fn pace(&self) {
        self.pace.wait().await;
    }

    async fn delta(&mut self, text: &str) {
        if !self.handle.can_stream() {
            return; // no streaming here: the finished text is delivered whole
        }
        let Some(stream) = self.stream.as_mut() else {
            match self.pending.as_mut() {
                Some((pending, _)) => pending.push_str(text),
                None => self.pending = Some((text.to_string(), Instant::now())),
            }
            return;
        };
        stream.text.push_str(text);
        let (interval, split) = (self.handle.info.edit_interval, self.handle.info.split);
        if stream.frozen || stream.last_edit.elapsed() < interval {
            return;
        }
        if split(&stream.text).len() > 1 {
            stream.frozen = true;
            return;
        }
        let Some(editor) = self.handle.editor.clone() else {
            return;
        };
        if !self.pace.spare() {
            return; // skipped, not queued: a later delta or the final text shows it
        }
        stream.last_edit = Instant::now();
        stream.shown.clone_from(&stream.text);
        let (id, body) = (stream.message_id.clone(), stream.text.clone());
        // A failed progress edit is not worth retrying: the next one or the final delivery replaces it.
        if let Err(err) = editor.edit(&self.target, &id, &body).await {
            tracing::debug!("streaming edit failed: {err}");
        }
    }

    /// The reply has been coming for a while: show what there is, to edit from now on.
    async fn open_stream(&mut self) {
        let Some((text, _)) = self.pending.take() else {
            return;
        };
        let split = self.handle.info.split;
        let Some(first) = split(&text)
            .into_iter()
            .next()
            .filter(|t| !t.trim().is_empty())
        else {
            self.pending = Some((text, Instant::now())); // nothing to show yet
            return;
        };
        self.pace().await;
        let channel = Arc::clone(&self.handle.channel);
        match with_retries("send", || channel.send(&self.target, &first)).await {
            Ok(message_id) => {
                self.stream = Some(Stream {
                    frozen: split(&text).len() > 1,
                    message_id,
                    text,
                    last_edit: Instant::now(),
                    shown: first,
                });
            }
            Err(err) => {
                tracing::warn!(channel = %self.target.channel, "cannot start streaming: {err}");
            }
        }
    }

    /// Nothing more comes for this turn or command: stop typing, close the stream.
    async fn end(&mut self) {
        self.typing = None;
        self.close_stream().await;
    }

    /// A finished message: into the streamed message if one is shown, the rest after it.
    async fn deliver(&mut self, text: &str) -> bool {
        self.pending = None;
        let chunks = (self.handle.info.split)(text);
        let mut rest = chunks.as_slice();
        if let (Some(stream), Some(editor)) = (self.stream.take(), self.handle.editor.clone())
            && let Some((first, tail)) = chunks.split_first()
            && self.parts_sent() == 0
        {
            let edited = if *first == stream.shown {
                Ok(())
            } else {
                self.pace().await;
                with_retries("edit", || {
                    editor.edit(&self.target, &stream.message_id, first)
                })
                .await
            };
            match edited {
                Ok(()) => rest = tail,
                Err(err) => {
                    tracing::error!(channel = %self.target.channel, "reply not delivered into its streamed message: {err}; sending it anew")
                }
            }
        }
        let first = chunks.len() - rest.len();
        self.progress(first, chunks.len()).await;
        self.send_parts(&chunks, first).await
    }

    /// Whether every part went out.
    async fn send_all(&mut self, text: &str) -> bool {
        let chunks = (self.handle.info.split)(text);
        self.send_parts(&chunks, 0).await
    }

    /// Send `chunks` from `from` on (and not those the platform already has), each
    /// recorded as it goes while all before it went; whether every one went.
    async fn send_parts(&self, chunks: &[String], from: usize) -> bool {
        let mut sent = true;
        for (i, chunk) in chunks.iter().enumerate().skip(from.max(self.parts_sent())) {
            sent &= self.send_chunk(chunk).await;
            if sent {
                self.progress(i + 1, chunks.len()).await;
            }
        }
        sent
    }

    async fn send_chunk(&self, chunk: &str) -> bool {
        self.pace().await;
        let channel = Arc::clone(&self.handle.channel);
        if let Err(err) = with_retries("send", || channel.send(&self.target, chunk)).await {
            tracing::error!(channel = %self.target.channel, chat = %self.target.chat_id, "message not delivered: {err}");
            return false;
        }
        true
    }

    /// A turn ended with its reply unfinished (stopped mid-reply): leave what was
    /// streamed, or say that nothing came.
    async fn close_stream(&mut self) {
        if let Some((text, _)) = self.pending.take()
            && !text.trim().is_empty()
        {
            self.send_all(&text).await;
        }
        let (Some(stream), Some(editor)) = (self.stream.take(), self.handle.editor.clone()) else {
            return;
        };
        let split = self.handle.info.split;
        let text = if stream.text.trim().is_empty() {
            "…(stopped)".to_string()
        } else {
            stream.text
        };
        let first = split(&text).into_iter().next().unwrap_or_default();
        if first == stream.shown {
            return;
        }
        self.pace().await;
        if let Err(err) = with_retries("edit", || {
            editor.edit(&self.target, &stream.message_id, &first)
        })
        .await
        {
            tracing::warn!("cannot close the streamed reply: {err}");
        }
    }
}

/// Whether `body` is a message a person sees (reported to the manager's observer):
/// not a delta, a stream marker, typing or a reaction.
fn seen(body: &OutboundBody) -> bool {
    match body {
        OutboundBody::Text(_)
        | OutboundBody::Notice(_)
        | OutboundBody::Error(_)
        | OutboundBody::File { .. }
        | OutboundBody::Chunk(Chunk::Error { .. }) => true,
        OutboundBody::Chunk(Chunk::TextEnd { text, .. }) => !text.trim().is_empty(),
        _ => false,
    }
}
