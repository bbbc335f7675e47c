//! Approval questions asked with buttons. The core opens a question here (who may
//! answer, a oneshot for the answer), a channel that can show buttons sends it
//! (`ApprovalPrompter`), and when someone presses a button the adapter hands the
//! press back here: `answer` checks the presser may answer and wakes the waiting
//! tool call. Every adapter shares this, so who-may-answer lives in one place.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::oneshot;

/// The owner's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Once,
    Always,
    Deny,
}

impl Choice {
    pub const ALL: [Choice; 3] = [Choice::Once, Choice::Always, Choice::Deny];

    /// The button's label.
    pub fn label(self) -> &'static str {
        match self {
            Choice::Once => "Allow once",
            Choice::Always => "Always",
            Choice::Deny => "Deny",
        }
    }

    fn code(self) -> &'static str {
        match self {
            Choice::Once => "once",
            Choice::Always => "always",
            Choice::Deny => "deny",
        }
    }

    /// What the question shows once answered.
    pub fn outcome(self) -> &'static str {
        match self {
            Choice::Once => "✅ Allowed once",
            Choice::Always => "✅ Always allowed",
            Choice::Deny => "⛔ Denied",
        }
    }
}

/// The data a button carries back ("pincer-approve:<id>:<choice>"); short enough for
/// Telegram's 64-byte callback data.
pub fn button_data(request_id: &str, choice: Choice) -> String {
    format!("{PREFIX}{request_id}:{}", choice.code())
}

/// The question and answer a button's data names; `None` for anyone else's buttons.
pub fn parse_button(data: &str) -> Option<(&str, Choice)> {
    let rest = data.strip_prefix(PREFIX)?;
    let (id, code) = rest.rsplit_once(':')?;
    let choice = Choice::ALL.into_iter().find(|c| c.code() == code)?;
    Some((id, choice))
}

const PREFIX: &str = "pincer-approve:";

/// What became of a button press; `toast` is the short reply the presser sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    /// The waiting call has its answer.
    Taken(Choice),
    /// Only the owner may answer.
    NotAllowed,
    /// Answered already, timed out, or from before a restart.
    Expired,
}

impl Answered {
    pub fn toast(self) -> &'static str {
        match self {
            Answered::Taken(choice) => choice.outcome(),
            Answered::NotAllowed => "Only the owner can answer this.",
            Answered::Expired => "This question is no longer open.",
        }
    }
}

struct Waiting {
    /// Canonical sender ids ("telegram:42") allowed to answer.
    answerers: Vec<String>,
    reply: oneshot::Sender<Choice>,
}

/// The questions waiting for a button press.
#[derive(Default)]
pub struct PendingApprovals {
    waiting: Mutex<HashMap<String, Waiting>>,
    next: AtomicU64,
}

impl PendingApprovals {
    /// Open a question only `answerers` may answer; the receiver gets the answer.
    /// Dropping the receiver (a timeout) leaves the entry to be found `Expired`;
    /// call `close` to forget it.
    pub fn open(&self, answerers: Vec<String>) -> (String, oneshot::Receiver<Choice>) {
        let (reply, answer) = oneshot::channel();
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        // A per-process counter plus the start time keeps ids from one run apart
        // from an earlier run's buttons still on screen.
        let id = format!("{:x}{n:x}", process_epoch());
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.insert(id.clone(), Waiting { answerers, reply });
        }
        (id, answer)
    }

    /// A button press by `sender` (canonical id).
    pub fn answer(&self, request_id: &str, sender: &str, choice: Choice) -> Answered {
        let Ok(mut waiting) = self.waiting.lock() else {
            return Answered::Expired;
        };
        match waiting.get(request_id) {
            None => Answered::Expired,
            Some(w) if !w.answerers.iter().any(|a| a == sender) => Answered::NotAllowed,
            Some(_) => match waiting.remove(request_id) {
                Some(w) => match w.reply.send(choice) {
                    Ok(()) => Answered::Taken(choice),
                    Err(_) => Answered::Expired,
                },
                None => Answered::Expired,
            },
        }
    }

    /// Forget a question (answered elsewhere or timed out).
    pub fn close(&self, request_id: &str) {
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.remove(request_id);
        }
    }

    pub fn len(&self) -> usize {
        self.waiting.lock().map(|w| w.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn process_epoch() -> u64 {
    use std::sync::OnceLock;
    static EPOCH: OnceLock<u64> = OnceLock::new();
    *EPOCH.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() & 0xffff_ffff)
            .unwrap_or(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn button_data_round_trips_and_fits_telegram() {
        let pending = PendingApprovals::default();
        let (id, _rx) = pending.open(vec!["telegram:1".into()]);
        for choice in Choice::ALL {
            let data = button_data(&id, choice);
            assert!(data.len() <= 64, "{data}");
            assert_eq!(parse_button(&data), Some((id.as_str(), choice)));
        }
        assert_eq!(parse_button("other:1:once"), None);
        assert_eq!(parse_button("pincer-approve:1:maybe"), None);
    }

    #[tokio::test]
    async fn only_an_answerer_can_answer_and_only_once() {
        let pending = PendingApprovals::default();
        let (id, rx) = pending.open(vec!["telegram:1".into()]);
        assert_eq!(
            pending.answer(&id, "telegram:2", Choice::Once),
            Answered::NotAllowed
        );
        assert_eq!(
            pending.answer(&id, "telegram:1", Choice::Always),
            Answered::Taken(Choice::Always)
        );
        assert_eq!(rx.await.ok(), Some(Choice::Always));
        assert_eq!(
            pending.answer(&id, "telegram:1", Choice::Deny),
            Answered::Expired
        );
        assert!(pending.is_empty());
    }

    #[test]
    fn a_timed_out_question_is_expired() {
        let pending = PendingApprovals::default();
        let (id, rx) = pending.open(vec!["slack:U1".into()]);
        drop(rx);
        assert_eq!(
            pending.answer(&id, "slack:U1", Choice::Once),
            Answered::Expired
        );
        assert_eq!(
            pending.answer("nope", "slack:U1", Choice::Once),
            Answered::Expired
        );
    }
}
