//! Crash repair: a tool call whose result never got stored (the process died while it
//! ran) is closed with an "interrupted" result, so the transcript is valid for every
//! provider again. The call itself is never re-run.

use rusqlite::Connection;

use super::messages::{StoredMessage, append, history};
use super::{Result, Role};
use pincer_provider::Part;

pub const INTERRUPTED: &str =
    "interrupted: pincer stopped while this tool was running; it was not run again";

/// Looks only after position `upto` (a summary stands in for what came before; a call
/// there whose result came later is still seen answered).
pub(super) fn close_unpaired(conn: &mut Connection, session_id: i64, upto: i64) -> Result<usize> {
    let messages = history(conn, session_id, upto)?;
    close_open_calls(conn, session_id, &messages)
}

/// Close the calls of `messages` (a session's transcript, or its end) that no result
/// in them answers. Returns how many.
pub(super) fn close_open_calls(
    conn: &mut Connection,
    session_id: i64,
    messages: &[StoredMessage],
) -> Result<usize> {
    let mut answered = std::collections::HashSet::new();
    for message in messages {
        for part in &message.parts {
            if let Part::ToolResult { call_id, .. } = part {
                answered.insert(call_id.clone());
            }
        }
    }
    let mut missing = Vec::new();
    for message in messages.iter().filter(|m| m.role == Role::Assistant) {
        for part in &message.parts {
            if let Part::ToolCall { id, name, .. } = part
                && !answered.contains(id)
            {
                missing.push(Part::ToolResult {
                    call_id: id.clone(),
                    name: name.clone(),
                    content: INTERRUPTED.to_string(),
                    is_error: true,
                });
            }
        }
    }
    if missing.is_empty() {
        return Ok(0);
    }
    let count = missing.len();
    append(conn, session_id, Role::Tool, &missing)?;
    Ok(count)
}
