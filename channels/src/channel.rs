//! The one trait every channel implements: listen (push inbound messages onto the
//! bus until shut down) and send one text chunk. Capabilities a platform may lack
//! (typing, editing, media, buttons) get their own traits, never no-op defaults.

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::message::{InboundMessage, Target};

/// The sending half of the inbound bus (bounded: a full bus makes adapters wait).
pub type InboundSender = mpsc::Sender<InboundMessage>;

/// A channel failure. `retryable` tells the manager whether trying again can help.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ChannelError {
    pub message: String,
    pub retryable: bool,
}

impl ChannelError {
    pub fn permanent(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retryable: false,
        }
    }

    pub fn transient(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retryable: true,
        }
    }
}

#[async_trait]
pub trait Channel: Send + Sync {
    /// The registry name ("telegram", "terminal"): the first part of session keys.
    fn name(&self) -> &str;

    /// Push inbound messages into `bus` until `shutdown` fires or the source ends.
    async fn listen(
        &self,
        bus: InboundSender,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError>;

    /// Deliver one chunk of text, already split to the platform's limit.
    async fn send(&self, target: &Target, text: &str) -> Result<(), ChannelError>;
}
