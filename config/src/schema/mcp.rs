//! `[mcp.servers.<name>]`: external MCP tool servers, reached over stdio (`command` +
//! `args`) or HTTP (`url`). Their secret env vars and headers live in `.security.yml`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `[mcp]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// Servers by name; tools appear as `mcp__<name>__<tool>`.
    pub servers: BTreeMap<String, McpServer>,
    /// A turn that starts while servers are still connecting waits this long for them
    /// (so the first turn after start has their tools); a server not up by then is
    /// left out of that turn.
    pub connect_wait_secs: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            servers: BTreeMap::new(),
            connect_wait_secs: 5,
        }
    }
}

/// One MCP server: exactly one of `command` and `url` (checked at load).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServer {
    /// Program started for a stdio server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Arguments of `command`.
    pub args: Vec<String>,
    /// Endpoint of a streamable-HTTP server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Run a stdio server inside the sandbox (workspace writable, network on); `false`
    /// opts this one out (`pincer doctor` warns).
    pub sandbox: bool,
    /// The folder a stdio server starts in and may write: by default a folder of its
    /// own, `$PINCER_HOME/mcp/<name>`. Never the workspace, where any command may have
    /// planted a program for `npx` or `uvx` to find.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Whether the owner vouches for this server's tool names and descriptions: until
    /// then they are content nobody vouches for, and a turn they are offered in asks
    /// before acting tools run (`[tools] after_untrusted`).
    pub trusted: bool,
}

impl Default for McpServer {
    fn default() -> Self {
        Self {
            command: None,
            args: Vec::new(),
            url: None,
            sandbox: true,
            cwd: None,
            trusted: false,
        }
    }
}
