//! The root `Config`: the sections of `config.toml` and its format `version`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    AccessConfig, AgentConfig, ChannelsConfig, CronConfig, HeartbeatConfig, HostConfig, McpConfig,
    MemoryConfig, ModelCaps, Price, ProviderConfig, RouterConfig, ToolsConfig, TranscriptionConfig,
    VoiceConfig, WebConfig, WorkspaceConfig,
};

/// The `config.toml` format this build understands. A file without `version` is version 1;
/// a newer one is refused with "upgrade pincer" rather than misread.
pub const CONFIG_VERSION: u32 = 1;

/// Everything in `config.toml`, after environment overrides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Format version of the file (see [`CONFIG_VERSION`]); lets a future pincer migrate it.
    pub version: u32,
    /// Limits and identity of the agent loop.
    pub agent: AgentConfig,
    /// Which model chains answer light and heavy turns.
    pub router: RouterConfig,
    /// Model endpoints by the user's own name (`[providers.openai]`, `[providers.local]`).
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Per-model price overrides keyed `"<provider>/<model>"`, USD per million tokens.
    pub prices: BTreeMap<String, Price>,
    /// Per-model capability overrides keyed `"<provider>/<model>"` (vision, context window).
    pub models: BTreeMap<String, ModelCaps>,
    /// Voice notes and audio files to text.
    pub transcription: TranscriptionConfig,
    /// Spoken replies: which, and who reads them.
    pub voice: VoiceConfig,
    /// Chat platforms and who may talk to the bot there.
    pub channels: ChannelsConfig,
    /// Tool restrictions and tool backends.
    pub tools: ToolsConfig,
    /// Scheduler behaviour.
    pub cron: CronConfig,
    /// The periodic self-check-in.
    pub heartbeat: HeartbeatConfig,
    /// Memory consolidation ("dream") timing.
    pub memory: MemoryConfig,
    /// External MCP tool servers.
    pub mcp: McpConfig,
    /// What each tier of sender may do once admitted.
    pub access: AccessConfig,
    /// How long the workspace keeps received files and saved tool output.
    pub workspace: WorkspaceConfig,
    /// The control panel in the browser, `/healthz` and `/metrics`.
    pub web: WebConfig,
    /// Conversations another program drives (`pincer agent`, `pincer acp`).
    pub host: HostConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            version: CONFIG_VERSION,
            agent: AgentConfig::default(),
            router: RouterConfig::default(),
            providers: BTreeMap::new(),
            prices: BTreeMap::new(),
            models: BTreeMap::new(),
            transcription: TranscriptionConfig::default(),
            voice: VoiceConfig::default(),
            channels: ChannelsConfig::default(),
            tools: ToolsConfig::default(),
            cron: CronConfig::default(),
            heartbeat: HeartbeatConfig::default(),
            memory: MemoryConfig::default(),
            mcp: McpConfig::default(),
            access: AccessConfig::default(),
            workspace: WorkspaceConfig::default(),
            web: WebConfig::default(),
            host: HostConfig::default(),
        }
    }
}
