//! The agent's side of the outbound bus for one turn: the turn's one stream of chunks
//! (`pincer_channels::chunk`) — its start, each model call's text and reasoning as they
//! stream, its tool calls and their results, its end with what it used — plus notices
//! and reactions. Streamed text is never lost when the bus is momentarily full, and
//! every text passes the scrubber before it leaves: streamed text through a
//! `StreamScrubber`, so a secret split across deltas is still caught, and through the
//! `StreamCleaner`, so reasoning or tool markup a model leaks never shows. Before all
//! that, each model call's text passes a runaway `Guard`: a reply that writes template
//! tokens or loops is stopped there — the call is cancelled through the token
//! `watch_call` gave — and the person is told why, in one sentence, after what came
//! before.

use std::sync::Arc;

use pincer_channels::{Chunk, FinishReason, OutboundBody, OutboundMessage, Target, TurnUsage};
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio_util::sync::CancellationToken;

use pincer_config::TextToolCalls;

use super::clean::{Released, StreamCleaner};
use super::runaway::{Cut, Guard};
use crate::provider::ToolSpec;
use crate::scrub::{Scrubber, StreamScrubber};

pub(super) struct Reply {
    tx: mpsc::Sender<OutboundMessage>,
    target: Target,
    reply_to: Option<String>,
    /// Chunks the bus had no room for yet (deltas sent from the stream callback, which
    /// cannot wait); sent ahead of the next one.
    backlog: Vec<Chunk>,
    /// A scheduled run: nobody watches it stream, so only finished messages go out,
    /// and a heartbeat's "nothing to report" is not delivered at all.
    quiet: bool,
    /// A subagent's turn: nothing goes to the chat (its answer goes to its parent).
    silent: bool,
    /// Every text leaving for a channel passes it.
    scrubber: Arc<Scrubber>,
    /// Streamed text, held back while it may end in part of a secret.
    stream: StreamScrubber,
    /// Streamed reasoning, likewise.
    thoughts: StreamScrubber,
    /// Streamed text, held back while it may be reasoning or leaked tool markup.
    cleaner: StreamCleaner,
    /// The model call's text, watched for template tokens and loops before anything.
    guard: Guard,
    /// Cancelled when the guard stops the reply: the turn hangs up on the model.
    hang_up: CancellationToken,
    /// Why a reply was stopped, said after its text.
    stopped: Option<String>,
    /// The turn's assistant message id; block ids are made from it.
    message_id: String,
    /// Blocks made so far, for fresh ids.
    blocks: u32,
    /// The open text block, if any.
    text_block: Option<String>,
    /// What the open block's deltas have shown since it opened (or was retracted).
    shown: String,
    /// What the current model call's text showed the person (after the cleaner and the
    /// scrubber; what a quiet turn would have shown): what a turn cut short keeps.
    call_shown: String,
    /// The open reasoning block, if any.
    reasoning_block: Option<String>,
    /// A model call is in progress (`start-step` sent, `finish-step` not yet).
    in_step: bool,
    /// Where what a person sees is booked before it goes (`crate::outbox`), with the
    /// turn's session.
    outbox: Option<(crate::outbox::Outbox, i64)>,
    /// The stored assistant message the next finished text comes from.
    source: Option<i64>,
}

/// What a heartbeat answers when nothing needs the owner.
pub const HEARTBEAT_OK: &str = "HEARTBEAT_OK";

impl Reply {
    pub(super) fn new(
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
            backlog: Vec::new(),
            quiet,
            silent: false,
            stream: StreamScrubber::new(Arc::clone(&scrubber)),
            thoughts: StreamScrubber::new(Arc::clone(&scrubber)),
            scrubber,
            cleaner: StreamCleaner::default(),
            guard: Guard::default(),
            hang_up: CancellationToken::new(),
            stopped: None,
            message_id: format!("msg-{}", crate::store::now_ms()),
            blocks: 0,
            text_block: None,
            shown: String::new(),
            call_shown: String::new(),
            reasoning_block: None,
            in_step: false,
            outbox: None,
            source: None,
        }
    }

    /// Book what a person sees in `outbox` before it goes, as part of `session`.
    pub(super) fn keep(&mut self, outbox: crate::outbox::Outbox, session: i64) {
        self.outbox = Some((outbox, session));
    }

    /// The next finished text comes from stored assistant message `id`.
    pub(super) fn next_text_from(&mut self, id: i64) {
        self.source = Some(id);
    }

    /// Send nothing to the chat from now on.
    pub(super) fn silence(&mut self) {
        self.silent = true;
        self.quiet = true;
    }

    fn message(&self, body: OutboundBody) -> OutboundMessage {
        OutboundMessage {
            target: self.target.clone(),
            body,
            reply_to: self.reply_to.clone(),
            entry: None,
        }
    }

    fn next_id(&mut self, kind: &str) -> String {
        self.blocks += 1;
        format!("{}-{kind}{}", self.message_id, self.blocks)
    }

    /// Queue a chunk from the stream callback, which cannot wait: what the bus has no
    /// room for waits in the backlog, in order.
    fn push(&mut self, chunk: Chunk) {
        if self.silent {
            return;
        }
        self.backlog.push(chunk);
        while !self.backlog.is_empty() {
            let chunk = self.backlog.remove(0);
            match self.tx.try_send(self.message(OutboundBody::Chunk(chunk))) {
                Ok(()) => {}
                Err(TrySendError::Full(message)) => {
                    if let OutboundBody::Chunk(chunk) = message.body {
                        self.backlog.insert(0, chunk);
                    }
                    return;
                }
                // Nobody listens any more (shutdown); the text is in the store.
                Err(TrySendError::Closed(_)) => {
                    self.backlog.clear();
                    return;
                }
            }
        }
    }

    /// Send what waits in the backlog, then `body`, waiting for room.
    async fn send(&mut self, body: OutboundBody) {
        if self.silent {
            return;
        }
        for chunk in std::mem::take(&mut self.backlog) {
            // A closed bus means shutdown; what was said is in the store.
            let _ = self.tx.send(self.message(OutboundBody::Chunk(chunk))).await;
        }
        let finished = matches!(body, OutboundBody::Chunk(Chunk::TextEnd { .. }));
        let mut message = self.message(body);
        if let Some((outbox, session)) = &self.outbox {
            let source = if finished { self.source.take() } else { None };
            outbox.book(&mut message, Some(*session), source).await;
        }
        let _ = self.tx.send(message).await;
    }

    async fn send_chunk(&mut self, chunk: Chunk) {
        let body = self.scrubber.scrub_body(OutboundBody::Chunk(chunk));
        self.send(body).await;
    }

    /// A model call begins.
    pub(super) async fn step_start(&mut self) {
        if self.quiet || self.in_step {
            return;
        }
        self.in_step = true;
        self.send_chunk(Chunk::StartStep).await;
    }

    /// A model call and its tools are done.
    pub(super) async fn step_finish(&mut self) {
        self.close_reasoning();
        if !self.in_step {
            return;
        }
        self.in_step = false;
        self.send_chunk(Chunk::FinishStep).await;
    }

    /// A model call begins that offered `offered`, to a model that reads calls written
    /// as text as `mode` says: its stream is watched afresh, and the token returned is
    /// cancelled the moment it runs away.
    pub(super) fn watch_call(
        &mut self,
        offered: &[ToolSpec],
        mode: TextToolCalls,
    ) -> CancellationToken {
        self.guard.reset();
        // A stopped reply that left nothing to say is followed by another call (a
        // stronger model's): its answer is what the person gets.
        self.stopped = None;
        self.call_shown.clear();
        self.cleaner.offer(offered, mode);
        self.hang_up = CancellationToken::new();
        self.hang_up.clone()
    }

    /// The tools the current model call offered.
    pub(super) fn offered(&self) -> &[ToolSpec] {
        self.cleaner.offered()
    }

    /// Where the current model call's reply was stopped, if it was; the person is told
    /// why after its text, unless the stream `ended` on its own just after a stray
    /// template token (a call hung up on may have run on: that is said).
    pub(super) fn take_cut(&mut self, ended: bool) -> Option<Cut> {
        let cut = self.guard.take_cut()?;
        if cut.ran_on || !ended {
            self.stopped = Some(cut.why.sentence());
        }
        Some(cut)
    }

    /// Called from the stream callback, which cannot wait.
    pub(super) fn delta(&mut self, text: &str) {
        // Watched even where nobody sees it stream: a scheduled run loops too.
        let text = self.guard.push(text);
        if self.guard.cut().is_some() {
            self.hang_up.cancel();
        }
        self.show(&text);
    }

    /// The model call's stream ended whole: what the guard still held goes on (a reply
    /// continued after its token limit is shown across calls).
    pub(super) fn call_ended(&mut self) {
        let rest = self.guard.finish();
        self.show(&rest);
    }

    /// What the current model call's text showed the person, taken (a turn cut short
    /// keeps it: never a call's markup, reasoning, or a secret).
    pub(super) fn take_call_shown(&mut self) -> String {
        std::mem::take(&mut self.call_shown)
    }

    /// Text the guard let through, on to the cleaner, the scrubber and the channel.
    fn show(&mut self, text: &str) {
        let released = self.cleaner.push(text);
        self.release(released);
    }

    /// What the cleaner released, on to the scrubber and the channel. A quiet turn
    /// sends nothing, but notes what it would have shown.
    fn release(&mut self, released: Released) {
        if released.retract {
            // What streamed was reasoning after all: channels clear it.
            self.stream.discard();
            self.shown.clear();
            self.call_shown.clear();
            if !self.quiet && self.text_block.is_some() {
                self.push(Chunk::Retract);
            }
        }
        if !self.quiet {
            self.close_reasoning();
        }
        // Only what the cleaner and then the stream scrubber release: the end of the
        // text so far waits until the next delta or the finished message shows it is
        // neither a marker's nor a secret's start.
        let released = self.stream.push(&released.text);
        if released.is_empty() {
            return;
        }
        self.call_shown.push_str(&released);
        if self.quiet {
            return;
        }
        let id = match &self.text_block {
            Some(id) => id.clone(),
            None => {
                let id = self.next_id("t");
                self.text_block = Some(id.clone());
                self.push(Chunk::TextStart { id: id.clone() });
                id
            }
        };
        self.shown.push_str(&released);
        self.push(Chunk::TextDelta {
            id,
            delta: released,
        });
    }

    /// Reasoning as it streams (from the provider's own field).
    pub(super) fn reasoning(&mut self, text: &str) {
        if self.quiet {
            return;
        }
        let released = self.thoughts.push(text);
        if released.is_empty() {
            return;
        }
        let id = match &self.reasoning_block {
            Some(id) => id.clone(),
            None => {
                let id = self.next_id("r");
                self.reasoning_block = Some(id.clone());
                self.push(Chunk::ReasoningStart { id: id.clone() });
                id
            }
        };
        self.push(Chunk::ReasoningDelta {
            id,
            delta: released,
        });
    }

    fn close_reasoning(&mut self) {
        if let Some(id) = self.reasoning_block.take() {
            let rest = self.thoughts.finish();
            if !rest.is_empty() {
                self.push(Chunk::ReasoningDelta {
                    id: id.clone(),
                    delta: rest,
                });
            }
            self.push(Chunk::ReasoningEnd { id });
        }
    }

    /// The model made a structured tool call: JSON held back as a call written as text
    /// may be text after all.
    pub(super) fn structured_call(&mut self) {
        let released = self.cleaner.structured_call();
        self.release(released);
    }

    /// The model began a tool call.
    pub(super) fn tool_started(&mut self, id: &str, name: &str) {
        self.structured_call();
        if self.quiet {
            return;
        }
        self.close_reasoning();
        self.push(Chunk::ToolInputStart {
            tool_call_id: id.to_string(),
            tool_name: name.to_string(),
        });
    }

    /// A tool call's input is complete (`started`: its start was already sent).
    pub(super) async fn tool_input(
        &mut self,
        id: &str,
        name: &str,
        input: &serde_json::Value,
        started: bool,
    ) {
        if self.quiet {
            return;
        }
        if !started {
            self.tool_started(id, name);
        }
        self.send_chunk(Chunk::ToolInputAvailable {
            tool_call_id: id.to_string(),
            tool_name: name.to_string(),
            input: input.clone(),
        })
        .await;
    }

    /// A tool call's result.
    pub(super) async fn tool_output(&mut self, id: &str, content: &str, is_error: bool) {
        if self.quiet {
            return;
        }
        let chunk = if is_error {
            Chunk::ToolOutputError {
                tool_call_id: id.to_string(),
                error_text: content.to_string(),
            }
        } else {
            Chunk::ToolOutputAvailable {
                tool_call_id: id.to_string(),
                output: content.to_string(),
            }
        };
        self.send_chunk(chunk).await;
    }

    /// The reply streamed so far is abandoned (the model chain switched models).
    pub(super) fn retract(&mut self) {
        self.guard.reset();
        self.cleaner.reset();
        self.stream.discard();
        self.shown.clear();
        self.call_shown.clear();
        if self.quiet {
            return;
        }
        // The block stays open for the next model's text; channels clear what they
        // showed of it.
        self.push(Chunk::Retract);
    }

    /// A complete message whose text went out as deltas (or, quiet, goes out now).
    ///
    /// A block's deltas always add up to its text where they can: a face that shows
    /// only deltas (ACP, the runner, the web chat) must not get an empty block for a
    /// reply that came in one chunk and was held back whole ("Yes.").
    pub(super) async fn finished_text(&mut self, text: String) {
        // What the cleaner holds is reasoning or a marker's start: dropped (the finished
        // text is clean). What the scrubber holds was waiting to see whether a secret
        // began there.
        self.cleaner.reset();
        let held = self.stream.finish();
        let shown = std::mem::take(&mut self.shown);
        let id = self.text_block.take();
        let nothing = text.trim().is_empty() || (self.quiet && text.trim() == HEARTBEAT_OK);
        if nothing && id.is_none() {
            self.say_why_stopped().await;
            return;
        }
        let id = match id {
            Some(id) => id,
            None => {
                let id = self.next_id("t");
                self.send_chunk(Chunk::TextStart { id: id.clone() }).await;
                id
            }
        };
        if !self.quiet {
            let delta = if nothing {
                held
            } else {
                let whole = self.scrubber.scrub(&text);
                if shown.is_empty() {
                    whole.into_owned()
                } else {
                    // What the stream showed is the start of the finished text unless
                    // the cleaner took something out of the middle: then only what it
                    // still held goes out.
                    match whole.strip_prefix(shown.as_str()) {
                        Some(rest) => rest.to_string(),
                        None => held,
                    }
                }
            };
            if !delta.is_empty() {
                self.push(Chunk::TextDelta {
                    id: id.clone(),
                    delta,
                });
            }
        }
        self.send_chunk(Chunk::TextEnd { id, text }).await;
        self.say_why_stopped().await;
    }

    /// The sentence saying why the reply was stopped, once, after its text.
    async fn say_why_stopped(&mut self) {
        if let Some(sentence) = self.stopped.take() {
            self.notice(sentence).await;
        }
    }

    pub(super) async fn notice(&mut self, text: String) {
        let body = self.scrubber.scrub_body(OutboundBody::Notice(text));
        self.send(body).await;
    }

    pub(super) async fn error(&mut self, text: String) {
        self.send_chunk(Chunk::Error { error_text: text }).await;
    }

    /// Acknowledge the person's message with `emoji` (`channels.<name>.ack_reaction`).
    pub(super) async fn react(&mut self, emoji: &str) {
        let Some(message_id) = self.reply_to.clone().filter(|_| !self.quiet) else {
            return;
        };
        let emoji = emoji.to_string();
        self.send(OutboundBody::React { message_id, emoji }).await;
    }

    pub(super) async fn start(&mut self) {
        if !self.quiet {
            let message_id = self.message_id.clone();
            self.send_chunk(Chunk::Start { message_id }).await;
        }
    }

    pub(super) async fn end(&mut self, reason: FinishReason, usage: TurnUsage) {
        self.close_reasoning();
        if self.in_step {
            self.in_step = false;
            self.push(Chunk::FinishStep);
        }
        self.send_chunk(Chunk::Finish { reason, usage }).await;
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

    fn drain(rx: &mut mpsc::Receiver<OutboundMessage>) -> Vec<Chunk> {
        let mut chunks = Vec::new();
        while let Ok(message) = rx.try_recv() {
            if let OutboundBody::Chunk(chunk) = message.body {
                chunks.push(chunk);
            }
        }
        chunks
    }

    /// The text of the deltas after the last retraction.
    fn streamed(chunks: &[Chunk]) -> String {
        let start = chunks
            .iter()
            .rposition(|c| *c == Chunk::Retract)
            .map_or(0, |i| i + 1);
        chunks[start..]
            .iter()
            .filter_map(|c| match c {
                Chunk::TextDelta { delta, .. } => Some(delta.as_str()),
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
            let chunks = drain(&mut rx);
            let shown = streamed(&chunks);
            assert!(!shown.contains(SECRET), "cut at {at}: {shown}");
            // The finished message, scrubbed whole, ends the block.
            match chunks.last() {
                Some(Chunk::TextEnd { text: done, .. }) => {
                    assert_eq!(done, &scrubber.scrub(&text), "cut at {at}");
                }
                other => panic!("cut at {at}: ended with {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn a_reply_held_back_whole_still_reaches_the_deltas() {
        for text in ["Yes.", "after", "ok", "The answer is 42."] {
            let (mut reply, mut rx) = reply(&scrubber());
            reply.delta(text);
            reply.finished_text(text.to_string()).await;
            let chunks = drain(&mut rx);
            assert_eq!(streamed(&chunks), text, "{chunks:?}");
        }
        // Held back in two pieces: the deltas still add up to the text, once.
        let (mut reply, mut rx) = reply(&scrubber());
        reply.delta("Sure, ");
        reply.delta("I can.");
        reply.finished_text("Sure, I can.".into()).await;
        assert_eq!(streamed(&drain(&mut rx)), "Sure, I can.");
    }

    #[tokio::test]
    async fn a_retracted_stream_drops_what_it_held_back() {
        let (mut reply, mut rx) = reply(&scrubber());
        reply.delta("an abandoned reply that ends in the middle of a long wo");
        reply.retract();
        reply.delta("fresh answer");
        reply.finished_text("fresh answer".into()).await;
        let chunks = drain(&mut rx);
        assert!(chunks.contains(&Chunk::Retract));
        assert!(streamed(&chunks).starts_with("fresh"));
    }

    #[tokio::test]
    async fn a_runaway_reply_hangs_up_and_says_why_after_its_text() {
        for quiet in [false, true] {
            let (tx, mut rx) = mpsc::channel(1024);
            let target = Target::chat("terminal", "local", None);
            let mut reply = Reply::new(tx, target, None, quiet, scrubber());
            let hang_up = reply.watch_call(&[], TextToolCalls::Off);
            reply.delta("hello");
            assert!(!hang_up.is_cancelled());
            reply.delta("<|im_end|>\n<|im_start|>user\nhi");
            assert!(hang_up.is_cancelled(), "quiet: {quiet}");
            // What the stream had already read goes nowhere.
            reply.delta(" again<|im_end|>");
            let cut = reply.take_cut(true).expect("cut");
            assert_eq!(cut.kept, "hello");
            reply.finished_text(cut.kept).await;
            let mut bodies = Vec::new();
            while let Ok(message) = rx.try_recv() {
                bodies.push(message.body);
            }
            let shown: String = bodies
                .iter()
                .filter_map(|b| match b {
                    OutboundBody::Chunk(Chunk::TextDelta { delta, .. }) => Some(delta.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(shown, if quiet { "" } else { "hello" });
            assert!(
                matches!(bodies.iter().rev().nth(1), Some(OutboundBody::Chunk(Chunk::TextEnd { text, .. })) if text == "hello"),
                "{bodies:?}"
            );
            match bodies.last() {
                Some(OutboundBody::Notice(why)) => assert!(why.contains("<|im_end|>"), "{why}"),
                other => panic!("ended with {other:?}"),
            }
            // A new call starts clean.
            let hang_up = reply.watch_call(&[], TextToolCalls::Off);
            reply.delta("fine");
            assert!(!hang_up.is_cancelled());
            assert!(reply.take_cut(true).is_none());
        }
    }

    #[tokio::test]
    async fn a_stray_token_at_the_end_is_dropped_without_a_word() {
        // The stream ended on its own just after the token: nothing to explain. Hung up
        // on right after it, the model may have gone on: that is said.
        for (ended, said) in [(true, 0), (false, 1)] {
            let (mut reply, mut rx) = reply(&scrubber());
            let hang_up = reply.watch_call(&[], TextToolCalls::Off);
            reply.delta("All done.<|im_end|>");
            assert!(hang_up.is_cancelled());
            let cut = reply.take_cut(ended).expect("cut");
            reply.finished_text(cut.kept).await;
            let mut notices = 0;
            while let Ok(message) = rx.try_recv() {
                notices += usize::from(matches!(message.body, OutboundBody::Notice(_)));
            }
            assert_eq!(notices, said, "ended: {ended}");
        }
    }

    #[tokio::test]
    async fn a_turn_is_one_well_ordered_stream() {
        let (mut reply, mut rx) = reply(&scrubber());
        reply.start().await;
        reply.step_start().await;
        reply.reasoning("thinking about it");
        reply.delta("Let me look.");
        reply.tool_started("c1", "read_file");
        reply.finished_text("Let me look.".into()).await;
        reply
            .tool_input("c1", "read_file", &serde_json::json!({"path": "a"}), true)
            .await;
        reply.tool_output("c1", "hello", false).await;
        reply.step_finish().await;
        reply.step_start().await;
        reply.delta("It says hello.");
        reply.finished_text("It says hello.".into()).await;
        reply.end(FinishReason::Stop, TurnUsage::default()).await;
        let chunks = drain(&mut rx);
        assert_eq!(pincer_channels::chunk::check_order(&chunks), Ok(()));
        let mut kinds: Vec<&str> = chunks.iter().filter_map(Chunk::kind).collect();
        // A block's text may come in more deltas than it was given in (held back, then
        // released): one kind per run.
        kinds.dedup();
        assert_eq!(
            kinds,
            [
                "start",
                "start-step",
                "reasoning-start",
                "reasoning-delta",
                "reasoning-end",
                "text-start",
                "text-delta",
                "tool-input-start",
                // The end the scrubber held back, released with the finished text.
                "text-delta",
                "text-end",
                "tool-input-available",
                "tool-output-available",
                "finish-step",
                "start-step",
                "text-start",
                "text-delta",
                "text-end",
                "finish-step",
                "finish"
            ]
        );
    }
}
