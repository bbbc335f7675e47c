//! Questions asked with buttons: approvals (Allow once / Always / Deny, the owner
//! answers) and the `question` tool's choices (the person asked answers, by a button or
//! by typing). The core opens a question here (who may answer, a oneshot for the
//! answer), a channel that can show buttons sends it (`ApprovalPrompter`), and when
//! someone presses a button the adapter hands the press back here: `answer` checks the
//! presser may answer and wakes the waiting call. Every adapter shares this, so
//! who-may-answer lives in one place.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::oneshot;

/// A button's answer: an approval's, or the number of a question's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Once,
    Always,
    Deny,
    /// The question's choice with this index (from 0).
    Pick(u8),
}

impl Choice {
    /// An approval's three answers.
    pub const ALL: [Choice; 3] = [Choice::Once, Choice::Always, Choice::Deny];

    /// An approval button's label.
    pub fn label(self) -> &'static str {
        match self {
            Choice::Once => "Allow once",
            Choice::Always => "Always",
            Choice::Deny => "Deny",
            Choice::Pick(_) => "Answer",
        }
    }

    fn code(self) -> String {
        match self {
            Choice::Once => "once".into(),
            Choice::Always => "always".into(),
            Choice::Deny => "deny".into(),
            Choice::Pick(n) => format!("p{n}"),
        }
    }

    fn parse(code: &str) -> Option<Choice> {
        match code {
            "once" => Some(Choice::Once),
            "always" => Some(Choice::Always),
            "deny" => Some(Choice::Deny),
            _ => {
                let n: u8 = code.strip_prefix('p')?.parse().ok()?;
                (usize::from(n) < MAX_OPTIONS).then_some(Choice::Pick(n))
            }
        }
    }

    /// What the question shows once answered.
    pub fn outcome(self) -> &'static str {
        match self {
            Choice::Once => "✅ Allowed once",
            Choice::Always => "✅ Always allowed",
            Choice::Deny => "⛔ Denied",
            Choice::Pick(_) => "✅ Answered",
        }
    }
}

/// The most choices a question shows as buttons (Discord and Slack take 25).
pub const MAX_OPTIONS: usize = 25;

/// The longest label a button shows (Slack's limit is 75 characters).
const LABEL_CHARS: usize = 75;

/// One button of a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    pub label: String,
    pub choice: Choice,
}

/// An approval's buttons: Allow once, Always, Deny.
pub fn approval_buttons() -> Vec<Button> {
    Choice::ALL
        .into_iter()
        .map(|choice| Button {
            label: choice.label().to_string(),
            choice,
        })
        .collect()
}

/// A question's buttons, one per choice (at most `MAX_OPTIONS`; long labels cut).
pub fn option_buttons(options: &[String]) -> Vec<Button> {
    options
        .iter()
        .take(MAX_OPTIONS)
        .enumerate()
        .map(|(n, option)| {
            let mut label: String = option.chars().take(LABEL_CHARS).collect();
            if option.chars().count() > LABEL_CHARS {
                label.pop();
                label.push('…');
            }
            Button {
                label,
                // n < MAX_OPTIONS (25) fits a u8.
                choice: Choice::Pick(n as u8),
            }
        })
        .collect()
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
    Some((id, Choice::parse(code)?))
}

const PREFIX: &str = "pincer-approve:";

/// What became of a button press; `toast` is the short reply the presser sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    /// The waiting call has its answer.
    Taken(Choice),
    /// Only the owner may answer (an approval).
    NotAllowed,
    /// Only the person asked may answer (a question).
    NotYours,
    /// Answered already, timed out, or from before a restart.
    Expired,
}

impl Answered {
    pub fn toast(self) -> &'static str {
        match self {
            Answered::Taken(choice) => choice.outcome(),
            Answered::NotAllowed => "Only the owner can answer this.",
            Answered::NotYours => "Only the person asked can answer this.",
            Answered::Expired => "This question is no longer open.",
        }
    }
}

/// A `question`'s answer: a choice pressed (its index) or text typed in the chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Picked(u8),
    Typed(String),
}

enum Waker {
    Approval(oneshot::Sender<Choice>),
    /// A question asked in `chat` (`Target::key`): a message typed there answers it too.
    Question {
        chat: String,
        reply: oneshot::Sender<Reply>,
    },
}

struct Waiting {
    /// Canonical sender ids ("telegram:42") allowed to answer.
    answerers: Vec<String>,
    waker: Waker,
}

/// The questions waiting for a button press.
#[derive(Default)]
pub struct PendingApprovals {
    waiting: Mutex<HashMap<String, Waiting>>,
    next: AtomicU64,
}

impl PendingApprovals {
    /// Open an approval only `answerers` may answer; the receiver gets the answer.
    /// Dropping the receiver (a timeout) leaves the entry to be found `Expired`;
    /// call `close` to forget it.
    pub fn open(&self, answerers: Vec<String>) -> (String, oneshot::Receiver<Choice>) {
        let (reply, answer) = oneshot::channel();
        let id = self.insert(answerers, Waker::Approval(reply));
        (id, answer)
    }

    /// Open a `question` in `chat` (`Target::key`) only `answerers` may answer, by a
    /// choice's button or by typing in that chat (`answer_typed`).
    pub fn open_question(
        &self,
        answerers: Vec<String>,
        chat: String,
    ) -> (String, oneshot::Receiver<Reply>) {
        let (reply, answer) = oneshot::channel();
        let id = self.insert(answerers, Waker::Question { chat, reply });
        (id, answer)
    }

    fn insert(&self, answerers: Vec<String>, waker: Waker) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        // A per-process counter plus the start time keeps ids from one run apart
        // from an earlier run's buttons still on screen.
        let id = format!("{:x}{n:x}", process_epoch());
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.insert(id.clone(), Waiting { answerers, waker });
        }
        id
    }

    /// A button press by `sender` (canonical id).
    pub fn answer(&self, request_id: &str, sender: &str, choice: Choice) -> Answered {
        let Ok(mut waiting) = self.waiting.lock() else {
            return Answered::Expired;
        };
        match waiting.get(request_id) {
            None => Answered::Expired,
            Some(w) if !w.answerers.iter().any(|a| a == sender) => match w.waker {
                Waker::Approval(_) => Answered::NotAllowed,
                Waker::Question { .. } => Answered::NotYours,
            },
            // A button of another kind of question (forged): it answers nothing, and
            // the question stays open.
            Some(w)
                if matches!(w.waker, Waker::Approval(_)) == matches!(choice, Choice::Pick(_)) =>
            {
                Answered::Expired
            }
            Some(_) => {
                let Some(w) = waiting.remove(request_id) else {
                    return Answered::Expired;
                };
                let sent = match (w.waker, choice) {
                    (Waker::Approval(reply), _) => reply.send(choice).is_ok(),
                    (Waker::Question { reply, .. }, Choice::Pick(n)) => {
                        reply.send(Reply::Picked(n)).is_ok()
                    }
                    (Waker::Question { .. }, _) => false,
                };
                if sent {
                    Answered::Taken(choice)
                } else {
                    Answered::Expired
                }
            }
        }
    }

    /// A message `sender` typed in `chat` (`Target::key`): the answer to a question
    /// waiting there for them, if one is. `true` when it was taken as the answer.
    pub fn answer_typed(&self, chat: &str, sender: &str, text: &str) -> bool {
        let Ok(mut waiting) = self.waiting.lock() else {
            return false;
        };
        let id = waiting.iter().find_map(|(id, w)| match &w.waker {
            Waker::Question { chat: asked, reply }
                if asked == chat
                    && !reply.is_closed()
                    && w.answerers.iter().any(|a| a == sender) =>
            {
                Some(id.clone())
            }
            _ => None,
        });
        let Some(w) = id.and_then(|id| waiting.remove(&id)) else {
            return false;
        };
        match w.waker {
            Waker::Question { reply, .. } => reply.send(Reply::Typed(text.to_string())).is_ok(),
            Waker::Approval(_) => false,
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
        crate::clock::now()
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
        let data = button_data(&id, Choice::Pick(24));
        assert!(data.len() <= 64, "{data}");
        assert_eq!(parse_button(&data), Some((id.as_str(), Choice::Pick(24))));
        assert_eq!(parse_button("pincer-approve:1:p25"), None);
        assert_eq!(parse_button("pincer-approve:1:p-1"), None);
    }

    #[tokio::test]
    async fn a_question_is_answered_by_its_person_with_a_choice_or_by_typing() {
        let pending = PendingApprovals::default();
        let (id, rx) = pending.open_question(vec!["telegram:7".into()], "telegram:-5:".into());
        assert_eq!(
            pending.answer(&id, "telegram:8", Choice::Pick(1)),
            Answered::NotYours
        );
        // An approval's answer does not answer a question, nor close it.
        assert_eq!(
            pending.answer(&id, "telegram:7", Choice::Once),
            Answered::Expired
        );
        assert_eq!(
            pending.answer(&id, "telegram:7", Choice::Pick(0)),
            Answered::Taken(Choice::Pick(0))
        );
        assert_eq!(rx.await.ok(), Some(Reply::Picked(0)));
        let (id, rx2) = pending.open_question(vec!["telegram:7".into()], "telegram:-5:".into());
        assert_eq!(
            pending.answer(&id, "telegram:7", Choice::Pick(1)),
            Answered::Taken(Choice::Pick(1))
        );
        assert_eq!(rx2.await.ok(), Some(Reply::Picked(1)));

        let (_, rx) = pending.open_question(vec!["telegram:7".into()], "telegram:-5:".into());
        assert!(!pending.answer_typed("telegram:-5:", "telegram:8", "me!"));
        assert!(!pending.answer_typed("telegram:-6:", "telegram:7", "elsewhere"));
        assert!(pending.answer_typed("telegram:-5:", "telegram:7", "Thursday"));
        assert_eq!(rx.await.ok(), Some(Reply::Typed("Thursday".into())));
        assert!(!pending.answer_typed("telegram:-5:", "telegram:7", "again"));
    }

    #[test]
    fn option_labels_are_cut_to_what_every_platform_shows() {
        let long = "x".repeat(200);
        let options: Vec<String> = (0..30).map(|_| long.clone()).collect();
        let buttons = option_buttons(&options);
        assert_eq!(buttons.len(), MAX_OPTIONS);
        assert_eq!(buttons[0].label.chars().count(), 75);
        assert!(buttons[0].label.ends_with('…'));
        assert_eq!(buttons[24].choice, Choice::Pick(24));
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
            pending.answer(&id, "telegram:1", Choice::Pick(0)),
            Answered::Expired,
            "a question's button does not answer an approval"
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
