//! Approval questions as Block Kit messages: the question, then three buttons (Allow
//! once / Always / Deny) whose `value` is `approval::button_data`. A press arrives as an
//! `interactive` envelope (`block_actions`), acknowledged at once by the socket; here it
//! is answered through the shared `PendingApprovals` (who may answer lives there) and
//! the presser sees the outcome as an ephemeral message only they can see. Settling a
//! question replaces its blocks with the outcome, which removes the buttons. A question
//! for a person (`Target::user`, e.g. a scheduled job's turn delivered to the owner)
//! goes to their IM, opened on demand: the core hands these targets over directly.

use async_trait::async_trait;
use serde_json::{Value, json};
use slack_morphism::prelude::*;
use tokio::sync::mpsc;

use super::Slack;
use super::convert::CHANNEL;
use super::errors::{Token, channel_error};
use super::send::{channel_id, thread_ts};
use crate::approval::{Button, Choice, button_data, parse_button};
use crate::channel::{ApprovalPrompter, ChannelError};
use crate::direct;
use crate::message::Target;
use crate::render::to_slack_mrkdwn;

/// The question's blocks: its text and its buttons (one actions block holds 25).
pub(super) fn question_blocks(question: &str, request_id: &str, buttons: &[Button]) -> Value {
    let buttons: Vec<Value> = buttons
        .iter()
        .map(|b| {
            // Action ids must differ within a block.
            let action = match b.choice {
                Choice::Pick(n) => format!("pincer-pick-{n}"),
                choice => format!(
                    "pincer-approve-{}",
                    choice.label().to_ascii_lowercase().replace(' ', "-")
                ),
            };
            let mut button = json!({
                "type": "button",
                "action_id": action,
                "text": { "type": "plain_text", "text": b.label },
                "value": button_data(request_id, b.choice),
            });
            match b.choice {
                Choice::Once => button["style"] = json!("primary"),
                Choice::Deny => button["style"] = json!("danger"),
                Choice::Always | Choice::Pick(_) => {}
            }
            button
        })
        .collect();
    json!([
        { "type": "section", "text": { "type": "mrkdwn", "text": to_slack_mrkdwn(question) } },
        { "type": "actions", "block_id": "pincer-approval", "elements": buttons },
    ])
}

fn blocks(value: Value) -> Result<Vec<SlackBlock>, ChannelError> {
    serde_json::from_value(value)
        .map_err(|e| ChannelError::permanent(format!("cannot build Slack blocks: {e}")))
}

#[async_trait]
impl ApprovalPrompter for Slack {
    async fn ask_with(
        &self,
        target: &Target,
        question: &str,
        request_id: &str,
        buttons: &[Button],
    ) -> Result<String, ChannelError> {
        let content = SlackMessageContent::new()
            .with_text(to_slack_mrkdwn(question))
            .with_blocks(blocks(question_blocks(question, request_id, buttons))?);
        let target = direct::resolve(self, target).await?;
        let request = SlackApiChatPostMessageRequest::new(channel_id(&target)?, content)
            .opt_thread_ts(thread_ts(&target));
        self.session()
            .chat_post_message(&request)
            .await
            .map(|sent| sent.ts.0)
            .map_err(|e| channel_error(&e, Token::Bot))
    }

    async fn settle(
        &self,
        target: &Target,
        message_id: &str,
        text: &str,
    ) -> Result<(), ChannelError> {
        let mrkdwn = to_slack_mrkdwn(text);
        // chat.update keeps the old blocks unless given new ones: one section, no buttons.
        let section = json!([{ "type": "section", "text": { "type": "mrkdwn", "text": mrkdwn } }]);
        let content = SlackMessageContent::new()
            .with_text(mrkdwn)
            .with_blocks(blocks(section)?);
        let target = direct::resolve(self, target).await?;
        let request = SlackApiChatUpdateRequest::new(
            channel_id(&target)?,
            content,
            SlackTs(message_id.to_string()),
        );
        self.session()
            .chat_update(&request)
            .await
            .map(|_| ())
            .map_err(|e| channel_error(&e, Token::Bot))
    }
}

/// What a `block_actions` payload says: who pressed which of our buttons where.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Press {
    pub user: String,
    pub channel: String,
    pub thread: Option<String>,
    pub request_id: String,
    pub choice: Choice,
}

pub(super) fn press(payload: &Value) -> Option<Press> {
    if payload["type"].as_str() != Some("block_actions") {
        return None;
    }
    let (request_id, choice) = payload["actions"]
        .as_array()?
        .iter()
        .find_map(|action| parse_button(action["value"].as_str()?))?;
    let channel = payload["channel"]["id"]
        .as_str()
        .or(payload["container"]["channel_id"].as_str())?;
    Some(Press {
        user: payload["user"]["id"].as_str()?.to_string(),
        channel: channel.to_string(),
        thread: payload["message"]["thread_ts"].as_str().map(str::to_string),
        request_id: request_id.to_string(),
        choice,
    })
}

impl Slack {
    /// Answer button presses as they come, until the socket side stops.
    pub(super) async fn answer_presses(&self, mut presses: mpsc::Receiver<Value>) {
        while let Some(payload) = presses.recv().await {
            self.on_press(&payload).await;
        }
        // The sender lives as long as the connection loop; nothing more to do.
        std::future::pending::<()>().await;
    }

    pub(super) async fn on_press(&self, payload: &Value) {
        let Some(press) = press(payload) else {
            tracing::debug!(
                channel = CHANNEL,
                "an interaction that is not one of our buttons"
            );
            return;
        };
        let presser = format!("{CHANNEL}:{}", press.user);
        let answered = self
            .approvals
            .answer(&press.request_id, &presser, press.choice);
        tracing::info!(channel = CHANNEL, user = %press.user, outcome = ?answered, "approval button pressed");
        let request = SlackApiChatPostEphemeralRequest::new(
            SlackChannelId(press.channel.clone()),
            SlackUserId(press.user.clone()),
            SlackMessageContent::new().with_text(answered.toast().to_string()),
        )
        .opt_thread_ts(press.thread.map(SlackTs));
        if let Err(err) = self.session().chat_post_ephemeral(&request).await {
            tracing::warn!(
                channel = CHANNEL,
                "cannot show the button's outcome: {}",
                channel_error(&err, Token::Bot)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_buttons_carry_the_shared_button_data() {
        let blocks = question_blocks("Run `ls`?", "abc1", &crate::approval::approval_buttons());
        let buttons = blocks[1]["elements"].as_array().unwrap();
        let values: Vec<&str> = buttons
            .iter()
            .map(|b| b["value"].as_str().unwrap())
            .collect();
        assert_eq!(
            values,
            Choice::ALL
                .map(|c| button_data("abc1", c))
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
        );
        let parsed: Vec<SlackBlock> = serde_json::from_value(blocks).unwrap();
        assert_eq!(parsed.len(), 2);
    }

    #[test]
    fn a_press_is_read_from_block_actions() {
        let payload = json!({
            "type": "block_actions",
            "user": {"id": "U1"},
            "channel": {"id": "D1"},
            "container": {"type": "message", "message_ts": "1.2", "channel_id": "D1"},
            "message": {"ts": "1.2", "thread_ts": "1.0"},
            "actions": [{"type": "button", "action_id": "x", "value": button_data("r9", Choice::Deny)}],
        });
        assert_eq!(
            press(&payload),
            Some(Press {
                user: "U1".into(),
                channel: "D1".into(),
                thread: Some("1.0".into()),
                request_id: "r9".into(),
                choice: Choice::Deny,
            })
        );
    }
}
