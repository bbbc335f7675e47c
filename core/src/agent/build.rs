//! Building an `Agent`, and what the rest of the crate may read of it. The fields stay
//! private to `agent/`: the gateway says once, through `AgentBuilder`, which store,
//! models, tools, guard (with its approvers) and limits the turns use, and nothing
//! changes them afterwards. Everything else reads through the methods below.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::tz::Tz;
use pincer_channels::OutboundMessage;
use pincer_memory::Memory;
use tokio::sync::mpsc;

use super::{Agent, Limits, stuck};
use crate::media::Media;
use crate::models::Models;
use crate::prices::Prices;
use crate::scrub::Scrubber;
use crate::store::Store;
use crate::tasks::Tasks;
use crate::tools::deferred::Loaded;
use crate::tools::mode::Modes;
use crate::tools::{Guard, Registry, ToolPolicy};

/// An `Agent` in the making: the parts every agent needs go to `new`, the rest have
/// defaults (no tools, no approvers, no transcription, the default limits).
pub struct AgentBuilder {
    agent: Agent,
}

impl AgentBuilder {
    pub fn new(
        store: Store,
        models: Models,
        outbound: mpsc::Sender<OutboundMessage>,
        memory: Memory,
        timezone: Tz,
    ) -> AgentBuilder {
        let workspace = memory.root().to_path_buf();
        let kept = memory.state().join("inbox");
        let outbox = crate::outbox::Outbox::new(
            outbound.clone(),
            Arc::clone(&Guard::default().scrubber),
            store.clone(),
        );
        AgentBuilder {
            agent: Agent {
                outbox,
                store,
                models,
                tools: Registry::with(Vec::new()),
                guard: Guard::default(),
                scribe: super::remember::scribe(memory.clone()),
                memory,
                prices: Prices::default(),
                limits: Limits::default(),
                media: Media {
                    workspace: workspace.clone(),
                    kept,
                    transcriber: None,
                    speaker: None,
                },
                workspace,
                timezone,
                outbound,
                dream_max_tokens: 0,
                tool_policy: ToolPolicy::default(),
                access: Default::default(),
                owners: Vec::new(),
                ack_reactions: BTreeMap::new(),
                stuck: Default::default(),
                tasks: Tasks::new(1),
                modes: Default::default(),
                loaded: Default::default(),
                seen: Default::default(),
            },
        }
    }

    /// What the turns and tools send to chats passes through it (shared with the
    /// tools that speak to chats, so the gateway's `keep_for` reaches all of them).
    pub fn outbox(mut self, outbox: crate::outbox::Outbox) -> Self {
        self.agent.outbox = outbox;
        self
    }

    /// The tools offered to the model.
    pub fn tools(mut self, tools: Registry) -> Self {
        self.agent.tools = tools;
        self
    }

    /// The permission rules, scrubber, approvers, grants and hooks every call passes.
    pub fn guard(mut self, guard: Guard) -> Self {
        self.agent.guard = guard;
        self
    }

    pub fn prices(mut self, prices: Prices) -> Self {
        self.agent.prices = prices;
        self
    }

    pub fn limits(mut self, limits: Limits) -> Self {
        self.agent.limits = limits;
        self
    }

    /// `memory.dream_max_tokens`.
    pub fn dream_max_tokens(mut self, tokens: u64) -> Self {
        self.agent.dream_max_tokens = tokens;
        self
    }

    /// Which tools each tier may use, and `[access]`'s day budgets.
    pub fn access(mut self, policy: ToolPolicy, access: pincer_config::AccessConfig) -> Self {
        self.agent.tool_policy = policy;
        self.agent.access = access;
        self
    }

    /// `agent.owners`.
    pub fn owners(mut self, owners: Vec<String>) -> Self {
        self.agent.owners = owners;
        self
    }

    /// Attachments: where the inbox is, and voice transcription.
    pub fn media(mut self, media: Media) -> Self {
        self.agent.media = media;
        self
    }

    /// The reaction each channel puts on a message when its turn starts.
    pub fn ack_reactions(mut self, reactions: BTreeMap<String, String>) -> Self {
        self.agent.ack_reactions = reactions;
        self
    }

    /// The subagents' registry and the state the task, plan-mode and tool-search
    /// tools share with the turn.
    pub fn shared(mut self, tasks: Arc<Tasks>, modes: Arc<Modes>, loaded: Arc<Loaded>) -> Self {
        self.agent.tasks = tasks;
        self.agent.modes = modes;
        self.agent.loaded = loaded;
        self
    }

    pub fn build(self) -> Agent {
        self.agent
    }
}

impl Agent {
    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn models(&self) -> &Models {
        &self.models
    }

    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    pub fn prices(&self) -> &Prices {
        &self.prices
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// `agent.workspace`, created at start.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// `agent.timezone`.
    pub fn timezone(&self) -> Tz {
        self.timezone
    }

    /// Where replies and what tools send go (the outbound bus).
    pub fn outbound(&self) -> &mpsc::Sender<OutboundMessage> {
        &self.outbound
    }

    /// The outbound bus with the outbox in front (`crate::outbox`).
    pub fn outbox(&self) -> &crate::outbox::Outbox {
        &self.outbox
    }

    /// The scrubber every reply and tool result passes.
    pub fn scrubber(&self) -> &Arc<Scrubber> {
        &self.guard.scrubber
    }

    /// `memory.dream_max_tokens`.
    pub fn dream_max_tokens(&self) -> u64 {
        self.dream_max_tokens
    }

    pub fn tool_policy(&self) -> &ToolPolicy {
        &self.tool_policy
    }

    /// `agent.owners`.
    pub fn owners(&self) -> &[String] {
        &self.owners
    }

    pub fn media(&self) -> &Media {
        &self.media
    }

    /// How often turns were found going round in circles.
    pub fn stuck(&self) -> &stuck::StuckCount {
        &self.stuck
    }

    pub fn tasks(&self) -> &Arc<Tasks> {
        &self.tasks
    }

    /// The permission modes of conversations a program drives.
    pub fn modes(&self) -> &Modes {
        &self.modes
    }

    /// The tools offered to the model.
    pub fn tools(&self) -> &Registry {
        &self.tools
    }

    /// `[access]`: the per-sender day budgets of non-owners.
    pub fn access(&self) -> &pincer_config::AccessConfig {
        &self.access
    }

    /// Each MCP server's state ("connected", "connecting", "failed: …").
    /// The server of `label` says its context window is `tokens` (`window::Seen`).
    pub fn learn_window(&self, label: &str, tokens: u64) {
        self.seen.learn_window(label, tokens);
    }

    pub fn mcp_status(&self) -> Vec<(String, String)> {
        self.tools.mcp_status()
    }
}
