//! Questions for the editor while a turn runs: a call that needs approval becomes a
//! `session/request_permission` (allow once, always, reject), and the `question` tool's
//! choices become the options of one. The answer goes back to the core as an
//! `Approval`; an editor that cannot be asked is an `Unavailable`, never a yes.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};

use super::turn::kind;
use crate::Ask;
use pincer_core::tools::approval::Approval;
use pincer_core::tools::mode::EXIT_PLAN_MODE;

/// Ask the client about a call: allow once, always, or reject.
pub(super) async fn permission(
    cx: &ConnectionTo<Client>,
    session: &SessionId,
    ask: &Ask,
) -> Approval {
    let request = &ask.request;
    if request.tool == pincer_core::tools::question::QUESTION {
        return question(cx, session, ask).await;
    }
    let title = if request.tool == EXIT_PLAN_MODE {
        format!(
            "Leave plan mode and carry out the plan:\n{}",
            request.input["plan"].as_str().unwrap_or_default()
        )
    } else {
        format!("{} {}", request.tool, request.subject)
    };
    let question = RequestPermissionRequest::new(
        session.clone(),
        ToolCallUpdate::new(
            request.call_id.clone(),
            ToolCallUpdateFields::new()
                .title(title)
                .kind(kind(&request.tool))
                .raw_input(request.input.clone()),
        ),
        vec![
            PermissionOption::new("allow", "Allow once", PermissionOptionKind::AllowOnce),
            PermissionOption::new("always", "Always allow", PermissionOptionKind::AllowAlways),
            PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
        ],
    );
    match cx.send_request(question).block_task().await {
        Ok(answer) => match answer.outcome {
            RequestPermissionOutcome::Selected(chosen) => match &*chosen.option_id.0 {
                "allow" => Approval::Once,
                "always" if request.tool != EXIT_PLAN_MODE => Approval::Always,
                "always" => Approval::Once,
                _ => Approval::Refused("the user rejected it in the editor".into()),
            },
            _ => Approval::Refused("the prompt was cancelled".into()),
        },
        Err(err) => Approval::Unavailable(format!("the editor could not be asked: {err}")),
    }
}

/// A question as a permission request: one option per choice (yes and no when it
/// gives none); the chosen option is the answer.
async fn question(cx: &ConnectionTo<Client>, session: &SessionId, ask: &Ask) -> Approval {
    let request = &ask.request;
    let mut choices: Vec<String> = request.input["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o.as_str().map(str::to_string))
        .collect();
    if choices.is_empty() {
        choices = vec!["Yes".into(), "No".into()];
    }
    let options = choices
        .iter()
        .enumerate()
        .map(|(n, label)| {
            PermissionOption::new(
                format!("choice-{n}"),
                label.clone(),
                PermissionOptionKind::AllowOnce,
            )
        })
        .collect();
    let question = RequestPermissionRequest::new(
        session.clone(),
        ToolCallUpdate::new(
            request.call_id.clone(),
            ToolCallUpdateFields::new()
                .title(pincer_core::tools::question::shown(&request.input))
                .kind(ToolKind::Other)
                .raw_input(request.input.clone()),
        ),
        options,
    );
    match cx.send_request(question).block_task().await {
        Ok(answer) => match answer.outcome {
            RequestPermissionOutcome::Selected(chosen) => chosen
                .option_id
                .0
                .strip_prefix("choice-")
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| choices.get(n))
                .map_or_else(
                    || Approval::Refused("no choice was made".into()),
                    |label| Approval::Answered(label.clone()),
                ),
            _ => Approval::Refused("the question was cancelled".into()),
        },
        Err(err) => Approval::Unavailable(format!("the editor could not be asked: {err}")),
    }
}
