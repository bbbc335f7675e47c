//! Approval questions as message components: three buttons (Allow once / Always /
//! Deny) whose `custom_id` is `approval::button_data`. A press is handed to the shared
//! `PendingApprovals` (which decides whether the presser may answer) and answered at
//! once with an ephemeral message carrying the toast — Discord shows "This interaction
//! failed" unless an interaction is answered within 3 s. The core then settles the
//! question: its text replaced by the outcome and its buttons removed. A question for
//! a person (`Target::user`, e.g. a scheduled job's turn delivered to the owner) goes
//! to their DM, opened on demand: the core hands these targets over directly.

use async_trait::async_trait;
use reqwest::Method;
use serde_json::{Value, json};
use serenity::model::application::ComponentInteraction;

use super::Discord;
use super::rest::Rest;
use super::send::{message_path, post_message};
use crate::approval::{self, Button, Choice, PendingApprovals};
use crate::channel::{ApprovalPrompter, ChannelError};
use crate::direct;
use crate::message::Target;

/// Interaction callback types.
const CHANNEL_MESSAGE: u8 = 4;
const DEFERRED_UPDATE: u8 = 6;
/// Message flag: only the presser sees it.
const EPHEMERAL: u64 = 1 << 6;

/// A question's buttons in action rows of at most five (Discord's limit).
pub(super) fn rows(request_id: &str, buttons: &[Button]) -> Vec<Value> {
    buttons
        .chunks(5)
        .map(|row| {
            let row: Vec<Value> = row
                .iter()
                .map(|button| {
                    // Button styles: 1 primary, 2 secondary, 4 danger.
                    let style = match button.choice {
                        Choice::Once => 1,
                        Choice::Always | Choice::Pick(_) => 2,
                        Choice::Deny => 4,
                    };
                    json!({
                        "type": 2,
                        "style": style,
                        "label": button.label,
                        "custom_id": approval::button_data(request_id, button.choice),
                    })
                })
                .collect();
            json!({"type": 1, "components": row})
        })
        .collect()
}

#[async_trait]
impl ApprovalPrompter for Discord {
    async fn ask_with(
        &self,
        target: &Target,
        question: &str,
        request_id: &str,
        buttons: &[Button],
    ) -> Result<String, ChannelError> {
        let body = json!({
            "content": question,
            "components": rows(request_id, buttons),
            "allowed_mentions": {"parse": []},
        });
        let target = direct::resolve(self, target).await?;
        post_message(&self.rest, &target, body).await
    }

    async fn settle(
        &self,
        target: &Target,
        message_id: &str,
        text: &str,
    ) -> Result<(), ChannelError> {
        let body = json!({"content": text, "components": []});
        let target = direct::resolve(self, target).await?;
        self.rest
            .json(Method::PATCH, &message_path(&target, message_id)?, &body)
            .await
            .map(|_| ())
    }
}

/// A button was pressed: answer the question if it is one of ours, and the interaction
/// in any case.
pub(super) async fn pressed(
    rest: &Rest,
    approvals: &PendingApprovals,
    press: &ComponentInteraction,
) {
    let answer = match approval::parse_button(&press.data.custom_id) {
        Some((request_id, choice)) => {
            let presser = format!("{}:{}", super::CHANNEL, press.user.id.get());
            let answered = approvals.answer(request_id, &presser, choice);
            tracing::info!(channel = super::CHANNEL, %presser, ?answered, "approval button pressed");
            json!({
                "type": CHANNEL_MESSAGE,
                "data": {"content": answered.toast(), "flags": EPHEMERAL},
            })
        }
        // Not a button of ours: acknowledge it and change nothing.
        None => json!({"type": DEFERRED_UPDATE}),
    };
    let path = format!("/interactions/{}/{}/callback", press.id.get(), press.token);
    if let Err(err) = rest.json(Method::POST, &path, &answer).await {
        tracing::warn!(
            channel = super::CHANNEL,
            "could not answer a button press: {err}"
        );
    }
}
