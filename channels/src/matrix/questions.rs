//! Approvals and `question`s on a platform without buttons: the question lists its
//! choices, each with an emoji, and the bot puts those emojis on it as reactions, so a
//! person answers with one tap on a reaction — or by replying with the choice's number
//! or word (`once`, `always`, `deny`). The answer goes to the shared
//! `PendingApprovals`, which decides who may answer; anyone else is told so in a notice
//! replying to the question. Once settled, the question is edited to its outcome and
//! the bot takes its reactions back.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use async_trait::async_trait;
use matrix_sdk::ruma::{EventId, OwnedRoomId};

use super::{CHANNEL, Matrix};
use crate::approval::{Answered, Button, Choice};
use crate::channel::{ApprovalPrompter, ChannelError};
use crate::message::Target;

/// An approval's reactions.
const ONCE: &str = "👍";
const ALWAYS: &str = "✅";
const DENY: &str = "❌";
/// A question's first ten choices; later ones are answered by number.
const NUMBERS: [&str; 10] = ["1️⃣", "2️⃣", "3️⃣", "4️⃣", "5️⃣", "6️⃣", "7️⃣", "8️⃣", "9️⃣", "🔟"];

/// One open question.
struct Question {
    request_id: String,
    /// (reaction key, answer), in the order shown.
    choices: Vec<(String, Choice)>,
    /// The bot's own reactions on it, taken back when it is settled.
    seeded: Vec<String>,
    /// Who was told they may not answer it (each is told once).
    told: HashSet<String>,
}

/// The open questions by the question's event id.
#[derive(Default)]
pub(super) struct Open(Mutex<HashMap<String, Question>>);

impl Open {
    fn insert(&self, event: String, question: Question) {
        if let Ok(mut open) = self.0.lock() {
            open.insert(event, question);
        }
    }

    /// Note one of the bot's reactions on `event`.
    fn seeded(&self, event: &str, reaction: String) {
        if let Ok(mut open) = self.0.lock()
            && let Some(question) = open.get_mut(event)
        {
            question.seeded.push(reaction);
        }
    }

    /// Whether `sender` is yet to be told they may not answer the question `event`
    /// (and note that they now are).
    fn first_refusal(&self, event: &str, sender: &str) -> bool {
        let Ok(mut open) = self.0.lock() else {
            return false;
        };
        open.get_mut(event)
            .is_some_and(|question| question.told.insert(sender.to_string()))
    }

    fn remove(&self, event: &str) -> Option<Question> {
        self.0.lock().ok()?.remove(event)
    }

    /// The request and answer a reaction `key` on `event` stands for.
    fn by_key(&self, event: &str, key: &str) -> Option<(String, Choice)> {
        let open = self.0.lock().ok()?;
        let question = open.get(event)?;
        // Clients differ on the emoji variation selector: compare without it.
        let bare = |k: &str| k.replace('\u{fe0f}', "");
        let key = bare(key);
        question
            .choices
            .iter()
            .find(|(k, _)| bare(k) == key)
            .map(|(_, choice)| (question.request_id.clone(), *choice))
    }

    /// The request and answer a typed reply to `event` stands for.
    fn by_text(&self, event: &str, text: &str) -> Option<(String, Choice)> {
        let open = self.0.lock().ok()?;
        let question = open.get(event)?;
        let word = text.trim().trim_end_matches(['.', '!']).to_lowercase();
        let by_number = word
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| question.choices.get(i))
            .map(|(_, c)| *c);
        let by_word = match word.as_str() {
            "once" | "allow" | "allow once" | "yes" => Some(Choice::Once),
            "always" => Some(Choice::Always),
            "deny" | "no" => Some(Choice::Deny),
            _ => None,
        }
        .filter(|c| question.choices.iter().any(|(_, own)| own == c));
        by_number
            .or(by_word)
            .map(|choice| (question.request_id.clone(), choice))
    }
}

/// The reaction key of each button.
fn keys(buttons: &[Button]) -> Vec<(String, Choice)> {
    let mut numbers = NUMBERS.iter();
    buttons
        .iter()
        .map(|button| {
            let key = match button.choice {
                Choice::Once => ONCE,
                Choice::Always => ALWAYS,
                Choice::Deny => DENY,
                Choice::Pick(_) => numbers.next().copied().unwrap_or(""),
            };
            (key.to_string(), button.choice)
        })
        .collect()
}

impl Matrix {
    /// A reaction: the answer to an open question, if it is one.
    pub(super) async fn reaction(&self, room: &OwnedRoomId, on: &str, key: &str, sender: &str) {
        if let Some((request_id, choice)) = self.questions.by_key(on, key) {
            self.answer(room, on, &request_id, sender, choice).await;
        }
    }

    /// A reply to `question` with `text`; `true` when it answered an open question.
    pub(super) async fn replied(
        &self,
        room: &str,
        question: &str,
        canonical: &str,
        text: &str,
    ) -> bool {
        let Some((request_id, choice)) = self.questions.by_text(question, text) else {
            return false;
        };
        let Ok(room) = matrix_sdk::ruma::RoomId::parse(room) else {
            return false;
        };
        let sender = canonical.strip_prefix("matrix:").unwrap_or(canonical);
        self.answer(&room, question, &request_id, sender, choice)
            .await;
        true
    }

    /// Hand an answer to whoever waits for it; a person who may not answer is told.
    async fn answer(
        &self,
        room: &OwnedRoomId,
        question: &str,
        request_id: &str,
        sender: &str,
        choice: Choice,
    ) {
        let canonical = format!("{CHANNEL}:{sender}");
        let answered = self.approvals.answer(request_id, &canonical, choice);
        tracing::info!(channel = CHANNEL, sender = %canonical, ?answered, "question answered");
        if matches!(answered, Answered::Taken(_)) {
            return; // the core settles the question
        }
        // Told once: reactions cost nothing, and each notice spends the bot's sending pace.
        if !self.questions.first_refusal(question, sender) {
            return;
        }
        let target = Target::chat(CHANNEL, room.as_str(), None);
        if let Err(e) = self
            .send_notice(&target, answered.toast(), Some(question))
            .await
        {
            tracing::warn!(
                channel = CHANNEL,
                "could not answer a reaction: {}",
                e.message
            );
        }
    }
}

#[async_trait]
impl ApprovalPrompter for Matrix {
    async fn ask_with(
        &self,
        target: &Target,
        question: &str,
        request_id: &str,
        buttons: &[Button],
    ) -> Result<String, ChannelError> {
        let choices = keys(buttons);
        let mut text = format!("{question}\n\n");
        for (n, (button, (key, _))) in buttons.iter().zip(&choices).enumerate() {
            let key = if key.is_empty() { "" } else { key.as_str() };
            text.push_str(&format!("{key} {}. {}\n", n + 1, button.label));
        }
        text.push_str("\nReact with your answer, or reply with its number.");
        let room = self.room(target).await?;
        let id = self.send_text(target, &text).await?;
        // Open before the reactions go on: a quick reply must find it.
        let keys: Vec<String> = choices
            .iter()
            .map(|(k, _)| k.clone())
            .filter(|k| !k.is_empty())
            .collect();
        self.questions.insert(
            id.clone(),
            Question {
                request_id: request_id.to_string(),
                choices,
                seeded: Vec::new(),
                told: HashSet::new(),
            },
        );
        for key in keys {
            match self.annotate(&room, &id, &key).await {
                Ok(reaction) => self.questions.seeded(&id, reaction),
                Err(e) => {
                    tracing::warn!(channel = CHANNEL, "could not add a choice: {}", e.message)
                }
            }
        }
        Ok(id)
    }

    async fn settle(
        &self,
        target: &Target,
        message_id: &str,
        text: &str,
    ) -> Result<(), ChannelError> {
        use crate::channel::MessageEditor;
        let question = self.questions.remove(message_id);
        self.edit(target, message_id, text).await?;
        let room = self.room(target).await?;
        for reaction in question.map(|q| q.seeded).unwrap_or_default() {
            if let Ok(id) = EventId::parse(reaction.as_str())
                && let Err(e) = room.redact(&id, None, None).await
            {
                tracing::warn!(channel = CHANNEL, "could not take a choice back: {e}");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::{approval_buttons, option_buttons};

    #[test]
    fn reactions_and_replies_name_the_same_answers() {
        let open = Open::default();
        open.insert(
            "$q".into(),
            Question {
                request_id: "r1".into(),
                choices: keys(&approval_buttons()),
                seeded: Vec::new(),
                told: HashSet::new(),
            },
        );
        assert_eq!(open.by_key("$q", "👍"), Some(("r1".into(), Choice::Once)));
        assert_eq!(open.by_key("$q", "❌"), Some(("r1".into(), Choice::Deny)));
        assert_eq!(open.by_key("$q", "🎉"), None);
        assert_eq!(open.by_key("$other", "👍"), None);
        assert_eq!(open.by_text("$q", "2"), Some(("r1".into(), Choice::Always)));
        assert_eq!(
            open.by_text("$q", " Deny."),
            Some(("r1".into(), Choice::Deny))
        );
        assert_eq!(open.by_text("$q", "maybe"), None);
        let options = option_buttons(&["red".into(), "blue".into()]);
        open.insert(
            "$p".into(),
            Question {
                request_id: "r2".into(),
                choices: keys(&options),
                seeded: Vec::new(),
                told: HashSet::new(),
            },
        );
        assert_eq!(
            open.by_key("$p", "2️⃣"),
            Some(("r2".into(), Choice::Pick(1)))
        );
        // A key without the emoji variation selector is the same key.
        assert_eq!(
            open.by_key("$p", "1\u{20e3}"),
            Some(("r2".into(), Choice::Pick(0)))
        );
        assert_eq!(open.by_text("$p", "yes"), None, "a question has no `once`");
        assert!(open.first_refusal("$q", "@eve:x"));
        assert!(!open.first_refusal("$q", "@eve:x"), "told twice");
        assert!(open.first_refusal("$q", "@bob:x"));
    }
}
