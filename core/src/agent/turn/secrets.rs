//! Secrets in the model's tool calls: what is stored, shown and kept in the
//! conversation has them taken out (the pipeline refuses the call itself), and the
//! owner is told that the model had one.

use super::Turn;
use crate::provider::Part;

impl Turn<'_> {
    /// `parts` with every tool call's arguments scrubbed, and the names of the tools
    /// whose arguments carried a secret.
    pub(super) fn scrub_calls(&self, mut parts: Vec<Part>) -> (Vec<Part>, Vec<String>) {
        let mut carried = Vec::new();
        for part in &mut parts {
            if let Part::ToolCall {
                name, arguments, ..
            } = part
                && let Some(clean) = self.agent.guard.scrubber.scrub_arguments(arguments)
            {
                *arguments = clean;
                carried.push(name.clone());
            }
        }
        (parts, carried)
    }

    /// The owner hears that calls were refused for carrying a secret: in this chat when
    /// the turn is theirs, else in their direct chats.
    pub(super) async fn tell_owners_of_secrets(&mut self, tools: &[String]) {
        let text = format!(
            "⚠️ The model put one of your secrets (a key or token from .security.yml or the environment) into the arguments of {}; the call was refused and nothing left. A secret in the model's context means something showed it one: check recent tool results and files, and consider rotating it.",
            tools.join(", ")
        );
        tracing::warn!(tools = ?tools, "a secret in tool-call arguments; the owner is told");
        if self.origin.is_owner() {
            self.reply.notice(text).await;
            return;
        }
        for owner in self.agent.owners() {
            if let Some(target) = pincer_channels::Target::user(owner) {
                let message = pincer_channels::OutboundMessage {
                    target,
                    body: pincer_channels::OutboundBody::Notice(text.clone()),
                    reply_to: None,
                    entry: None,
                };
                // A closed bus means shutdown.
                let _ = self.agent.outbound.send(message).await;
            }
        }
    }
}
