//! `send_message`: the model sends a message to the current chat, or to a chat the
//! owner allows — the owners' own chats (`agent.owners`). Anything else is refused, so
//! a prompt-injected page cannot make the assistant message strangers.

use std::sync::Arc;

use async_trait::async_trait;
use pincer_channels::{OutboundBody, OutboundMessage, Target};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Tool, ToolContext, ToolError, string_arg};
use crate::provider::ToolSpec;

pub struct SendMessage {
    pub outbound: mpsc::Sender<OutboundMessage>,
    /// Chats besides the current one that messages may go to.
    pub allowed: Vec<Target>,
}

impl SendMessage {
    /// Allowed targets from `agent.owners` ("telegram:42" → Telegram chat 42).
    pub fn new(outbound: mpsc::Sender<OutboundMessage>, owners: &[String]) -> Arc<Self> {
        let allowed = owners
            .iter()
            .filter_map(|owner| owner.split_once(':'))
            .map(|(channel, id)| Target {
                channel: channel.into(),
                chat_id: id.into(),
                thread_id: None,
                user: false,
            })
            .collect();
        Arc::new(Self { outbound, allowed })
    }
}

#[async_trait]
impl Tool for SendMessage {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "send_message".into(),
            description: "Send an extra message now, to this chat or to one of the owner's chats (channel + chat). Your reply is sent anyway.".into(),
            input_schema: json!({"type": "object", "properties": {
                "text": {"type": "string"},
                "channel": {"type": "string"},
                "chat": {"type": "string"}
            }, "required": ["text"]}),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let text = string_arg(&args, "text")?;
        if text.trim().is_empty() {
            return Err(ToolError::new("the message is empty"));
        }
        let channel = args.get("channel").and_then(Value::as_str);
        let chat = args.get("chat").and_then(Value::as_str);
        let target = match (channel, chat, &ctx.origin) {
            (None, None, Some(origin)) => origin.clone(),
            (None, None, None) => {
                return Err(ToolError::new(
                    "there is no current chat; give channel and chat",
                ));
            }
            (Some(channel), Some(chat), _) => {
                let wanted = Target {
                    channel: channel.into(),
                    chat_id: chat.into(),
                    thread_id: None,
                    user: false,
                };
                let is_here = ctx
                    .origin
                    .as_ref()
                    .is_some_and(|o| o.channel == wanted.channel && o.chat_id == wanted.chat_id);
                if !is_here && !self.allowed.contains(&wanted) {
                    return Err(ToolError::new(format!(
                        "{channel}:{chat} is not a chat you may message; you can message this chat and the owner's chats (agent.owners)"
                    )));
                }
                wanted
            }
            _ => {
                return Err(ToolError::new(
                    "give both channel and chat, or neither for this chat",
                ));
            }
        };
        let message = OutboundMessage {
            target: target.clone(),
            body: OutboundBody::Text {
                text: text.to_string(),
                streamed: false,
            },
            reply_to: None,
        };
        self.outbound.send(message).await.map_err(|_| {
            ToolError::new("the message could not be queued: the assistant is shutting down")
        })?;
        Ok(format!("sent to {}:{}", target.channel, target.chat_id))
    }
}
