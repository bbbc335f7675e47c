//! `pincer acp`: an Agent Client Protocol agent over stdio (JSON-RPC), for editors such
//! as Zed, with the official `agent-client-protocol` crate. `initialize`, `session/new`
//! (a local conversation `terminal:dm:acp-…`; the workspace is Pincer's own),
//! `session/load` (a stored conversation: its messages are replayed, then answered),
//! `session/prompt` (the turn's chunks become `agent_message_chunk`,
//! `agent_thought_chunk`, `tool_call` and `tool_call_update`, and the `todo` tool's
//! items a `plan`), `session/request_permission` whenever a call needs approval,
//! `session/cancel`, and `session/set_mode` over the permission modes.
//!
//! The crate handles one message at a time: a prompt's turn runs in a task of its own,
//! so cancels and permission answers are read while it runs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock, ContentChunk, CurrentModeUpdate,
    Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    NewSessionRequest, NewSessionResponse, PermissionOption, PermissionOptionKind, Plan, PlanEntry,
    PlanEntryPriority, PlanEntryStatus, PromptCapabilities, PromptRequest, PromptResponse,
    RequestPermissionOutcome, RequestPermissionRequest, SessionMode, SessionModeState,
    SessionNotification, SessionUpdate, SetSessionModeRequest, SetSessionModeResponse, StopReason,
    ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{
    Agent, Client, Error, Stdio, on_receive_notification, on_receive_request,
};
use pincer_channels::{Chunk, FinishReason, OutboundBody, OutboundMessage};
use tokio::sync::mpsc;

use super::{Ask, Chat, Core, Handles};
use crate::home::Home;
use crate::provider::Part;
use crate::tools::approval::Approval;
use crate::tools::mode::{EXIT_PLAN_MODE, PermissionMode};

/// What the agent keeps between messages.
struct State {
    handles: Handles,
    workspace: std::path::PathBuf,
    /// Open conversations by ACP session id (their key).
    chats: Mutex<HashMap<String, Arc<Conversation>>>,
    /// Output and approval questions by conversation id (`Chat::id`), handed to the
    /// turn running there.
    routes: Mutex<HashMap<String, Route>>,
}

struct Conversation {
    chat: Chat,
}

/// Where a conversation's output and questions go while a turn runs.
#[derive(Clone)]
struct Route {
    out: mpsc::UnboundedSender<OutboundMessage>,
    asks: mpsc::UnboundedSender<Ask>,
}

pub async fn run(home: &Home) -> anyhow::Result<std::process::ExitCode> {
    let (asks_tx, mut asks) = mpsc::channel::<Ask>(8);
    let core = Core::start(home, asks_tx)?;
    let workspace = core.workspace.clone();
    let (handles, mut outbound, stop) = core.split();
    let state = Arc::new(State {
        handles,
        workspace,
        chats: Mutex::new(HashMap::new()),
        routes: Mutex::new(HashMap::new()),
    });
    // Route the core's output and questions to the turn of their conversation.
    let router = Arc::clone(&state);
    let routing = tokio::spawn(async move {
        loop {
            tokio::select! {
                message = outbound.recv() => {
                    let Some(message) = message else { break };
                    let route = router.route(&message.target.chat_id);
                    if let Some(route) = route {
                        let _ = route.out.send(message);
                    }
                }
                ask = asks.recv() => {
                    let Some(ask) = ask else { break };
                    match router.route(&ask.request.origin.chat_id) {
                        Some(route) => {
                            let _ = route.asks.send(ask);
                        }
                        None => {
                            let _ = ask.answer.send(Approval::Unavailable(
                                "no prompt is running in that session to ask in".into(),
                            ));
                        }
                    }
                }
            }
        }
    });
    let served = serve(state).await;
    routing.abort();
    stop.await;
    served.map_err(|e| anyhow::anyhow!("acp: {e}"))?;
    Ok(std::process::ExitCode::SUCCESS)
}

impl State {
    fn route(&self, chat_id: &str) -> Option<Route> {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(chat_id)
            .cloned()
    }

    fn conversation(&self, id: &str) -> Result<Arc<Conversation>, Error> {
        self.chats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
            .ok_or_else(|| Error::invalid_params().data(format!("no session {id}")))
    }

    async fn open(&self, key: Option<&str>) -> Result<Arc<Conversation>, Error> {
        let chat = super::open_chat(
            &self.handles.agent,
            &self.workspace,
            key,
            PermissionMode::Default,
            "acp",
        )
        .await
        .map_err(|e| Error::invalid_params().data(e.to_string()))?;
        let conversation = Arc::new(Conversation { chat });
        self.chats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(conversation.chat.key.clone(), Arc::clone(&conversation));
        Ok(conversation)
    }
}

fn modes(current: PermissionMode) -> SessionModeState {
    SessionModeState::new(
        current.as_str(),
        vec![
            SessionMode::new("default", "Ask before acting"),
            SessionMode::new("acceptEdits", "Accept edits"),
            SessionMode::new("plan", "Plan (read-only)"),
            SessionMode::new("bypassPermissions", "Don't ask"),
        ],
    )
}

fn internal(err: impl std::fmt::Display) -> Error {
    Error::internal_error().data(err.to_string())
}

async fn serve(state: Arc<State>) -> Result<(), Error> {
    let (s_new, s_load, s_mode, s_cancel, s_prompt) = (
        Arc::clone(&state),
        Arc::clone(&state),
        Arc::clone(&state),
        Arc::clone(&state),
        Arc::clone(&state),
    );
    Agent
        .v1()
        .name("pincer")
        .on_receive_request(
            async move |request: InitializeRequest,
                        responder: Responder<InitializeResponse>,
                        _cx: ConnectionTo<Client>| {
                let _ = request;
                responder.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(
                            AgentCapabilities::new()
                                .load_session(true)
                                .prompt_capabilities(PromptCapabilities::new()),
                        )
                        .agent_info(Implementation::new("pincer", env!("CARGO_PKG_VERSION"))),
                )
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        _cx: ConnectionTo<Client>| {
                match s_new.open(None).await {
                    Ok(conversation) => responder.respond(
                        NewSessionResponse::new(conversation.chat.key.clone())
                            .modes(modes(PermissionMode::Default)),
                    ),
                    Err(err) => responder.respond_with_error(err),
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let key = request.session_id.0.to_string();
                let conversation = match s_load.open(Some(&key)).await {
                    Ok(conversation) => conversation,
                    Err(err) => return responder.respond_with_error(err),
                };
                // The conversation so far, replayed before the answer.
                let history = s_load
                    .handles
                    .agent
                    .store()
                    .history(conversation.chat.session)
                    .await
                    .map_err(internal)?;
                for message in history {
                    let text: String = message
                        .parts
                        .iter()
                        .filter_map(|p| match p {
                            Part::Text { text } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect();
                    if text.trim().is_empty() {
                        continue;
                    }
                    let chunk = ContentChunk::new(ContentBlock::from(text));
                    let update = match message.role {
                        crate::store::Role::User => SessionUpdate::UserMessageChunk(chunk),
                        crate::store::Role::Assistant => SessionUpdate::AgentMessageChunk(chunk),
                        crate::store::Role::Tool => continue,
                    };
                    cx.send_notification(SessionNotification::new(
                        request.session_id.clone(),
                        update,
                    ))?;
                }
                responder.respond(LoadSessionResponse::new().modes(modes(PermissionMode::Default)))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest,
                        responder: Responder<SetSessionModeResponse>,
                        _cx: ConnectionTo<Client>| {
                let conversation = match s_mode.conversation(&request.session_id.0) {
                    Ok(conversation) => conversation,
                    Err(err) => return responder.respond_with_error(err),
                };
                match PermissionMode::parse(&request.mode_id.0) {
                    Some(mode) => {
                        s_mode
                            .handles
                            .agent
                            .modes()
                            .set(conversation.chat.session, mode);
                        responder.respond(SetSessionModeResponse::new())
                    }
                    None => responder.respond_with_error(
                        Error::invalid_params()
                            .data(format!("{} is not a mode", request.mode_id.0)),
                    ),
                }
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx: ConnectionTo<Client>| {
                if let Ok(conversation) = s_cancel.conversation(&notification.session_id.0) {
                    s_cancel.handles.dispatcher.stop(&conversation.chat.key);
                }
                Ok(())
            },
            on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let state = Arc::clone(&s_prompt);
                // Never wait for the turn here: cancels and permission answers must
                // still be read while it runs.
                cx.clone().spawn(async move {
                    match prompt(&state, &cx, request).await {
                        Ok(stop) => responder.respond(PromptResponse::new(stop)),
                        Err(err) => responder.respond_with_error(err),
                    }
                })
            },
            on_receive_request!(),
        )
        .connect_to(Stdio::new())
        .await
}

/// Run one prompt's turn and stream it to the client.
async fn prompt(
    state: &State,
    cx: &ConnectionTo<Client>,
    request: PromptRequest,
) -> Result<StopReason, Error> {
    let conversation = state.conversation(&request.session_id.0)?;
    let chat = &conversation.chat;
    let text: Vec<String> = request
        .prompt
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.clone()),
            ContentBlock::ResourceLink(link) => Some(format!("[{}]({})", link.name, link.uri)),
            _ => None,
        })
        .collect();
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
    let sent = state
        .handles
        .inbound
        .send(chat.message(text.join("\n")))
        .await;
    if sent.is_err() {
        return Err(internal("the core stopped"));
    }
    let session = request.session_id.clone();
    let update = |update: SessionUpdate| {
        cx.send_notification(SessionNotification::new(session.clone(), update))
    };
    let mut started = std::collections::HashSet::new();
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
                let approval = permission(cx, &session, &ask).await;
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

/// Ask the client about a call: allow once, always, or reject.
async fn permission(
    cx: &ConnectionTo<Client>,
    session: &agent_client_protocol::v1::schema::SessionId,
    ask: &Ask,
) -> Approval {
    let request = &ask.request;
    if request.tool == crate::tools::question::QUESTION {
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
async fn question(
    cx: &ConnectionTo<Client>,
    session: &agent_client_protocol::v1::schema::SessionId,
    ask: &Ask,
) -> Approval {
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
                .title(crate::tools::question::shown(&request.input))
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

/// What kind of call a tool makes, for the client's icons.
fn kind(tool: &str) -> ToolKind {
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
