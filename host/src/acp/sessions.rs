//! The stored side of ACP sessions: `session/load` (a stored conversation opened and
//! its messages replayed), `session/list` (Pincer's stored ACP conversations,
//! `terminal:dm:acp-…`, newest first, titled by their first words) and `session/close`
//! (the session's running turn stopped and its in-memory state dropped; the transcript
//! stays, and `session/load` opens it again).
//!
//! Every session works in Pincer's own workspace, whatever `cwd` the client gave, so a
//! listed session's `cwd` is the workspace and `session/list`'s `cwd` filter narrows
//! nothing.

use agent_client_protocol::Client;
use agent_client_protocol::Error;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CloseSessionResponse, ContentBlock, ContentChunk, ListSessionsRequest, ListSessionsResponse,
    LoadSessionRequest, LoadSessionResponse, SessionInfo, SessionNotification, SessionUpdate,
};

use super::{State, internal, invalid, modes};
use pincer_core::store::Role;
use pincer_core::tools::mode::PermissionMode;

/// The keys of the conversations `session/new` makes (`crate::open_chat`).
const PREFIX: &str = "terminal:dm:acp-";
/// Sessions in one `session/list` answer; `nextCursor` leads to the rest.
const PAGE: usize = 50;
/// The longest title, in characters.
const TITLE_CHARS: usize = 80;

/// `session/load`: open the stored conversation and replay its words as
/// `user_message_chunk` and `agent_message_chunk` updates.
pub(super) async fn load(
    state: &State,
    cx: &ConnectionTo<Client>,
    request: &LoadSessionRequest,
) -> Result<LoadSessionResponse, Error> {
    let conversation = state.open(Some(&request.session_id.0)).await?;
    let history = state
        .handles
        .agent
        .store()
        .history(conversation.chat.session)
        .await
        .map_err(internal)?;
    for message in history {
        let text = pincer_core::provider::text_of(&message.parts);
        if text.trim().is_empty() {
            continue;
        }
        let chunk = ContentChunk::new(ContentBlock::from(text));
        let update = match message.role {
            Role::User => SessionUpdate::UserMessageChunk(chunk),
            Role::Assistant => SessionUpdate::AgentMessageChunk(chunk),
            Role::Tool => continue,
        };
        cx.send_notification(SessionNotification::new(request.session_id.clone(), update))?;
    }
    Ok(LoadSessionResponse::new().modes(modes(PermissionMode::Default)))
}

/// `session/list`: one page of the stored ACP conversations that have messages.
pub(super) async fn list(
    state: &State,
    request: &ListSessionsRequest,
) -> Result<ListSessionsResponse, Error> {
    let skip = match &request.cursor {
        None => 0,
        Some(cursor) => cursor.parse::<usize>().map_err(|_| {
            invalid(format!(
                "{cursor:?} is not a cursor: pass the nextCursor of the previous session/list answer"
            ))
        })?,
    };
    let store = state.handles.agent.store();
    let stored = store
        .current_sessions_under(PREFIX)
        .await
        .map_err(internal)?;
    let mut sessions = Vec::new();
    for session in stored.iter().skip(skip).take(PAGE) {
        let opening = store.opening_text(session.id).await.map_err(internal)?;
        sessions.push(
            SessionInfo::new(session.key.clone(), state.workspace.clone())
                .title(opening.as_deref().map(title))
                .updated_at(iso(session.updated_at)),
        );
    }
    let next = (skip + PAGE < stored.len()).then(|| (skip + PAGE).to_string());
    Ok(ListSessionsResponse::new(sessions).next_cursor(next))
}

/// `session/close`: stop the session's turn, as `session/cancel` does, and forget the
/// session; a later request to it is refused until `session/load` opens it again.
pub(super) fn close(state: &State, id: &str) -> Result<CloseSessionResponse, Error> {
    let closed = state
        .chats
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(id);
    let Some(conversation) = closed else {
        return Err(super::not_open(id));
    };
    state.handles.dispatcher.stop(&conversation.chat.key);
    Ok(CloseSessionResponse::new())
}

/// A conversation's first words as a title: its first line, cut at `TITLE_CHARS`.
fn title(opening: &str) -> String {
    let line = opening.trim().lines().next().unwrap_or_default();
    match line.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// Unix milliseconds as ISO 8601 (UTC), as `SessionInfo.updatedAt` wants.
fn iso(ms: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}
