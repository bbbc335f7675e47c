//! The agent loop, one for every channel and model: route the turn to a model chain,
//! build the prompt, call the chain, run the tools it asks for, and repeat until the
//! model answers without tools or a budget gate closes the turn. Steering
//! checkpoints sit at the loop's start, before each tool call, after a tool-free
//! reply and before finishing. Every tool call gets a result before the next model
//! call.
//!
//! - `turn`    — one turn's state and the loop itself
//! - `route`   — which chain answers (router score, pins, escalation)
//! - `load`    — the transcript as the model sees it (summary, timestamps)
//! - `clean`   — reasoning blocks and leaked tool markup out of the visible text
//! - `text_calls` — tool calls a model wrote as text, made calls
//! - `runaway` — a reply stopped on the stream when it loops or writes template tokens
//! - `compact` — summarising the older part of a long conversation
//! - `window`  — keeping the request inside the model's context window
//! - `history` — stored messages to provider messages
//! - `prompt`  — the system prompt
//! - `stuck`   — noticing a turn that repeats itself, and stopping it
//! - `reply`   — the turn's side of the outbound bus
//! - `outcome` — how a turn ends
//! - `remember` — memory around a turn: recall before it, the daily log after it
//! - `build`   — `AgentBuilder`, and what the rest of the crate may read of an `Agent`

mod build;
mod clean;
mod compact;
mod history;
mod load;
mod outcome;
pub mod prompt;
mod remember;
mod reply;
mod route;
mod runaway;
mod stuck;
mod text_calls;
mod turn;
mod window;

use std::path::PathBuf;
use std::time::Duration;

use crate::tz::Tz;
use chrono::{TimeZone, Utc};
use pincer_channels::OutboundMessage;
use pincer_memory::Memory;
use tokio::sync::mpsc;

use crate::models::Models;
use crate::prices::Prices;
use crate::steering::{Queued, SessionQueue, TurnControl};
use crate::store::Store;
use crate::tools::{Guard, Registry, ToolPolicy};

pub use build::AgentBuilder;
pub use compact::Compacted;
pub use outcome::{Budget, Ended, TurnError};
pub use reply::HEARTBEAT_OK;
pub use route::ESCALATE;

/// What a tool call that never started is told when a user message jumped the queue.
pub const SKIPPED: &str = "Skipped due to queued user message.";
/// What a tool call is told when the turn was stopped under it.
pub const CANCELLED: &str = "cancelled: the turn was stopped before this tool finished";

/// The per-turn limits from `[agent]`.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_iterations: u32,
    pub max_turn_cost_usd: f64,
    pub max_day_cost_usd: f64,
    pub max_turn: Duration,
    pub max_tokens: u32,
    /// `mcp.connect_wait_secs`: how long a turn waits for MCP servers still connecting.
    pub mcp_wait: Duration,
    /// `agent.compact_at`: the share of the context window a request may fill.
    pub compact_at: f64,
    /// `agent.small_window_tokens`: under this window a model gets a small prompt.
    pub small_window: u64,
    /// `agent.small_window_tools`: the tools it is offered whole.
    pub small_tools: Vec<String>,
}

impl Limits {
    pub fn from_config(config: &pincer_config::Config) -> Limits {
        Limits {
            max_iterations: config.agent.max_iterations,
            max_turn_cost_usd: config.agent.max_turn_cost_usd,
            max_day_cost_usd: config.agent.max_day_cost_usd,
            max_turn: Duration::from_secs(config.agent.max_turn_secs),
            max_tokens: config.agent.max_tokens,
            mcp_wait: Duration::from_secs(config.mcp.connect_wait_secs),
            compact_at: config.agent.compact_at,
            small_window: config.agent.small_window_tokens,
            small_tools: config.agent.small_window_tools.clone(),
        }
    }
}

impl Default for Limits {
    /// The limits of a default configuration.
    fn default() -> Limits {
        Limits::from_config(&pincer_config::Config::default())
    }
}

/// Everything a turn needs, shared by all sessions. Built once by `AgentBuilder`
/// (with its approvers already wired); read-only afterwards.
pub struct Agent {
    store: Store,
    models: Models,
    tools: Registry,
    /// Permission rules and the scrubber every tool call passes.
    guard: Guard,
    memory: Memory,
    /// Recall before turns and the daily log after them, batched (`remember`).
    scribe: crate::store::batch::Batcher<remember::Job>,
    prices: Prices,
    limits: Limits,
    workspace: PathBuf,
    timezone: Tz,
    outbound: mpsc::Sender<OutboundMessage>,
    /// `outbound` with the outbox in front: what a person sees on a kept channel is
    /// booked before it goes.
    outbox: crate::outbox::Outbox,
    /// `memory.dream_max_tokens`: what one dream may read and write.
    dream_max_tokens: u64,
    /// Which tools each tier may use, and where the owner's memory belongs.
    tool_policy: ToolPolicy,
    /// `[access]`: the per-sender day budgets of non-owners.
    access: pincer_config::AccessConfig,
    /// `agent.owners`: whose conversations the dream reads.
    owners: Vec<String>,
    /// Attachments for the model: transcription, inlined documents, pictures.
    media: crate::media::Media,
    /// `channels.<name>.ack_reaction` by channel: put on a message when its turn starts.
    ack_reactions: std::collections::BTreeMap<String, String>,
    /// How often turns were found going round in circles (`/status`).
    stuck: stuck::StuckCount,
    /// Subagents: running tasks and their handles (`/tasks`, `/stop`).
    tasks: std::sync::Arc<crate::tasks::Tasks>,
    /// The permission modes of conversations a program drives (`pincer agent`).
    modes: std::sync::Arc<crate::tools::mode::Modes>,
    /// The MCP tools each conversation found with `tool_search`.
    loaded: std::sync::Arc<crate::tools::deferred::Loaded>,
    /// What the model servers said about their windows and token counts.
    seen: window::Seen,
}

/// The result of one turn: how it ended and which stored user messages it answered.
pub struct TurnReport {
    pub ended: Ended,
    pub answered: Vec<i64>,
    /// Completion handles of messages steered into the turn.
    pub done: Vec<pincer_channels::Done>,
    /// The last message the assistant wrote (a subagent's answer).
    pub last_text: String,
}

impl Agent {
    pub async fn run_turn(
        &self,
        session_id: i64,
        first: Queued,
        queue: &SessionQueue,
        control: &TurnControl,
    ) -> TurnReport {
        turn::run(self, session_id, first, queue, control).await
    }

    /// Midnight today in `agent.timezone`, in unix milliseconds (the day budget's start).
    pub fn start_of_day_ms(&self) -> i64 {
        let now = crate::clock::utc().with_timezone(&self.timezone);
        let midnight = now.date_naive().and_hms_opt(0, 0, 0).unwrap_or_default();
        self.timezone
            .from_local_datetime(&midnight)
            .earliest()
            .map(|t| t.timestamp_millis())
            .unwrap_or_else(|| now.timestamp_millis() - 86_400_000)
    }

    /// "[Sun 2026-11-22 09:30]": the stamp each user message carries in the prompt, so
    /// the model knows when things were said and the prompt prefix never changes.
    pub fn stamp(&self, unix_ms: i64) -> String {
        match Utc.timestamp_millis_opt(unix_ms).single() {
            Some(t) => t
                .with_timezone(&self.timezone)
                .format("[%a %Y-%m-%d %H:%M]")
                .to_string(),
            None => String::new(),
        }
    }
}
