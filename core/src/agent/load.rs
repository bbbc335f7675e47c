//! The transcript as the model will see it: repaired after a crash, the compacted
//! part replaced by its summary, pruned tool results replaced by their stubs, each
//! user message stamped with when it was said, and messages still waiting in the queue
//! left out.

use super::Agent;
use super::history;
use crate::provider::{ChatMessage, Part};
use crate::steering::Queued;
use crate::store::{self, StoreError};

/// What a lower tier's turn sees of a higher tier's tool result.
const HIDDEN: &str = "[hidden: the result of a call made for someone with more trust]";

/// Heads the summary of the compacted part of a conversation.
pub(super) const SUMMARY_HEADING: &str = "[Summary of our earlier conversation]";

impl Agent {
    /// Open user messages in the transcript count as answered by this turn. Messages
    /// stored after this turn's newest one are left out while unanswered: they are
    /// still on their way through the queue and join at a checkpoint or a later turn.
    /// Also returns the session's `/model` pin and whether untrusted content is still in
    /// what the model sees, read in the same store call.
    pub(super) async fn load(
        &self,
        session_id: i64,
        first: &Queued,
        answered: &mut Vec<i64>,
    ) -> Result<(Vec<ChatMessage>, Option<String>, bool), StoreError> {
        let (meta, mut stored) = self.store.transcript(session_id).await?;
        let untrusted = meta.untrusted();
        let newest = first.message_ids.iter().copied().max().unwrap_or(i64::MAX);
        // Messages the turn already took in (steered in, say) stay whatever their id.
        stored.retain(|m| {
            m.status != store::Status::Ignored
                && (m.role != store::Role::User
                    || m.status == store::Status::Done
                    || m.id <= newest
                    || answered.contains(&m.id))
        });
        for message in &stored {
            if message.role == store::Role::User
                && message.status != store::Status::Done
                && !answered.contains(&message.id)
            {
                answered.push(message.id);
            }
        }
        // What a turn with more trust did here (an owner's tool calls in a group) stays
        // out of a lower tier's view: the calls without arguments, the results hidden.
        let tier = first.origin.tier;
        for message in stored
            .iter_mut()
            .filter(|m| m.tier.is_some_and(|t| t > tier))
        {
            for part in &mut message.parts {
                match part {
                    Part::ToolCall { arguments, .. } => *arguments = serde_json::json!({}),
                    Part::ToolResult { content, .. } => *content = HIDDEN.to_string(),
                    _ => {}
                }
            }
        }
        // Old tool results that were pruned go as their stubs (`window`).
        if let Some(upto) = meta.pruned_upto {
            super::window::apply_pruning(session_id, upto, &mut stored);
        }
        let mut messages = Vec::new();
        if let (Some(summary), Some(upto)) = (meta.summary, meta.summary_upto) {
            // Open messages are never summarised away, whatever their position.
            stored.retain(|m| {
                m.position > upto
                    || (m.role == store::Role::User && m.status != store::Status::Done)
            });
            history::push_user(
                &mut messages,
                Part::Text {
                    text: format!("{SUMMARY_HEADING}\n{summary}"),
                },
            );
        }
        // The pictures of the messages this turn answers are shown; earlier ones are
        // sent as a line naming the file (`Part::placeholder`).
        let mut shown = 0;
        for message in stored
            .iter_mut()
            .filter(|m| m.role == store::Role::User && m.status != store::Status::Done)
        {
            self.media.show(&mut message.parts, &mut shown).await;
        }
        let stamp = |ms: i64| self.stamp(ms);
        for message in history::to_chat(&stored, &stamp) {
            match message.role {
                crate::provider::Role::User => {
                    for part in message.parts {
                        history::push_user(&mut messages, part);
                    }
                }
                crate::provider::Role::Assistant => {
                    history::push_assistant(&mut messages, message.parts)
                }
            }
        }
        Ok((messages, meta.pin, untrusted))
    }
}
