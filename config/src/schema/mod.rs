//! The typed shape of `config.toml`: one file per section, each with the defaults that make
//! an empty file valid. These types only describe and default; reading, checking and
//! locating mistakes live in `crate::load`.

mod access;
mod agent;
mod channels;
mod config;
mod host;
mod ids;
mod mcp;
mod media;
mod providers;
mod router;
mod schedules;
mod tools;
mod voice;

pub use access::{AccessConfig, Tier, WebConfig, WorkspaceConfig};
pub use agent::{AgentConfig, QueueMode, expand_tilde};
pub use channels::{
    Access, ChannelConfig, ChannelsConfig, DmPolicy, GroupPolicy, MatrixConfig, Platform,
    SlackConfig, SlackMode, default_api_url,
};
pub use config::{CONFIG_VERSION, Config};
pub use host::HostConfig;
pub use mcp::{McpConfig, McpServer};
pub use media::{ModelCaps, TextToolCalls, TranscriptionConfig};
pub use providers::{Price, ProviderConfig, ProviderKind};
pub use router::{ModelRef, RouterConfig};
pub use schedules::{CronConfig, HeartbeatConfig, MemoryConfig};
pub use tools::{
    AfterUntrusted, BrowserConfig, DenyGroups, ExecConfig, ExecLimits, HookConfig, HookEvent,
    PermissionsConfig, SandboxMode, ToolsConfig, WebSearchConfig,
};
pub use voice::{VoiceConfig, VoiceReply};
