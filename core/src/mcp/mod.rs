//! MCP (Model Context Protocol) client: the tools of external MCP servers, offered to
//! the model as `mcp__<server>__<tool>`.
//!
//! Servers are configured in config.toml (a stdio command, or a streamable HTTP URL);
//! their secrets come from `.security.yml` (`mcp.<name>.env`). Connecting never blocks
//! start-up: every server is connected in its own background task, in parallel, and
//! retried with exponential backoff when it fails or dies. A failing server is marked
//! failed with its reason and leaves the others alone.
//!
//! MCP output is data, never executed: a call returns the server's text to the model
//! and nothing else happens with it. A server's questions during a call
//! (`elicitation/create`) go to the owner whose turn made it, as the `question` tool
//! asks; where nobody can answer they are declined.
//!
//! # Layout
//! - `manager` — [`McpManager`]: one supervisor task per server, its state, `status`, `tools`
//! - `connect` — starts one connection (child process or HTTP) and lists its tools
//! - `client`  — what Pincer tells a server in `initialize`, the versions it accepts,
//!   and its answers to the server's requests
//! - `asking`  — who answers a server's question: the owner of the call in flight
//! - `elicit`  — a form or a link asked as questions, the answers as the server's result
//! - `tool`    — the [`crate::tools::Tool`] adapter for one MCP tool; names, results
//! - `schema`  — a call's arguments checked against the schema the server gave
//! - `bridge`  — a server inside the host program, reached through its protocol
//!
//! This module must not read config files or secrets itself: the caller passes
//! [`McpServerConfig`]s in.

mod asking;
mod bridge;
mod client;
mod connect;
mod elicit;
mod manager;
pub(crate) mod schema;
mod tool;

use std::time::Duration;

pub use bridge::{HostLink, HostMessage};
pub use client::{ACCEPTED, OFFERED};
pub use manager::McpManager;
pub use tool::tool_name;

/// One MCP server, as configured.
#[derive(Debug, Clone, Default)]
pub struct McpServerConfig {
    /// The server's name in config; the middle part of its tools' names.
    pub name: String,
    /// A program to run, speaking MCP over stdin/stdout. Exactly one of `command`, `url`
    /// and `host` is set.
    pub command: Option<String>,
    /// Arguments for `command`.
    pub args: Vec<String>,
    /// A streamable HTTP endpoint.
    pub url: Option<String>,
    /// Extra environment for `command` (secrets from `.security.yml` `mcp.<name>.env`).
    /// The child sees only these plus PATH, HOME and LANG, never Pincer's own secrets.
    pub env: Vec<(String, String)>,
    /// HTTP headers sent with every request to `url` (e.g. `Authorization`).
    pub headers: Vec<(String, String)>,
    /// The sandbox a stdio server runs in (workspace writable, network on); `None`
    /// when `[mcp.servers.NAME] sandbox = false` (or in library use without one).
    pub jail: Option<crate::sandbox::Jail>,
    /// The folder a stdio server starts in (`[mcp.servers.NAME] cwd`); `None`: a folder
    /// of its own, `<folders>/<name>` (see `McpManager::start`).
    pub cwd: Option<std::path::PathBuf>,
    /// A server inside the program driving Pincer (an SDK's in-process server), reached
    /// through the host protocol; then `command` and `url` are unset.
    pub host: Option<HostLink>,
    /// `[mcp.servers.NAME] trusted`: the owner vouches for its tools' names and
    /// descriptions; otherwise a turn they are offered in is untrusted.
    pub trusted: bool,
}

/// The process's one backoff (`pincer_net`), which MCP servers reconnect with.
pub use pincer_net::Backoff;

/// How long to wait before reconnecting a failed server: 1 s, 2 s, 4 s … capped at 5
/// minutes.
pub const RECONNECT: Backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(300));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_one_second_up_to_five_minutes() {
        let b = RECONNECT;
        let secs: Vec<u64> = (1..=11).map(|n| b.delay(n).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(b.delay(1000), Duration::from_secs(300));
    }
}
