//! `send_message`: the model sends a message to the current chat, or — in an owner's
//! turn — to an owner's own direct chat, named by their canonical id in `agent.owners`
//! (`discord:<user id>`: the channel opens the DM). Anything else is refused, so a
//! prompt-injected page cannot make the assistant message strangers, and a member's
//! turn cannot message anyone but the chat it is in.

use std::sync::Arc;

use async_trait::async_trait;
use pincer_channels::{OutboundBody, OutboundMessage, Target};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Effects, ToolContext, ToolError, TypedTool};

pub struct SendMessage {
    pub outbound: crate::outbox::Outbox,
    /// `agent.owners`: the direct chats owners' turns may also message.
    pub owners: Vec<String>,
}

impl SendMessage {
    pub fn new(outbound: crate::outbox::Outbox, owners: &[String]) -> Arc<Self> {
        Arc::new(Self {
            outbound,
            owners: owners.to_vec(),
        })
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessageArgs {
    text: String,
    channel: Option<String>,
    chat: Option<String>,
}

#[async_trait]
impl TypedTool for SendMessage {
    type Args = SendMessageArgs;
    const NAME: &'static str = "send_message";
    const EFFECTS: Effects = Effects::SENDS;

    fn description(&self) -> String {
        "Send an extra message now, to this chat or to one of the owner's chats (channel + chat). Your reply is sent anyway.".into()
    }

    async fn run(&self, args: SendMessageArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let text = args.text.as_str();
        if text.trim().is_empty() {
            return Err(ToolError::new("the message is empty"));
        }
        let channel = args.channel.as_deref();
        let chat = args.chat.as_deref();
        let target = match (channel, chat, &ctx.origin) {
            (None, None, Some(origin)) => origin.clone(),
            (None, None, None) => {
                return Err(ToolError::new(
                    "there is no current chat; give channel and chat",
                ));
            }
            (Some(channel), Some(chat), _) => {
                let here = ctx
                    .origin
                    .as_ref()
                    .filter(|o| o.channel == channel && o.chat_id == chat);
                let canonical = format!("{channel}:{chat}");
                match here {
                    Some(here) => here.clone(),
                    None if ctx.caller.origin.is_owner() && self.owners.contains(&canonical) => {
                        Target::user(&canonical)
                            .ok_or_else(|| ToolError::new(format!("`{canonical}` is not a chat")))?
                    }
                    None if ctx.caller.origin.is_owner() => {
                        return Err(ToolError::new(format!(
                            "{canonical} is not a chat you may message; you can message this chat and the owners' own chats (agent.owners: {})",
                            self.owners.join(", ")
                        )));
                    }
                    None => {
                        return Err(ToolError::new(format!(
                            "{canonical} is not a chat you may message; in this conversation you can message only this chat"
                        )));
                    }
                }
            }
            _ => {
                return Err(ToolError::new(
                    "give both channel and chat, or neither for this chat",
                ));
            }
        };
        let message = OutboundMessage {
            target: target.clone(),
            body: OutboundBody::Text(text.to_string()),
            reply_to: None,
            entry: None,
        };
        self.outbound.send(message).await.map_err(|_| {
            ToolError::new("the message could not be queued: the assistant is shutting down")
        })?;
        Ok(format!("sent to {}:{}", target.channel, target.chat_id))
    }
}
