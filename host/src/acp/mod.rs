//! `pincer acp`: an Agent Client Protocol agent over stdio (JSON-RPC), for editors such
//! as Zed, with the official `agent-client-protocol` crate. `initialize`, `session/new`
//! (a local conversation `terminal:dm:acp-…`; the workspace is Pincer's own),
//! `session/load`, `session/list` and `session/close` (`sessions`), `session/prompt`
//! (text, resource links and images — the image capability is advertised when a
//! configured model sees; the turn's chunks become `agent_message_chunk`,
//! `agent_thought_chunk`, `tool_call` and `tool_call_update`, and the `todo` tool's
//! items a `plan`), `session/request_permission` whenever a call needs approval,
//! `session/cancel`, and `session/set_mode` over the permission modes (reported back as
//! a `current_mode_update`).
//!
//! The crate handles one message at a time: a prompt's turn runs in a task of its own,
//! so cancels and permission answers are read while it runs.
//!
//! - `turn`     — one `session/prompt`: the message in, the turn's chunks out as updates
//! - `content`  — the prompt's blocks as the message: text, links, pictures attached
//! - `ask`      — approvals and questions as `session/request_permission`
//! - `sessions` — stored conversations: loaded and replayed, listed, closed

mod ask;
mod content;
mod sessions;
mod turn;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, CloseSessionRequest, CloseSessionResponse,
    CurrentModeUpdate, Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse, SessionCapabilities,
    SessionCloseCapabilities, SessionListCapabilities, SessionMode, SessionModeState,
    SessionNotification, SessionUpdate, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{
    Agent, Client, Error, ErrorCode, Stdio, on_receive_notification, on_receive_request,
};
use pincer_channels::OutboundMessage;
use tokio::sync::mpsc;

use super::{Ask, Chat, Core, Handles};
use pincer_core::home::Home;
use pincer_core::tools::approval::Approval;
use pincer_core::tools::mode::PermissionMode;

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
            .ok_or_else(|| not_open(id))
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
        .map_err(|e| invalid(e.to_string()))?;
        let conversation = Arc::new(Conversation { chat });
        self.chats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(conversation.chat.key.to_string(), Arc::clone(&conversation));
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

/// A request's parameters refused, saying why.
fn invalid(why: String) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, why)
}

/// The session `id` names is not open on this connection (`-32002`, as the spec has it
/// for an unknown session).
fn not_open(id: &str) -> Error {
    Error::new(
        ErrorCode::RESOURCE_NOT_FOUND,
        format!(
            "session {id} is not open: it was closed, or never opened here; session/load opens a stored one again"
        ),
    )
    .data(serde_json::json!({ "sessionId": id }))
}

async fn serve(state: Arc<State>) -> Result<(), Error> {
    let (s_new, s_load, s_list, s_close, s_mode, s_cancel, s_prompt) = (
        Arc::clone(&state),
        Arc::clone(&state),
        Arc::clone(&state),
        Arc::clone(&state),
        Arc::clone(&state),
        Arc::clone(&state),
        Arc::clone(&state),
    );
    // Pictures are offered only when a configured model can look at them.
    let sees = state.handles.agent.models().seeing().is_some();
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
                                .session_capabilities(
                                    SessionCapabilities::new()
                                        .list(SessionListCapabilities::new())
                                        .close(SessionCloseCapabilities::new()),
                                )
                                .prompt_capabilities(PromptCapabilities::new().image(sees)),
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
                        NewSessionResponse::new(conversation.chat.key.to_string())
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
                match sessions::load(&s_load, &cx, &request).await {
                    Ok(loaded) => responder.respond(loaded),
                    Err(err) => responder.respond_with_error(err),
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest,
                        responder: Responder<ListSessionsResponse>,
                        _cx: ConnectionTo<Client>| {
                match sessions::list(&s_list, &request).await {
                    Ok(listed) => responder.respond(listed),
                    Err(err) => responder.respond_with_error(err),
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest,
                        responder: Responder<CloseSessionResponse>,
                        _cx: ConnectionTo<Client>| {
                match sessions::close(&s_close, &request.session_id.0) {
                    Ok(closed) => responder.respond(closed),
                    Err(err) => responder.respond_with_error(err),
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest,
                        responder: Responder<SetSessionModeResponse>,
                        cx: ConnectionTo<Client>| {
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
                        // Reported before the answer, so a client's mode picker has
                        // caught up by the time its request returns.
                        cx.send_notification(SessionNotification::new(
                            request.session_id.clone(),
                            SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.as_str())),
                        ))?;
                        responder.respond(SetSessionModeResponse::new())
                    }
                    None => responder.respond_with_error(invalid(format!(
                        "{} is not a mode: default, acceptEdits, plan or bypassPermissions",
                        request.mode_id.0
                    ))),
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
                    match turn::prompt(&state, &cx, request).await {
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
