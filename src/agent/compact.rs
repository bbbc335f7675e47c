//! Compaction: the older part of a long conversation is summarised by the light
//! model into the session's summary, which stands in for those messages from then
//! on; the recent turns stay word for word, and the full transcript stays in the
//! store. Runs on `/compact`, before a model call that would fill too much of the
//! context window (`window`), and once when a provider says the context is too long.

use super::Agent;
use crate::provider::{ChatMessage, ChatRequest, Part};
use crate::router::Tier;
use crate::store::{self, StoredMessage};

/// Messages kept word for word at the end of the conversation (at least).
const KEEP: usize = 6;
/// How much of a tool result goes into the text to summarise.
const TOOL_PREVIEW: usize = 300;

const INSTRUCTIONS: &str = "You keep notes on a conversation between a user and their assistant. Merge the earlier summary (if any) and the new part of the conversation into one concise summary, written for the assistant, under these headings: the user's goals and constraints; facts about the user; decisions made; what was done (files changed, commands run, results); open tasks and questions. Keep exact file paths, ids, names, numbers, URLs and dates. No preamble.";

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// Messages newly covered by the summary.
    pub messages: usize,
    pub summary_chars: usize,
}

impl Agent {
    /// Summarise all but the recent part of the session. `Ok(None)` when there is too
    /// little to compact.
    pub async fn compact(
        &self,
        session_id: i64,
        spender: &crate::store::Spender,
    ) -> Result<Option<Compacted>, String> {
        let meta = self
            .store
            .session_meta(session_id)
            .await
            .map_err(|e| e.to_string())?;
        let stored = self
            .store
            .history(session_id)
            .await
            .map_err(|e| e.to_string())?;
        let done: Vec<&StoredMessage> = stored
            .iter()
            .filter(|m| m.status != store::Status::Ignored)
            .filter(|m| m.role != store::Role::User || m.status == store::Status::Done)
            .collect();
        // Keep at least KEEP messages, starting at a user message so tool calls stay with their results.
        let mut cut = done.len().saturating_sub(KEEP);
        while cut > 0 && done[cut].role != store::Role::User {
            cut -= 1;
        }
        let upto = meta.summary_upto.unwrap_or(i64::MIN);
        let old: Vec<&StoredMessage> = done[..cut]
            .iter()
            .copied()
            .filter(|m| m.position > upto)
            .collect();
        let Some(last) = old.last() else {
            return Ok(None);
        };
        let transcript = render(&old);
        let previous = meta.summary.unwrap_or_default();
        let request = ChatRequest {
            model: String::new(),
            system_stable: INSTRUCTIONS.into(),
            system_volatile: String::new(),
            messages: vec![ChatMessage::user_text(format!(
                "Earlier summary:\n{}\n\nConversation to add:\n{transcript}",
                if previous.is_empty() {
                    "(none)"
                } else {
                    &previous
                }
            ))],
            tools: Vec::new(),
            max_tokens: 1024,
            thinking_budget: 0,
            recalled_at: None,
        };
        let (_, chain) = self
            .models
            .tier(Tier::Light)
            .ok_or("no model is configured")?;
        let mut ignore = |_: crate::provider::StreamEvent<'_>| {};
        let (response, label) = chain
            .stream(request, &mut ignore)
            .await
            .map_err(|e| format!("compaction failed: {e}"))?;
        let cost = self.prices.cost(&label, response.usage);
        if let Err(err) = self
            .store
            .record_usage(session_id, &label, response.usage, cost, spender)
            .await
        {
            tracing::warn!("usage not recorded: {err}");
        }
        let summary = crate::provider::text_of(&response.parts);
        if summary.trim().is_empty() {
            return Err("compaction failed: the model returned an empty summary".into());
        }
        self.store
            .set_summary(session_id, summary.clone(), last.position)
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(session_id, messages = old.len(), "conversation compacted");
        Ok(Some(Compacted {
            messages: old.len(),
            summary_chars: summary.chars().count(),
        }))
    }
}

/// The messages as plain text for the summariser.
fn render(messages: &[&StoredMessage]) -> String {
    let mut out = String::new();
    for message in messages {
        for part in &message.parts {
            let line = match (message.role, part) {
                (store::Role::User, Part::Text { text }) => format!("User: {text}"),
                (_, Part::Text { text }) => format!("Assistant: {text}"),
                (
                    _,
                    Part::ToolCall {
                        name, arguments, ..
                    },
                ) => format!("Assistant called {name} {arguments}"),
                (_, Part::ToolResult { name, content, .. }) => {
                    let preview: String = content.chars().take(TOOL_PREVIEW).collect();
                    format!("{name} returned: {preview}")
                }
                (_, Part::Image { path, .. }) => format!("User sent an image: {path}"),
                (_, Part::Reasoning { .. }) => continue,
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}
