//! An MCP server that lives inside the program driving Pincer — the Claude Agent SDKs'
//! in-process servers (`create_sdk_mcp_server`, `createSdkMcpServer`). Its JSON-RPC
//! travels inside the host protocol: each message Pincer's client sends becomes an
//! `mcp_message` control request, and the host's `mcp_response` is the server's answer.
//!
//! [`HostLink`] is the host's side (one [`HostMessage`] per message, with a way back for
//! the answer); [`Bridge`] is the rmcp transport over it, so such a server is connected,
//! listed and called like any other. This file must not know the host protocol's lines:
//! the host writes and reads them.

use std::future::Future;

use rmcp::model::{ErrorCode, ErrorData, JsonRpcMessage};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// One JSON-RPC message for the host's in-process server `server`. `answer` gets the
/// server's reply (`Ok`), or why the host could not deliver it (`Err`); dropping it
/// says the host is gone.
#[derive(Debug)]
pub struct HostMessage {
    pub server: String,
    pub message: Value,
    pub answer: oneshot::Sender<Result<Value, String>>,
}

/// Where a host's in-process servers are reached.
pub type HostLink = mpsc::Sender<HostMessage>;

/// rmcp's transport to one in-process server of the host.
pub(super) struct Bridge {
    server: String,
    link: HostLink,
    /// Replies to our requests, in the order they come back.
    replies: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    replies_tx: mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
}

impl Bridge {
    pub(super) fn new(server: &str, link: HostLink) -> Self {
        let (replies_tx, replies) = mpsc::channel(16);
        Self {
            server: server.to_string(),
            link,
            replies,
            replies_tx,
        }
    }
}

fn gone() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::BrokenPipe,
        "the host program closed its input",
    )
}

impl rmcp::transport::Transport<RoleClient> for Bridge {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (link, server, replies) = (
            self.link.clone(),
            self.server.clone(),
            self.replies_tx.clone(),
        );
        async move {
            // Only a request is answered; a notification's acknowledgement is dropped.
            let id = match &item {
                JsonRpcMessage::Request(request) => Some(request.id.clone()),
                _ => None,
            };
            let message = serde_json::to_value(&item)?;
            let (answer, answered) = oneshot::channel();
            link.send(HostMessage {
                server,
                message,
                answer,
            })
            .await
            .map_err(|_| gone())?;
            let Some(id) = id else { return Ok(()) };
            // The reply may take as long as the tool does: wait for it apart, so other
            // messages go on meanwhile.
            tokio::spawn(async move {
                let failed = |why: String| {
                    JsonRpcMessage::error(
                        ErrorData::new(ErrorCode::INTERNAL_ERROR, why, None),
                        Some(id.clone()),
                    )
                };
                let reply = match answered.await {
                    Ok(Ok(reply)) => serde_json::from_value(reply).unwrap_or_else(|err| {
                        failed(format!(
                            "the host's server answered something else than JSON-RPC: {err}"
                        ))
                    }),
                    Ok(Err(why)) => failed(why),
                    Err(_) => failed(gone().to_string()),
                };
                let _ = replies.send(reply).await;
            });
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        tokio::select! {
            biased;
            reply = self.replies.recv() => reply,
            // The host is gone: the connection ends (the manager marks it failed).
            () = self.link.closed() => None,
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.replies.close();
        Ok(())
    }
}
