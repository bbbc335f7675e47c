//! The SDK's in-process MCP servers (`--mcp-config` servers of `type: "sdk"`): each
//! JSON-RPC message Pincer's MCP client has for one goes out as a `mcp_message`
//! control request, and the `control_response`'s `mcp_response` comes back as the
//! server's answer (`pincer_core::mcp::HostLink` is the client's end).

use std::collections::HashMap;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::wire::{McpAnswer, PincerRequest, Question};
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
    /// The `control_request` carrying `message`; `None` when nobody can answer (the
    /// host closed its input), and the message is refused.
    pub(crate) fn request(
        &mut self,
        message: HostMessage,
        stdin_open: bool,
    ) -> Option<PincerRequest> {
        if !stdin_open {
            let _ = message.answer.send(Err("the host closed its input".into()));
            return None;
        }
        self.next += 1;
        let id = format!("pincer-mcp-{}", self.next);
        self.waiting.insert(id.clone(), message.answer);
        Some(PincerRequest {
            request_id: id,
            request: Question::McpMessage {
                server_name: message.server,
                message: message.message,
            },
        })
    }

    /// Whether request `id` is one of ours.
    pub(crate) fn waits_for(&self, id: &str) -> bool {
        self.waiting.contains_key(id)
    }

    /// The host's answer to request `id` (a `success`'s body, or an `error`'s reason),
    /// handed on to the server's client.
    pub(crate) fn answered(&mut self, id: &str, outcome: Result<Value, Option<String>>) {
        let Some(answer) = self.waiting.remove(id) else {
            return;
        };
        let reply = match outcome {
            Err(error) => {
                Err(error.unwrap_or_else(|| "the host's server failed without a reason".into()))
            }
            Ok(body) => Ok(crate::lenient::read::<McpAnswer>(body).mcp_response),
        };
        let _ = answer.send(reply);
    }

    /// Nobody is left to answer: every waiting message fails.
    pub(crate) fn close(&mut self) {
        self.waiting.clear();
    }
}
