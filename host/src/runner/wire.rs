//! Seed 001's runner lines as types: `Line` is what a backend sends (`message`, `stop`,
//! `interrupt`, `set_model`, `set_permission_mode`, the answers and the queries), and
//! `Event` what the runner writes. Seed 001 names its events and commands but not every
//! field; where it does not, the names are those of the runner it describes (camelCase),
//! as docs/protocols.md lists them.
//!
//! Lines are read as leniently as the runner always read them (`crate::lenient`): an
//! unknown field is ignored, a missing or odd one reads as absent, and a line of
//! another type is `Line::Unknown` with its type's name. Free-form parts — a tool's
//! input, the parts of it an event repeats, attachments — stay `serde_json::Value`.

#[cfg(test)]
mod tests;

use crate::{Command, ModelChoice};
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::lenient::{lenient, lenient_items};

/// A line from the backend.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Line {
    Input(Input),
    /// A line of a type seed 001 does not have (its name; "" when it has none).
    Unknown(String),
}

impl Line {
    /// One line as the backend wrote it; `Err` when it is not JSON.
    pub(crate) fn read(text: &str) -> Result<Line, serde_json::Error> {
        let value = crate::lenient::line(text)?;
        Ok(match Input::deserialize(&value) {
            Ok(input) => Line::Input(input),
            Err(_) => Line::Unknown(crate::lenient::read::<Kind>(value).kind),
        })
    }
}

/// Only a line's type.
#[derive(Default, Deserialize)]
struct Kind {
    #[serde(rename = "type", default, deserialize_with = "lenient")]
    kind: String,
}

/// The lines seed 001 routes by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Input {
    /// One turn (queued while one runs).
    Message {
        #[serde(default, deserialize_with = "lenient")]
        content: String,
        /// Files and images: not read (a warning says so).
        #[serde(
            default,
            deserialize_with = "lenient_items",
            skip_serializing_if = "Vec::is_empty"
        )]
        attachments: Vec<Value>,
    },
    Stop,
    Interrupt,
    SetModel {
        /// None: `auto`.
        #[serde(
            default,
            deserialize_with = "lenient",
            skip_serializing_if = "Option::is_none"
        )]
        model: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    SetPermissionMode {
        #[serde(default, deserialize_with = "lenient")]
        permission_mode: String,
    },
    #[serde(rename_all = "camelCase")]
    PlanApprovalResponse {
        #[serde(
            default,
            deserialize_with = "lenient",
            skip_serializing_if = "Option::is_none"
        )]
        plan_approval_request_id: Option<String>,
        /// The id as the request carried it.
        #[serde(
            default,
            deserialize_with = "lenient",
            skip_serializing_if = "Option::is_none"
        )]
        request_id: Option<String>,
        #[serde(
            default,
            deserialize_with = "lenient",
            skip_serializing_if = "Option::is_none"
        )]
        plan_approved: Option<bool>,
        #[serde(
            default,
            deserialize_with = "lenient",
            skip_serializing_if = "Option::is_none"
        )]
        plan_approval_reason: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    UserQuestionResponse {
        #[serde(
            default,
            deserialize_with = "lenient",
            skip_serializing_if = "Option::is_none"
        )]
        question_request_id: Option<String>,
        #[serde(
            default,
            deserialize_with = "lenient",
            skip_serializing_if = "Option::is_none"
        )]
        request_id: Option<String>,
        /// Keyed by the question's text; `__cancelled: "true"` when it was cancelled.
        #[serde(default, deserialize_with = "lenient")]
        answers: Map<String, Value>,
    },
    /// Pincer's own: the answer to its `permission_request`.
    #[serde(rename_all = "camelCase")]
    PermissionResponse {
        #[serde(default, deserialize_with = "lenient")]
        request_id: String,
        #[serde(
            default,
            deserialize_with = "lenient",
            skip_serializing_if = "Option::is_none"
        )]
        allow: Option<bool>,
        #[serde(
            default,
            deserialize_with = "lenient",
            skip_serializing_if = "Option::is_none"
        )]
        message: Option<String>,
    },
    GetSupportedModels,
    GetSupportedCommands,
    GetMcpStatus,
    GetAccountInfo,
    /// Refused (Pincer keeps no checkpoints); the id is echoed as given.
    #[serde(rename_all = "camelCase")]
    RewindFiles {
        #[serde(default, skip_serializing_if = "Value::is_null")]
        checkpoint_uuid: Value,
    },
}

/// An event the runner writes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Event {
    /// First: the conversation and how it runs.
    #[serde(rename_all = "camelCase")]
    Ready {
        provider: String,
        conversation_id: String,
        session_id: String,
        cwd: String,
        resuming: bool,
        forking: bool,
        forked_from: Option<String>,
        model: String,
        permission_mode: String,
        tool_preset: String,
        /// The flags accepted and not used.
        ignored: Vec<String>,
        notes: Vec<String>,
    },
    #[serde(rename_all = "camelCase")]
    SessionStarted {
        session_id: String,
        /// `startup` or `resume`.
        source: String,
        cwd: String,
    },
    #[serde(rename_all = "camelCase")]
    SessionIdUpdate {
        session_id: String,
    },
    #[serde(rename_all = "camelCase")]
    SessionEnded {
        reason: String,
        session_id: String,
    },
    #[serde(rename_all = "camelCase")]
    Complete {
        session_id: String,
    },
    Shutdown {
        reason: String,
    },
    /// A turn starts.
    Init(Box<Init>),
    AssistantText {
        content: String,
    },
    ThinkingStart,
    ThinkingDelta {
        content: String,
    },
    Thinking {
        content: String,
    },
    ToolStart {
        id: String,
        tool: String,
        params: Value,
    },
    /// The `todo` tool's list.
    TodoUpdate {
        id: String,
        todos: Value,
    },
    #[serde(rename_all = "camelCase")]
    ToolProgress {
        tool_use_id: String,
        tool_name: String,
        elapsed_time_seconds: f64,
        parent_tool_use_id: Option<String>,
        session_id: String,
    },
    ToolEnd {
        id: String,
        tool: String,
        success: bool,
        /// The result's first 100 characters.
        summary: String,
        duration: u64,
    },
    /// A `task` call's child.
    #[serde(rename_all = "camelCase")]
    SubagentStarted {
        agent_id: String,
        agent_type: String,
        parent_tool_use_id: String,
        description: Value,
        session_id: String,
    },
    #[serde(rename_all = "camelCase")]
    SubagentStopped {
        agent_id: String,
        success: bool,
        stop_hook_active: bool,
        transcript_path: Option<String>,
        session_id: String,
    },
    #[serde(rename_all = "camelCase")]
    UserQuestionRequest {
        request_id: String,
        session_id: String,
        questions: Vec<Question>,
    },
    #[serde(rename_all = "camelCase")]
    PlanApprovalRequest {
        request_id: String,
        session_id: String,
        plan: Value,
    },
    /// Pincer's own: a call to approve, refused when nobody answers in time.
    #[serde(rename_all = "camelCase")]
    PermissionRequest {
        request_id: String,
        session_id: String,
        tool: String,
        input: Value,
        tool_use_id: String,
        timeout_seconds: u64,
    },
    /// The conversation was summarised: `auto` (the turn) or `manual` (`/compact`).
    #[serde(rename_all = "camelCase")]
    CompactBoundary {
        trigger: String,
        /// Not measured: null.
        pre_tokens: Option<u64>,
        session_id: String,
    },
    /// The last model call's tokens.
    #[serde(rename_all = "camelCase")]
    ContextUsage {
        input_tokens: u64,
        output_tokens: u64,
        cache_read_input_tokens: u64,
        cache_creation_input_tokens: u64,
        session_id: String,
    },
    Result(Box<TurnResult>),
    #[serde(rename_all = "camelCase")]
    ContextWindowSize {
        context_window: u64,
        model: String,
        session_id: String,
    },
    #[serde(rename_all = "camelCase")]
    TurnComplete {
        session_id: String,
    },
    #[serde(rename_all = "camelCase")]
    Error {
        message: String,
        session_id: String,
    },
    /// A notice about the turn, or a message outside one.
    #[serde(rename_all = "camelCase")]
    AgentNotification {
        title: String,
        message: String,
        notification_type: String,
        session_id: String,
    },
    #[serde(rename_all = "camelCase")]
    Warning {
        /// An expired permission request's id and tool.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, serde(default))]
        request_id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, serde(default))]
        tool: Option<String>,
        message: String,
    },
    Interrupted,
    ModelChanged {
        model: String,
    },
    PermissionModeChanged {
        mode: String,
    },
    CommandError {
        command: String,
        error: String,
    },
    SupportedModels {
        models: Vec<ModelChoice>,
    },
    SupportedCommands {
        commands: Vec<Command>,
    },
    McpStatus {
        servers: Vec<McpServer>,
    },
    AccountInfo {
        info: AccountInfo,
    },
    #[serde(rename_all = "camelCase")]
    FilesRewound {
        checkpoint_uuid: Value,
        success: bool,
        error: String,
    },
}

/// `init`: what the turn runs with.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(rename_all = "camelCase")]
pub(crate) struct Init {
    pub(crate) model: String,
    /// The built-in tools the preset keeps.
    pub(crate) tools: Vec<String>,
    pub(crate) mcp_servers: Vec<McpServer>,
    pub(crate) slash_commands: Vec<String>,
    pub(crate) skills: Vec<String>,
    pub(crate) plugins: Vec<String>,
    pub(crate) agents: Vec<String>,
    pub(crate) permission_mode: String,
    pub(crate) tool_preset: String,
    pub(crate) budget_config: BudgetConfig,
    pub(crate) claude_code_version: String,
    pub(crate) api_key_source: String,
    pub(crate) session_id: String,
    pub(crate) cwd: String,
}

/// The limits that bound a turn: Pincer's own (`agent.max_turn_cost_usd`,
/// `agent.max_iterations`), not the seed's flags.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(rename_all = "camelCase")]
pub(crate) struct BudgetConfig {
    pub(crate) max_budget_usd: f64,
    pub(crate) max_turns: u32,
    pub(crate) max_thinking_tokens: Option<u64>,
}

/// An MCP server, its state as the CLI names states, and Pincer's own words for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct McpServer {
    pub(crate) name: String,
    pub(crate) status: String,
    pub(crate) detail: String,
}

/// One question of a `user_question_request` (Pincer asks one at a time).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(rename_all = "camelCase")]
pub(crate) struct Question {
    /// The question as the model put it.
    pub(crate) question: Value,
    pub(crate) header: String,
    pub(crate) options: Vec<QuestionOption>,
    pub(crate) multi_select: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct QuestionOption {
    pub(crate) label: Value,
    pub(crate) description: String,
}

/// Pincer has no account: the keys are the home's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(rename_all = "camelCase")]
pub(crate) struct AccountInfo {
    pub(crate) api_key_source: String,
}

/// The `result` that ends a turn (or a chat command).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnResult {
    pub(crate) cost: f64,
    /// Model calls.
    pub(crate) turns: u32,
    pub(crate) duration_ms: u64,
    pub(crate) duration_api_ms: u64,
    pub(crate) usage: Usage,
    /// The last model that answered; none for a command.
    pub(crate) model: Option<String>,
    pub(crate) session_id: String,
    pub(crate) stats: Stats,
    pub(crate) success: bool,
    /// `success`, `error_max_turns` or `error_during_execution`.
    pub(crate) subtype: String,
    /// The last text, when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, serde(default))]
    pub(crate) summary: Option<String>,
    pub(crate) stop_reason: Option<String>,
    /// What went wrong, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, serde(default))]
    pub(crate) errors: Option<Vec<String>>,
}

/// The turn's tokens, over all its model calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
pub(crate) struct Usage {
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) cache_read_input_tokens: u64,
    pub(crate) cache_creation_input_tokens: u64,
}

/// Seed 001's per-turn statistics, counted by what each tool declares it does
/// (`super::output`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(test, derive(Deserialize))]
#[serde(rename_all = "camelCase")]
pub(crate) struct Stats {
    pub(crate) tool_calls: u32,
    pub(crate) tools_by_type: BTreeMap<String, u32>,
    /// `task` calls.
    pub(crate) sub_agents: u32,
    /// Calls that only read the workspace (read_file, glob, grep, list_dir).
    pub(crate) files_read: u32,
    /// Calls that only edit the workspace (write_file, edit_file).
    pub(crate) files_written: u32,
    /// Calls that run commands (exec).
    pub(crate) bash_commands: u32,
    /// Calls that reach the internet (web_search, web_fetch).
    pub(crate) web_searches: u32,
    pub(crate) total_tool_duration_ms: u64,
}
