//! The SDK's in-process MCP servers (`--mcp-config` servers of `type: "sdk"`): each
//! JSON-RPC message Pincer's MCP client has for one goes out as a `mcp_message`
//! control request, and the `control_response`'s `mcp_response` comes back as the
//! server's answer (`pincer_core::mcp::HostLink` is the client's end).

use std::collections::HashMap;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use pincer_core::mcp::{HostLink, HostMessage, McpServerConfig};

/// The servers' messages waiting for an answer.
#[derive(Default)]
pub(super) struct SdkServers {
    waiting: HashMap<String, oneshot::Sender<Result<Value, String>>>,
    next: u64,
}

/// The MCP servers to start for `names` (the host's own: their tools are the owner's
/// code, so their descriptions are believed), and where their messages arrive.
pub(super) fn servers(names: &[String]) -> (Vec<McpServerConfig>, mpsc::Receiver<HostMessage>) {
    let (link, messages): (HostLink, _) = mpsc::channel(16);
    let configs = names
        .iter()
        .map(|name| McpServerConfig {
            name: name.clone(),
            host: Some(link.clone()),
            trusted: true,
            ..Default::default()
        })
        .collect();
    (configs, messages)
}

impl SdkServers {
    /// The `control_request` line carrying `message`; `None` when nobody can answer
    /// (the host closed its input), and the message is refused.
    pub fn request(&mut self, message: HostMessage, stdin_open: bool) -> Option<Value> {
        if !stdin_open {
            let _ = message.answer.send(Err("the host closed its input".into()));
            return None;
        }
        self.next += 1;
        let id = format!("pincer-mcp-{}", self.next);
        self.waiting.insert(id.clone(), message.answer);
        Some(
            json!({"type": "control_request", "request_id": id, "request": {
                "subtype": "mcp_message",
                "server_name": message.server,
                "message": message.message,
            }}),
        )
    }

    /// The host's `control_response` `response`, if it answers one of ours: handed on.
    pub fn answered(&mut self, response: &Value) -> bool {
        let id = response["request_id"].as_str().unwrap_or_default();
        let Some(answer) = self.waiting.remove(id) else {
            return false;
        };
        let reply = if response["subtype"] == "error" {
            Err(response["error"]
                .as_str()
                .unwrap_or("the host's server failed without a reason")
                .to_string())
        } else {
            Ok(response["response"]["mcp_response"].clone())
        };
        let _ = answer.send(reply);
        true
    }

    /// Nobody is left to answer: every waiting message fails.
    pub fn close(&mut self) {
        self.waiting.clear();
    }
}
