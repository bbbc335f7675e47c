//! What Pincer is to an MCP server: the `initialize` it sends — the newest *released*
//! protocol version (rmcp's default is a draft that released servers refuse), its name
//! and version — and the versions it accepts in the answer.
//!
//! Pincer announces no capability (sampling, roots, elicitation): a server that asks
//! for them anyway gets rmcp's answers (method not found; no roots; decline).

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};

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
pub fn accepts(version: &ProtocolVersion) -> bool {
    ACCEPTED.contains(version)
}

/// Pincer's side of one connection.
pub(super) struct PincerClient;

impl ClientHandler for PincerClient {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("pincer", env!("CARGO_PKG_VERSION")).with_title("Pincer"),
        );
        info.protocol_version = OFFERED;
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_offers_the_released_version() {
        let client = PincerClient;
        let info = serde_json::to_value(client.get_info()).unwrap();
        assert_eq!(info["protocolVersion"], "2025-11-25");
        assert_eq!(info["clientInfo"]["name"], "pincer");
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
