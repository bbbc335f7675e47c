//! The gate in front of the model: who may talk to the assistant. The terminal user
//! and cron are always admitted; on chat platforms only the configured owners are,
//! until pairing and allowlists arrive with the chat channels. An unknown sender's
//! message is dropped here and never stored or sent to a model.

use pincer_channels::InboundMessage;

#[derive(Debug, Clone, Default)]
pub struct Gate {
    /// Canonical sender ids from `agent.owners` ("telegram:42").
    owners: Vec<String>,
}

impl Gate {
    pub fn new(owners: Vec<String>) -> Self {
        Self { owners }
    }

    pub fn admit(&self, message: &InboundMessage) -> bool {
        if matches!(message.channel.as_str(), "terminal" | "system") {
            return true;
        }
        let admitted = self
            .owners
            .iter()
            .any(|owner| owner == &message.sender.canonical);
        if !admitted {
            tracing::info!(sender = %message.sender.canonical, channel = %message.channel, "message from an unknown sender dropped");
        }
        admitted
    }
}
