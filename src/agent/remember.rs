//! Memory around a turn: before it, the memory files relevant to the user's message
//! are recalled (they ride on the newest user message, so the cached system prompt
//! stays byte-identical); after it, who said what goes into today's daily log.

use pincer_memory::Said;

use crate::agent::Agent;
use crate::agent::HEARTBEAT_OK;

/// How the assistant appears in the daily log.
const ASSISTANT: &str = "Pincer";

impl Agent {
    /// "Today" and "now" in `agent.timezone`.
    pub fn local_now(&self) -> chrono::NaiveDateTime {
        crate::clock::utc()
            .with_timezone(&self.timezone)
            .naive_local()
    }

    /// The memory files that look relevant to `text`, ready to add to the turn.
    pub async fn recall(&self, text: &str) -> Option<String> {
        let memory = self.memory.clone();
        let text = text.to_string();
        let today = self.local_now().date();
        match tokio::task::spawn_blocking(move || memory.recall(&text, today)).await {
            Ok(Ok(recalled)) => recalled,
            Ok(Err(err)) => {
                // Recall is a help, never a reason to fail the turn.
                tracing::warn!("memory recall failed: {err}");
                None
            }
            Err(err) => {
                tracing::warn!("memory recall failed: {err}");
                None
            }
        }
    }

    /// Append a finished turn to today's log: each user message, then the reply.
    pub async fn log_turn(&self, sender: &str, heard: &[String], reply: &str) {
        if reply.trim() == HEARTBEAT_OK {
            return; // a heartbeat with nothing to say is not worth remembering
        }
        let who = if sender.is_empty() { "owner" } else { sender };
        let mut said: Vec<Said> = heard
            .iter()
            .filter(|t| !t.trim().is_empty())
            .map(|text| Said {
                who: who.to_string(),
                text: self.guard.scrubber.scrub(text).into_owned(),
            })
            .collect();
        if !reply.trim().is_empty() {
            said.push(Said {
                who: ASSISTANT.into(),
                text: self.guard.scrubber.scrub(reply).into_owned(),
            });
        }
        if said.is_empty() {
            return;
        }
        let memory = self.memory.clone();
        let at = self.local_now();
        match tokio::task::spawn_blocking(move || memory.log_turn(at, &said)).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::warn!("the daily log was not written: {err}"),
            Err(err) => tracing::warn!("the daily log was not written: {err}"),
        }
    }
}
