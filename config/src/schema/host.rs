//! `[host]`: conversations another program drives over stdio (`pincer agent`, `pincer
//! acp`). Only what the host program cannot say itself lives here.

use serde::{Deserialize, Serialize};

/// `[host]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostConfig {
    /// How long `pincer agent --protocol runner` waits for the host to answer a
    /// `permission_request` (Pincer's own event, which a backend written to seed 001
    /// does not know); unanswered, the call is refused and the turn goes on.
    pub approval_timeout_secs: u64,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            approval_timeout_secs: 120,
        }
    }
}
