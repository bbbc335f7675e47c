//! One `session/prompt`: the prompt becomes a message of the conversation, and the
//! turn's chunks go to the client as session updates — `agent_message_chunk`,
//! `agent_thought_chunk`, `tool_call` and `tool_call_update`, the `todo` tool's items
//! as a `plan` — with the approvals it needs asked on the way (`ask`). It must not
//! decide anything about the turn itself: the core runs it.

use std::collections::HashSet;

use agent_client_protocol::Client;
use agent_client_protocol::Error;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentChunk, CurrentModeUpdate, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    PromptRequest, SessionNotification, SessionUpdate, StopReason, ToolCall, ToolCallContent,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use pincer_channels::{Chunk, FinishReason, OutboundBody};
use tokio::sync::mpsc;

use super::{Route, State, ask, content, internal};
use pincer_core::tools::approval::Approval;
use pincer_core::tools::mode::{ENTER_PLAN_MODE, EXIT_PLAN_MODE};

/// Run one prompt's turn and stream it to the client.
pub(super) async fn prompt(
    state: &State,
    cx: &ConnectionTo<Client>,
    request: PromptRequest,
) -> Result<StopReason, Error> {
    let conversation = state.conversation(&request.session_id.0)?;
    let chat = &conversation.chat;
    let message = content::message(chat, &state.workspace.join("inbox"), &request.prompt)?;
    // Fed from the outbound fan-out under a lock, where nothing may wait; bounded by one
    // turn's output, which this loop forwards as it comes.
    #[expect(clippy::disallowed_methods, reason = "see above")]
    let (out_tx, mut out) = mpsc::unbounded_channel();
    #[expect(clippy::disallowed_methods, reason = "see above")]
    let (asks_tx, mut asks) = mpsc::unbounded_channel();
    state
        .routes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(
            chat.id.clone(),
            Route {
                out: out_tx,
                asks: asks_tx,
            },
        );
    let sent = state.handles.inbound.send(message.into()).await;
    if sent.is_err() {
        return Err(internal("the core stopped"));
    }
    let session = request.session_id.clone();
    let update = |update: SessionUpdate| {
        cx.send_notification(SessionNotification::new(session.clone(), update))
    };
    let mut started = HashSet::new();
    // `enter_plan_mode` calls in flight: once one succeeds, the client hears the mode.
    let mut entering = HashSet::new();
    let stop = loop {
        tokio::select! {
            message = out.recv() => {
                let Some(message) = message else { break StopReason::EndTurn };
                let OutboundBody::Chunk(chunk) = message.body else {
                    if let OutboundBody::Done = message.body {
                        break StopReason::EndTurn;
                    }
                    if let Some(text) = message.body.complete_text() {
                        update(SessionUpdate::AgentMessageChunk(ContentChunk::new(text.into())))?;
                    }
                    continue;
                };
                match chunk {
                    Chunk::TextDelta { delta, .. } => {
                        update(SessionUpdate::AgentMessageChunk(ContentChunk::new(delta.into())))?;
                    }
                    Chunk::ReasoningDelta { delta, .. } => {
                        update(SessionUpdate::AgentThoughtChunk(ContentChunk::new(delta.into())))?;
                    }
                    Chunk::ToolInputStart { tool_call_id, tool_name } => {
                        started.insert(tool_call_id.clone());
                        update(SessionUpdate::ToolCall(
                            ToolCall::new(tool_call_id, tool_name.clone())
                                .kind(kind(&tool_name))
                                .status(ToolCallStatus::Pending),
                        ))?;
                    }
                    Chunk::ToolInputAvailable { tool_call_id, tool_name, input } => {
                        if tool_name == ENTER_PLAN_MODE {
                            entering.insert(tool_call_id.clone());
                        }
                        if tool_name == "todo" {
                            update(SessionUpdate::Plan(plan(&input)))?;
                        }
                        if started.contains(&tool_call_id) {
                            update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                                tool_call_id,
                                ToolCallUpdateFields::new()
                                    .raw_input(input)
                                    .status(ToolCallStatus::InProgress),
                            )))?;
                        } else {
                            started.insert(tool_call_id.clone());
                            update(SessionUpdate::ToolCall(
                                ToolCall::new(tool_call_id, tool_name.clone())
                                    .kind(kind(&tool_name))
                                    .status(ToolCallStatus::InProgress)
                                    .raw_input(input),
                            ))?;
                        }
                    }
                    Chunk::ToolOutputAvailable { tool_call_id, output } => {
                        if entering.remove(&tool_call_id) {
                            update(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new("plan")))?;
                        }
                        update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                            tool_call_id,
                            ToolCallUpdateFields::new()
                                .status(ToolCallStatus::Completed)
                                .content(vec![ToolCallContent::from(output)]),
                        )))?;
                    }
                    Chunk::ToolOutputError { tool_call_id, error_text } => {
                        update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                            tool_call_id,
                            ToolCallUpdateFields::new()
                                .status(ToolCallStatus::Failed)
                                .content(vec![ToolCallContent::from(error_text)]),
                        )))?;
                    }
                    Chunk::Error { error_text } => {
                        update(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                            format!("⚠️ {error_text}").into(),
                        )))?;
                    }
                    Chunk::Finish { reason, .. } => {
                        break match reason {
                            FinishReason::Stop | FinishReason::Error => StopReason::EndTurn,
                            FinishReason::Length => StopReason::MaxTurnRequests,
                            FinishReason::Aborted => StopReason::Cancelled,
                        };
                    }
                    _ => {}
                }
            }
            ask = asks.recv() => {
                let Some(ask) = ask else { continue };
                let approval = ask::permission(cx, &session, &ask).await;
                let leaving_plan = ask.request.tool == EXIT_PLAN_MODE
                    && matches!(approval, Approval::Once | Approval::Always);
                let _ = ask.answer.send(approval);
                if leaving_plan {
                    update(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new("default")))?;
                }
            }
        }
    };
    state
        .routes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&chat.id);
    Ok(stop)
}

/// What kind of call a tool makes, for the client's icons.
pub(super) fn kind(tool: &str) -> ToolKind {
    match tool {
        "read_file" | "list_dir" | "memory_read" => ToolKind::Read,
        "write_file" | "edit_file" => ToolKind::Edit,
        "exec" => ToolKind::Execute,
        "glob" | "grep" | "web_search" | "memory_search" | "tool_search" => ToolKind::Search,
        "web_fetch" => ToolKind::Fetch,
        EXIT_PLAN_MODE => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

/// The `todo` tool's items as a plan.
fn plan(input: &serde_json::Value) -> Plan {
    let entries = input["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| {
            let text = item["text"].as_str().unwrap_or_default().to_string();
            let status = if item["done"] == true {
                PlanEntryStatus::Completed
            } else {
                PlanEntryStatus::Pending
            };
            PlanEntry::new(text, PlanEntryPriority::Medium, status)
        })
        .collect();
    Plan::new(entries)
}
