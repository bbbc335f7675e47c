//! The host's `UserPromptSubmit` and `Stop` hooks around a turn (the tool hooks run in
//! the tool pipeline; what the answers mean: `crate::tools::host_hooks`). Only a
//! program driving the conversation registers them; everywhere else these are no-ops.

use serde_json::json;

use super::Agent;
use crate::agent::outcome::TurnError;
use crate::steering::Queued;
use crate::tools::host_hooks::{self, HostHook};

/// How often `Stop` hooks may send the model back to work in one turn.
pub(super) const MAX_STOP_BLOCKS: u32 = 8;

async fn answers(
    agent: &Agent,
    first: &Queued,
    event: HostHook,
    input: serde_json::Value,
) -> Vec<serde_json::Value> {
    // A subagent's turn is the parent's work: its tools are hooked, not its ends.
    if first.task.is_some() {
        return Vec::new();
    }
    match agent.guard.approvers.get(&first.target.channel) {
        Some(host) => host.hook(event, &input).await,
        None => Vec::new(),
    }
}

/// `UserPromptSubmit`: `Ok(context to add)`, or `Err` when a hook blocked the prompt
/// (the turn then ends with its reason; the message stays stored).
pub(super) async fn prompt_submitted(
    agent: &Agent,
    first: &Queued,
) -> Result<Option<String>, TurnError> {
    let input = json!({"hook_event_name": HostHook::UserPromptSubmit.name(), "prompt": first.text});
    let answers = answers(agent, first, HostHook::UserPromptSubmit, input).await;
    if let Some(why) = host_hooks::blocked(&answers) {
        return Err(TurnError::Blocked(why));
    }
    Ok(host_hooks::context(&answers, HostHook::UserPromptSubmit))
}

/// `Stop`: the reason to go on when a hook blocked the stop (it becomes the model's
/// next input), or `None` to end the turn. `active`: a Stop hook already sent the
/// model back this turn.
pub(super) async fn stopping(
    agent: &Agent,
    first: &Queued,
    active: bool,
    last: &str,
) -> Option<String> {
    let input = json!({
        "hook_event_name": HostHook::Stop.name(),
        "stop_hook_active": active,
        "last_assistant_message": last,
    });
    let answers = answers(agent, first, HostHook::Stop, input).await;
    answers
        .iter()
        .find(|answer| answer["decision"] == "block")
        .map(|answer| {
            answer["reason"]
                .as_str()
                .filter(|r| !r.trim().is_empty())
                .unwrap_or("The host's Stop hook asked you to continue.")
                .to_string()
        })
}
