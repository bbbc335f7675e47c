//! The conversation Pincer writes: `system/init` at a turn's start, an `assistant` line
//! per content block, a `user` line per tool result, `stream_event`s (the Messages
//! API's stream events, with `--include-partial-messages`) and the turn's `result`.
//! Each line carries the conversation's key as `session_id` and a fresh `uuid`; none
//! comes from a subagent (`parent_tool_use_id` is always null).

use std::collections::BTreeMap;

use pincer_channels::{FinishReason, TurnUsage};
#[cfg(test)]
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

/// `system` lines: Pincer writes only `init`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub(crate) enum System {
    Init(Init),
}

/// `system/init`: what the turn runs with.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct Init {
    pub(crate) cwd: String,
    pub(crate) session_id: String,
    /// The built-in tools (MCP tools are not listed; `mcp_servers` names their servers).
    pub(crate) tools: Vec<String>,
    pub(crate) mcp_servers: Vec<McpServer>,
    /// The last model that answered, or "pincer" before any did.
    pub(crate) model: String,
    #[serde(rename = "permissionMode")]
    pub(crate) permission_mode: String,
    pub(crate) slash_commands: Vec<String>,
    #[serde(rename = "apiKeySource")]
    pub(crate) api_key_source: String,
    /// The CLI version Pincer answers as (`COMPAT_VERSION`): the SDKs warn below 2.0.0.
    pub(crate) claude_code_version: String,
    pub(crate) output_style: String,
    /// The CLI's agents, skills and plugins: Pincer has none of them.
    pub(crate) agents: Vec<String>,
    pub(crate) skills: Vec<String>,
    pub(crate) plugins: Vec<Plugin>,
    pub(crate) uuid: String,
}

/// A plugin as the CLI lists one (Pincer lists none).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct Plugin {
    pub(crate) name: String,
    pub(crate) path: String,
    pub(crate) source: String,
}

/// An MCP server and its state as the CLI names states (connected, pending, failed),
/// with the error of one that failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct McpServer {
    pub(crate) name: String,
    pub(crate) status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, serde(default))]
    pub(crate) error: Option<String>,
}

impl McpServer {
    /// Each server of `status` (name, Pincer's state text).
    pub(crate) fn all(status: Vec<(String, String)>) -> Vec<McpServer> {
        status
            .into_iter()
            .map(|(name, state)| {
                let status = crate::mcp_state(&state);
                McpServer {
                    name,
                    status: status.to_string(),
                    error: (status == "failed").then_some(state),
                }
            })
            .collect()
    }
}

/// An `assistant` line: one content block of the model's message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct Assistant {
    pub(crate) message: Message,
    pub(crate) parent_tool_use_id: Option<String>,
    pub(crate) session_id: String,
    pub(crate) uuid: String,
}

/// The model's message, as the Messages API shapes one.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct Message {
    /// `msg_pincer_<conversation>_<model call>`.
    pub(crate) id: String,
    #[serde(rename = "type")]
    pub(crate) kind: MessageType,
    pub(crate) role: Role,
    pub(crate) model: String,
    pub(crate) content: Vec<Block>,
    pub(crate) stop_reason: Option<String>,
    pub(crate) stop_sequence: Option<String>,
    pub(crate) usage: MessageUsage,
}

impl Message {
    /// The assistant's message holding `content` (an `assistant` line). Its tokens are
    /// not counted per message: the `result` has the turn's.
    pub(crate) fn assistant(id: String, model: String, content: Vec<Block>) -> Message {
        Message {
            usage: MessageUsage {
                cache_creation_input_tokens: Some(0),
                cache_read_input_tokens: Some(0),
                ..MessageUsage::default()
            },
            content,
            ..Message::start(id, model)
        }
    }

    /// The message as it starts (`message_start`): nothing in it yet.
    pub(crate) fn start(id: String, model: String) -> Message {
        Message {
            id,
            kind: MessageType::Message,
            role: Role::Assistant,
            model,
            content: Vec::new(),
            stop_reason: None,
            stop_sequence: None,
            usage: MessageUsage::default(),
        }
    }
}

/// `"type": "message"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(rename_all = "snake_case")]
pub(crate) enum MessageType {
    Message,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(rename_all = "snake_case")]
pub(crate) enum Role {
    Assistant,
    User,
}

/// A message's tokens (Pincer writes zeros: the `result` has the turn's).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct MessageUsage {
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, serde(default))]
    pub(crate) cache_creation_input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, serde(default))]
    pub(crate) cache_read_input_tokens: Option<u64>,
}

/// A content block of the model's message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Block {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        /// The API's signature of the reasoning: empty (Pincer's models' reasoning is
        /// not signed); none on a block just started.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, serde(default))]
        signature: Option<String>,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
}

/// A `user` line: a tool's result going back to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct ToolResults {
    pub(crate) message: ToolResultMessage,
    pub(crate) parent_tool_use_id: Option<String>,
    pub(crate) session_id: String,
    pub(crate) uuid: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct ToolResultMessage {
    pub(crate) role: Role,
    pub(crate) content: Vec<ToolResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct ToolResult {
    pub(crate) tool_use_id: String,
    #[serde(rename = "type")]
    pub(crate) kind: ToolResultType,
    pub(crate) content: String,
    pub(crate) is_error: bool,
}

/// `"type": "tool_result"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToolResultType {
    ToolResult,
}

/// A `stream_event` line: one event of the model's streamed message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct StreamEvent {
    pub(crate) event: Event,
    pub(crate) session_id: String,
    pub(crate) parent_tool_use_id: Option<String>,
    pub(crate) uuid: String,
}

/// The Messages API's stream events.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Event {
    MessageStart {
        message: Message,
    },
    ContentBlockStart {
        index: u32,
        content_block: Block,
    },
    ContentBlockDelta {
        index: u32,
        delta: Delta,
    },
    ContentBlockStop {
        index: u32,
    },
    MessageDelta {
        delta: StopDelta,
        usage: OutputUsage,
    },
    MessageStop,
}

/// What a `content_block_delta` adds to its block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(tag = "type")]
pub(crate) enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    /// Pincer sends a tool's whole input at once.
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
}

/// `message_delta`'s `delta`: why the model stopped (`tool_use`, `end_turn`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct StopDelta {
    pub(crate) stop_reason: String,
    pub(crate) stop_sequence: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct OutputUsage {
    pub(crate) output_tokens: u64,
}

/// The `result` line that ends a turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct TurnResult {
    pub(crate) subtype: ResultSubtype,
    pub(crate) is_error: bool,
    pub(crate) duration_ms: u64,
    pub(crate) duration_api_ms: u64,
    pub(crate) num_turns: u32,
    pub(crate) stop_reason: Option<String>,
    pub(crate) session_id: String,
    pub(crate) total_cost_usd: f64,
    pub(crate) usage: ResultUsage,
    #[serde(rename = "modelUsage")]
    pub(crate) model_usage: BTreeMap<String, ModelUsage>,
    pub(crate) permission_denials: Vec<Denial>,
    pub(crate) terminal_reason: TerminalReason,
    pub(crate) uuid: String,
    /// A failed turn's reasons.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, serde(default))]
    pub(crate) errors: Option<Vec<String>>,
    /// A finished turn's last text.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, serde(default))]
    pub(crate) result: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(rename_all = "snake_case")]
pub(crate) enum ResultSubtype {
    Success,
    ErrorMaxTurns,
    ErrorDuringExecution,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(rename_all = "snake_case")]
pub(crate) enum TerminalReason {
    Completed,
    MaxTurns,
    AbortedStreaming,
    Error,
}

/// The turn's tokens, over all its model calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct ResultUsage {
    pub(crate) input_tokens: u64,
    pub(crate) cache_creation_input_tokens: u64,
    pub(crate) cache_read_input_tokens: u64,
    pub(crate) output_tokens: u64,
}

/// One model's share of the turn (`modelUsage`, by model).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModelUsage {
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) cache_read_input_tokens: u64,
    pub(crate) cache_creation_input_tokens: u64,
    #[serde(rename = "costUSD")]
    pub(crate) cost_usd: f64,
}

/// A call the host refused (`permission_denials[]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct Denial {
    pub(crate) tool_name: String,
    pub(crate) tool_use_id: String,
    pub(crate) tool_input: Value,
}

/// What a turn leaves for its `result`.
pub(crate) struct TurnEnd {
    /// Model calls begun, the one an interrupt cut short included.
    pub(crate) steps: u32,
    /// The last text block: the answer, or what went wrong.
    pub(crate) last_text: String,
    pub(crate) denials: Vec<Denial>,
}

impl TurnResult {
    /// The `result` of a turn of `session` that ended for `reason`.
    pub(crate) fn new(
        session: String,
        reason: FinishReason,
        usage: &TurnUsage,
        turn: TurnEnd,
        uuid: String,
    ) -> TurnResult {
        let model = usage.model.clone().unwrap_or_else(|| "pincer".into());
        let (subtype, is_error) = match reason {
            FinishReason::Stop => (ResultSubtype::Success, false),
            FinishReason::Length => (ResultSubtype::ErrorMaxTurns, true),
            FinishReason::Error | FinishReason::Aborted => {
                (ResultSubtype::ErrorDuringExecution, true)
            }
        };
        let terminal_reason = match reason {
            FinishReason::Stop => TerminalReason::Completed,
            FinishReason::Length => TerminalReason::MaxTurns,
            FinishReason::Aborted => TerminalReason::AbortedStreaming,
            FinishReason::Error => TerminalReason::Error,
        };
        let (errors, result) = match reason {
            FinishReason::Stop => (None, Some(turn.last_text)),
            FinishReason::Aborted => (Some(vec!["interrupted".to_string()]), None),
            _ => (Some(vec![turn.last_text]), None),
        };
        TurnResult {
            subtype,
            is_error,
            duration_ms: usage.duration_ms,
            duration_api_ms: usage.model_ms,
            // A call cut short (an interrupt) is a turn too, as the CLI counts.
            num_turns: usage.model_calls.max(turn.steps),
            stop_reason: (!is_error).then(|| "end_turn".to_string()),
            session_id: session,
            total_cost_usd: usage.cost_usd,
            usage: ResultUsage {
                input_tokens: usage.input_tokens,
                cache_creation_input_tokens: usage.cache_write_tokens,
                cache_read_input_tokens: usage.cache_read_tokens,
                output_tokens: usage.output_tokens,
            },
            model_usage: BTreeMap::from([(
                model,
                ModelUsage {
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                    cache_read_input_tokens: usage.cache_read_tokens,
                    cache_creation_input_tokens: usage.cache_write_tokens,
                    cost_usd: usage.cost_usd,
                },
            )]),
            permission_denials: turn.denials,
            terminal_reason,
            uuid,
            errors,
            result,
        }
    }
}
