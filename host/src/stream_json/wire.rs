//! The stream-json protocol's lines as types (seed 002, and the lines the Claude Agent
//! SDKs write and read): `Input` is what a host sends, `Output` what Pincer writes.
//!
//! - `messages`   — the conversation Pincer writes: `system/init`, `assistant`, `user`
//!   (tool results), `stream_event` and `result`
//! - `control`    — the control exchange both ways: the host's requests and Pincer's
//!   replies; Pincer's requests (`can_use_tool`, `hook_callback`, `mcp_message`) and the
//!   host's answers, in the SDK form or seed 002's adapter form
//! - `permission` — a `can_use_tool` decision, its permission updates, and the rules
//!   they add
//!
//! Lines are read as leniently as the SDKs need (`crate::lenient`): unknown fields are
//! ignored, a missing or odd field reads as absent, a line of an unknown type is
//! `Input::Other`. Free-form parts — tool input, hook input and output, MCP messages —
//! stay `serde_json::Value`. Nothing here acts: `super` does what the lines say.

mod control;
mod messages;
mod permission;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::lenient::{lenient, lenient_items};
use serde::{Deserialize, Serialize};

pub(crate) use control::{
    Answered, CanUseTool, ContextUsage, Hooks, HostAnswer, HostRequest, Initialized, Known,
    McpAnswer, PincerReply, PincerRequest, Question, ReplyBody, Request,
};
pub(crate) use messages::{
    Assistant, Block, Delta, Denial, Event, Init, McpServer, Message, OutputUsage, Role, StopDelta,
    StreamEvent, System, ToolResult, ToolResultMessage, ToolResultType, ToolResults, TurnEnd,
    TurnResult,
};
pub(crate) use permission::{Decision, Kept, Rule, suggestions};

/// A line from the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Input {
    /// A message: one turn (queued while one runs).
    User(UserLine),
    ControlRequest(HostRequest),
    ControlResponse(HostAnswer),
    /// The host withdraws one of Pincer's requests.
    ControlCancelRequest {
        #[serde(default, deserialize_with = "lenient")]
        request_id: Option<String>,
    },
    /// A heartbeat (seed 002): nothing to do.
    KeepAlive,
    /// Seed 002: the CLI's environment changes. Pincer's tools take theirs from the
    /// home, so nothing to do.
    UpdateEnvironmentVariables {
        #[serde(default, deserialize_with = "lenient")]
        variables: BTreeMap<String, String>,
    },
    /// A line of another type (or of none): ignored, as the CLI's newer lines are.
    #[serde(other)]
    Other,
}

impl Input {
    /// One line as the host wrote it; `Err` when it is not JSON.
    pub(crate) fn read(line: &str) -> Result<Input, serde_json::Error> {
        let value = crate::lenient::line(line)?;
        Ok(Input::deserialize(value).unwrap_or(Input::Other))
    }
}

/// A `user` line: the host's message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct UserLine {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) message: UserMessage,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct UserMessage {
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) role: Option<String>,
    #[serde(default)]
    pub(crate) content: Content,
}

/// A message's content: text, or blocks of which the text ones are read (an image is
/// not: stream-json hosts send text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Content {
    Text(String),
    Blocks(#[serde(deserialize_with = "lenient_items")] Vec<ContentBlock>),
}

impl Default for Content {
    fn default() -> Content {
        Content::Blocks(Vec::new())
    }
}

impl Content {
    /// The text: the string, or the text blocks' joined by newlines.
    pub(crate) fn text(&self) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Blocks(blocks) => blocks
                .iter()
                .filter(|block| block.kind == "text")
                .filter_map(|block| block.text.as_deref())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// One block of a message's content: its type, and a text block's text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ContentBlock {
    #[serde(rename = "type", default, deserialize_with = "lenient")]
    pub(crate) kind: String,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) text: Option<String>,
}

/// A line Pincer writes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Output {
    System(System),
    Assistant(Assistant),
    /// A tool's result (the CLI writes results as the user's message).
    User(ToolResults),
    StreamEvent(StreamEvent),
    Result(Box<TurnResult>),
    ControlRequest(PincerRequest),
    ControlResponse(PincerReply),
}
