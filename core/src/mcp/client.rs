//! What Pincer is to an MCP server: the `initialize` it sends — the newest *released*
//! protocol version (rmcp's default is a draft that released servers refuse), its name
//! and version, and the elicitation capability (form and URL) — the versions it accepts
//! in the answer, and its side of the server's requests: `elicitation/create` goes to
//! the owner of the call in flight (`asking`, worded by `elicit`).
//!
//! Pincer announces neither sampling nor roots: a server that asks for them anyway gets
//! rmcp's answers (method not found; no roots). A server's log messages go to Pincer's
//! log at debug level. This file must not decide who answers a question (`asking` does)
//! or how it is worded (`elicit`).

use std::sync::Arc;

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorData, FormElicitationCapability, Implementation, ProtocolVersion,
    UrlElicitationCapability,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};

use super::asking::Calls;

/// The protocol version Pincer offers: the latest released revision.
pub const OFFERED: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The versions a server may answer with: the released revisions up to `OFFERED`. A
/// server answering an older one is spoken to in that one (rmcp follows the answer).
pub const ACCEPTED: [ProtocolVersion; 4] = [
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
];

/// Whether Pincer speaks `version`, the one a server answered `initialize` with.
pub(super) fn accepts(version: &ProtocolVersion) -> bool {
    ACCEPTED.contains(version)
}

/// Pincer's side of one connection.
pub(super) struct PincerClient {
    /// The server's name in config, for the questions and the log.
    server: String,
    /// The server's calls in flight, to find whose call a question belongs to.
    calls: Arc<Calls>,
}

impl PincerClient {
    pub(super) fn new(server: &str, calls: Arc<Calls>) -> Self {
        Self {
            server: server.to_string(),
            calls,
        }
    }
}

impl ClientHandler for PincerClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::new())
                .with_url(UrlElicitationCapability::new()),
        );
        let mut info = ClientConfig::new(
            capabilities,
            Implementation::new("pincer", env!("CARGO_PKG_VERSION")).with_title("Pincer"),
        );
        info.protocol_version = OFFERED;
        info
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let (asker, asking) = match self.calls.asker() {
            Ok(found) => found,
            Err(why) => {
                tracing::info!(mcp_server = %self.server, "an elicitation was declined: {why}");
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
        };
        let _asked = asking.begin();
        let result = super::elicit::answer(&self.server, request, asker.as_ref()).await;
        tracing::info!(mcp_server = %self.server, action = ?result.action, "elicitation answered");
        Ok(result)
    }

    #[expect(
        deprecated,
        reason = "logging is deprecated only in the draft (SEP-2577); 2025-11-25, the version Pincer speaks, has it"
    )]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let logger = params.logger.as_deref().unwrap_or_default();
        tracing::debug!(mcp_server = %self.server, level = ?params.level, %logger, "server log: {}", params.data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_offers_the_released_version_and_elicitation() {
        let client = PincerClient::new("s", Arc::default());
        let info = serde_json::to_value(client.get_info()).unwrap();
        assert_eq!(info["protocolVersion"], "2025-11-25");
        assert_eq!(info["clientInfo"]["name"], "pincer");
        assert_eq!(
            info["capabilities"]["elicitation"],
            serde_json::json!({"form": {}, "url": {}})
        );
        assert!(info["capabilities"].get("sampling").is_none());
        assert!(info["capabilities"].get("roots").is_none());
    }

    #[test]
    fn released_versions_are_accepted_and_drafts_are_not() {
        assert!(accepts(&ProtocolVersion::V_2025_03_26));
        assert!(accepts(&ProtocolVersion::V_2025_11_25));
        assert!(!accepts(&ProtocolVersion::V_2026_07_28));
        let unknown: ProtocolVersion = serde_json::from_str("\"2023-01-01\"").unwrap();
        assert!(!accepts(&unknown));
    }
}
