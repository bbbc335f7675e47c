//! One session's inbox and the handle on its running turn. Messages that arrive
//! while a turn runs wait here; `queue_mode` decides how they reach the model. The
//! queue is bounded: past the cap, new text is folded into the last waiting entry
//! (never dropped), and past the text cap the sender is told to wait.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Instant;

use pincer_channels::Target;
use pincer_config::QueueMode;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::access::Origin;

/// Waiting entries per session before new ones are folded together.
pub const MAX_QUEUED: usize = 16;
/// The most text a folded entry may grow to.
pub const MAX_FOLDED_BYTES: usize = 16 * 1024;

/// A stored user message waiting for its turn.
#[derive(Debug)]
pub struct Queued {
    /// The session the messages were stored in (a /new after them does not move them).
    pub session_id: i64,
    /// The stored message ids this entry answers (several once folded).
    pub message_ids: Vec<i64>,
    pub text: String,
    /// Who sent it, at which tier; entries merged into one turn keep the lowest.
    pub origin: Origin,
    pub target: Target,
    pub reply_to: Option<String>,
    /// Recovered after a restart: this is the one retry the messages get.
    pub retry: bool,
    /// The message came with media (the router sends such turns to the heavy chain).
    pub attachment: bool,
    /// The message was a voice note: under `[voice] reply = "to_voice"` the reply is
    /// spoken too.
    pub voice: bool,
    /// Told when the turn that answers these messages ends.
    pub done: Vec<pincer_channels::Done>,
    /// A subagent's run (the `task` tool): quiet, one level deep, its own budget.
    pub task: Option<TaskRun>,
    /// When the dispatcher took the message off the bus, moved to the end of the
    /// conversation's previous turn if it waited for that: the start of
    /// `pincer_inbound_overhead_seconds`. None where there is nothing to measure (a
    /// message with files, a recovered one, a task).
    pub arrived: Option<Instant>,
}

/// What makes a turn a subagent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskRun {
    /// `agent.task_max_iterations`.
    pub max_iterations: u32,
    /// The parent turn had taken in untrusted content when it made the task.
    pub tainted: bool,
}

/// Why a running turn was told to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The user sent /stop or /new.
    User,
    /// `queue_mode = "interrupt"` and a new message arrived.
    Interrupted,
    /// The process is shutting down.
    Shutdown,
}

/// The handle on a running turn: cancel it and say why.
#[derive(Debug, Default)]
pub struct TurnControl {
    token: CancellationToken,
    reason: Mutex<Option<StopReason>>,
}

impl TurnControl {
    pub fn stop(&self, reason: StopReason) {
        if let Ok(mut slot) = self.reason.lock() {
            slot.get_or_insert(reason);
        }
        self.token.cancel();
    }

    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    pub fn reason(&self) -> Option<StopReason> {
        self.reason.lock().ok().and_then(|slot| *slot)
    }
}

pub enum Pushed {
    Queued,
    /// The queue was full; the text joined the last waiting entry.
    Folded,
    /// Even folding would pass the cap: the message is stored but not queued.
    Refused,
}

pub struct SessionQueue {
    pub mode: QueueMode,
    items: Mutex<VecDeque<Queued>>,
    /// Wakes the worker when something is queued.
    pub notify: Notify,
    /// The turn running now, if any (for /stop and interrupt mode).
    turn: Mutex<Option<std::sync::Arc<TurnControl>>>,
    /// When the last turn ended (see `Queued::arrived`).
    last_end: Mutex<Option<Instant>>,
}

impl Queued {
    /// A scheduled job's run: nobody watches it stream, and a heartbeat's "nothing to
    /// report" is not delivered.
    pub fn scheduled(&self) -> bool {
        matches!(self.origin.place, crate::access::Place::Scheduled { .. })
    }

    /// Nobody watches this turn stream: a scheduled run or a subagent.
    pub fn quiet(&self) -> bool {
        self.scheduled() || self.task.is_some()
    }
}

impl SessionQueue {
    pub fn new(mode: QueueMode) -> Self {
        Self {
            mode,
            items: Mutex::new(VecDeque::new()),
            notify: Notify::new(),
            turn: Mutex::new(None),
            last_end: Mutex::new(None),
        }
    }

    pub fn push(&self, item: Queued) -> Pushed {
        let Ok(mut items) = self.items.lock() else {
            return Pushed::Refused;
        };
        let count = waiting([&item]);
        let pushed = if items.len() < MAX_QUEUED {
            items.push_back(item);
            Pushed::Queued
        } else {
            match items.back_mut() {
                Some(last) if last.text.len() + item.text.len() < MAX_FOLDED_BYTES => {
                    last.text.push_str("\n\n");
                    last.text.push_str(&item.text);
                    last.message_ids.extend(item.message_ids);
                    last.reply_to = item.reply_to;
                    last.attachment |= item.attachment;
                    last.origin = last.origin.clone().join(item.origin);
                    last.done.extend(item.done);
                    Pushed::Folded
                }
                _ => Pushed::Refused,
            }
        };
        drop(items);
        if !matches!(pushed, Pushed::Refused) {
            crate::metrics::session_queue(count);
        }
        self.notify.notify_one();
        pushed
    }

    pub fn is_empty(&self) -> bool {
        self.items
            .lock()
            .map(|items| items.is_empty())
            .unwrap_or(true)
    }

    /// The entries that start the next turn: one in `followup` and `steer` mode (in
    /// steer mode the rest arrive at the first checkpoint), all of them merged in
    /// `collect` and `interrupt` mode.
    pub fn next_batch(&self) -> Option<Queued> {
        let mut items = self.items.lock().ok()?;
        let first = items.pop_front()?;
        let mut batch = match self.mode {
            QueueMode::Steer | QueueMode::Followup => first,
            QueueMode::Collect | QueueMode::Interrupt => items.drain(..).fold(first, merge),
        };
        drop(items);
        crate::metrics::session_queue(-waiting([&batch]));
        let last_end = self.last_end.lock().ok().and_then(|end| *end);
        if let (Some(arrived), Some(end)) = (batch.arrived, last_end) {
            batch.arrived = Some(arrived.max(end));
        }
        Some(batch)
    }

    /// Messages to steer into the running turn at a checkpoint (steer mode only).
    pub fn take_steering(&self) -> Vec<Queued> {
        if self.mode != QueueMode::Steer {
            return Vec::new();
        }
        self.take_all()
    }

    /// Whether a steering message waits (checked before starting each tool call).
    pub fn steering_pending(&self) -> bool {
        self.mode == QueueMode::Steer && !self.is_empty()
    }

    pub fn begin_turn(&self) -> std::sync::Arc<TurnControl> {
        let control = std::sync::Arc::new(TurnControl::default());
        if let Ok(mut turn) = self.turn.lock() {
            *turn = Some(std::sync::Arc::clone(&control));
        }
        control
    }

    pub fn end_turn(&self) {
        if let Ok(mut turn) = self.turn.lock() {
            *turn = None;
        }
        if let Ok(mut end) = self.last_end.lock() {
            *end = Some(Instant::now());
        }
    }

    /// Stop the running turn, if there is one. Returns whether there was.
    pub fn stop_turn(&self, reason: StopReason) -> bool {
        match self.turn.lock().ok().and_then(|turn| turn.clone()) {
            Some(control) => {
                control.stop(reason);
                true
            }
            None => false,
        }
    }

    pub fn busy(&self) -> bool {
        self.turn.lock().map(|turn| turn.is_some()).unwrap_or(false)
    }

    /// Drop whatever waits (after /new the old messages belong to the old session).
    pub fn clear(&self) -> Vec<Queued> {
        self.take_all()
    }

    fn take_all(&self) -> Vec<Queued> {
        let taken: Vec<Queued> = self
            .items
            .lock()
            .map(|mut items| items.drain(..).collect())
            .unwrap_or_default();
        crate::metrics::session_queue(-waiting(&taken));
        taken
    }
}

impl Drop for SessionQueue {
    fn drop(&mut self) {
        if let Ok(items) = self.items.get_mut() {
            crate::metrics::session_queue(-waiting(items.iter()));
        }
    }
}

/// The stored messages `items` stand for (`pincer_session_queue_depth`).
fn waiting<'a>(items: impl IntoIterator<Item = &'a Queued>) -> i64 {
    items
        .into_iter()
        .map(|item| item.message_ids.len() as i64)
        .sum()
}

fn merge(mut into: Queued, next: Queued) -> Queued {
    into.text.push_str("\n\n");
    into.text.push_str(&next.text);
    into.message_ids.extend(next.message_ids);
    into.reply_to = next.reply_to;
    into.attachment |= next.attachment;
    into.voice |= next.voice;
    into.origin = into.origin.join(next.origin);
    into.done.extend(next.done);
    into
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(n: i64) -> Queued {
        Queued {
            session_id: 1,
            retry: false,
            attachment: false,
            voice: false,
            done: Vec::new(),
            task: None,
            arrived: None,
            message_ids: vec![n],
            text: format!("m{n}"),
            origin: Origin::terminal(),
            target: Target {
                channel: "t".into(),
                chat_id: "c".into(),
                thread_id: None,
                user: false,
            },
            reply_to: None,
        }
    }

    #[test]
    fn modes_batch_differently() {
        let q = SessionQueue::new(QueueMode::Followup);
        q.push(item(1));
        q.push(item(2));
        assert_eq!(q.next_batch().unwrap().message_ids, vec![1]);
        let q = SessionQueue::new(QueueMode::Collect);
        q.push(item(1));
        q.push(item(2));
        let batch = q.next_batch().unwrap();
        assert_eq!(batch.message_ids, vec![1, 2]);
        assert_eq!(batch.text, "m1\n\nm2");
        assert!(q.take_steering().is_empty(), "only steer mode steers");
    }

    #[test]
    fn overflow_folds_and_never_drops_silently() {
        let q = SessionQueue::new(QueueMode::Followup);
        for n in 0..MAX_QUEUED as i64 {
            assert!(matches!(q.push(item(n)), Pushed::Queued));
        }
        assert!(matches!(q.push(item(99)), Pushed::Folded));
        let mut big = item(100);
        big.text = "x".repeat(MAX_FOLDED_BYTES);
        assert!(matches!(q.push(big), Pushed::Refused));
        let all: Vec<i64> = std::iter::from_fn(|| q.next_batch())
            .flat_map(|b| b.message_ids)
            .collect();
        assert!(all.contains(&99));
        assert_eq!(all.len(), MAX_QUEUED + 1);
    }

    #[test]
    fn stop_reaches_the_running_turn_once() {
        let q = SessionQueue::new(QueueMode::Steer);
        assert!(!q.stop_turn(StopReason::User));
        let control = q.begin_turn();
        assert!(q.stop_turn(StopReason::Interrupted));
        q.stop_turn(StopReason::User);
        assert!(control.token().is_cancelled());
        assert_eq!(
            control.reason(),
            Some(StopReason::Interrupted),
            "the first reason wins"
        );
        q.end_turn();
        assert!(!q.busy());
    }
}
