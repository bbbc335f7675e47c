//! `[tools.*]`: which exec command groups are denied, the allow/ask/deny permission rules
//! and how long an approval question waits, the web-search backend, the browser's
//! idle time and inner addresses it may reach, and the owner's
//! hook commands run before and after tool calls. The rules' pattern syntax is the core's business; this
//! module only carries the strings.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `[tools]` settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// `[tools.exec]`.
    pub exec: ExecConfig,
    /// `[tools.permissions]`.
    pub permissions: PermissionsConfig,
    /// `[tools.web_search]`.
    pub web_search: WebSearchConfig,
    /// `[tools.browser]`.
    pub browser: BrowserConfig,
    /// `[tools.hooks.<name>]`: commands run before or after matching calls.
    pub hooks: BTreeMap<String, HookConfig>,
    /// Once a turn has taken in untrusted content (web or MCP results, an inbox file,
    /// a non-owner's message), whether exec, file writes, send_message, cron add and
    /// memory_write need the owner's approval (`ask`, default) or not (`allow`).
    pub after_untrusted: AfterUntrusted,
}

/// `[tools] after_untrusted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AfterUntrusted {
    /// The risky tools need the owner's yes for the rest of the turn.
    #[default]
    Ask,
    /// No extra approval (the owner's choice, knowingly).
    Allow,
}

/// `[tools.exec] sandbox`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// bubblewrap if it works here, else Landlock, else commands are refused.
    #[default]
    Auto,
    /// bubblewrap only.
    Bwrap,
    /// Landlock only.
    Landlock,
    /// No sandbox: commands run unconfined (they can read the secrets).
    Off,
}

impl SandboxMode {
    /// The name as written in config.toml.
    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::Auto => "auto",
            SandboxMode::Bwrap => "bwrap",
            SandboxMode::Landlock => "landlock",
            SandboxMode::Off => "off",
        }
    }
}

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HookEvent {
    /// Before the permission decision; a failing hook refuses the call.
    #[default]
    Pre,
    /// After the call; what the hook prints replaces the result.
    Post,
}

/// `[tools.hooks.<name>]`: a shell command run in the workspace for matching calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HookConfig {
    /// `pre` (default) or `post`.
    pub event: HookEvent,
    /// Tool names (`*` at the end matches a prefix, e.g. `mcp__github__*`); empty = all.
    pub tools: Vec<String>,
    /// Run with `/bin/sh -c` in the workspace; the call arrives as JSON on stdin.
    pub command: String,
    /// A pre hook that takes longer refuses the call; a post hook leaves the result.
    pub timeout_secs: u64,
}

impl Default for HookConfig {
    fn default() -> Self {
        Self {
            event: HookEvent::Pre,
            tools: Vec::new(),
            command: String::new(),
            timeout_secs: 10,
        }
    }
}

/// `[tools.exec]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExecConfig {
    /// Dangerous command groups refused by `exec`: `"all"` (default) or a list of names.
    pub deny_groups: DenyGroups,
    /// The sandbox around exec, hooks and stdio MCP servers.
    pub sandbox: SandboxMode,
    /// Whether sandboxed commands may use the network (`false`: none, loopback included).
    pub network: bool,
    /// `[tools.exec.limits]`: what one sandboxed command may use.
    pub limits: ExecLimits,
}

impl Default for ExecConfig {
    fn default() -> Self {
        Self {
            deny_groups: DenyGroups::default(),
            sandbox: SandboxMode::default(),
            network: true,
            limits: ExecLimits::default(),
        }
    }
}

/// `[tools.exec.limits]`: resource limits on every sandboxed command (exec, hooks, stdio
/// MCP servers). `0` switches one off. The defaults leave room for compilers, Node and
/// the JVM (which reserve large address ranges up front) and stop a runaway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExecLimits {
    /// Address space of each process (RLIMIT_AS), and the call's memory in total where a
    /// cgroup can be made (memory.max), in MiB.
    pub memory_mb: u64,
    /// CPU time of each process (RLIMIT_CPU), in seconds.
    pub cpu_secs: u64,
    /// The largest file a process may write (RLIMIT_FSIZE), in MiB; under bubblewrap also
    /// the size of the private `/tmp`, which lives in memory.
    pub file_size_mb: u64,
    /// Open files of each process (RLIMIT_NOFILE).
    pub open_files: u64,
    /// Processes and threads of one call, all together.
    pub processes: u64,
}

impl ExecLimits {
    /// The smallest useful values (below them not even `sh` starts): checked at load.
    pub const MIN: ExecLimits = ExecLimits {
        memory_mb: 64,
        cpu_secs: 1,
        file_size_mb: 1,
        open_files: 16,
        processes: 8,
    };
}

impl Default for ExecLimits {
    fn default() -> Self {
        Self {
            memory_mb: 4096,
            cpu_secs: 3600,
            file_size_mb: 4096,
            open_files: 8192,
            processes: 1024,
        }
    }
}

/// `deny_groups = "all"` or `deny_groups = ["net", ...]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DenyGroups {
    /// Every group the core knows is denied.
    #[default]
    All,
    /// Only these groups (an empty list denies none).
    Some(Vec<String>),
}

impl DenyGroups {
    /// Whether the group called `name` is denied.
    pub fn denies(&self, name: &str) -> bool {
        match self {
            Self::All => true,
            Self::Some(names) => names.iter().any(|n| n == name),
        }
    }
}

impl Serialize for DenyGroups {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::All => s.serialize_str("all"),
            Self::Some(names) => {
                let mut seq = s.serialize_seq(Some(names.len()))?;
                for name in names {
                    seq.serialize_element(name)?;
                }
                seq.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for DenyGroups {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DenyGroupsVisitor)
    }
}

struct DenyGroupsVisitor;

impl<'de> Visitor<'de> for DenyGroupsVisitor {
    type Value = DenyGroups;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"all\" or a list of group names")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<DenyGroups, E> {
        if v == "all" {
            Ok(DenyGroups::All)
        } else {
            Err(E::invalid_value(de::Unexpected::Str(v), &self))
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<DenyGroups, A::Error> {
        let mut names = Vec::new();
        while let Some(name) = seq.next_element::<String>()? {
            names.push(name);
        }
        Ok(DenyGroups::Some(names))
    }
}

/// `[tools.permissions]`: rules by tool and argument pattern, checked deny, ask, allow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionsConfig {
    /// Calls that run without asking.
    pub allow: Vec<String>,
    /// Calls that need the owner's yes.
    pub ask: Vec<String>,
    /// Calls refused outright.
    pub deny: Vec<String>,
    /// How long an approval question waits for the owner; no answer is a no.
    pub approval_timeout_secs: u64,
}

impl Default for PermissionsConfig {
    fn default() -> Self {
        Self {
            allow: Vec::new(),
            ask: Vec::new(),
            deny: Vec::new(),
            approval_timeout_secs: 300,
        }
    }
}

/// `[tools.web_search]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchConfig {
    /// One of [`WebSearchConfig::BACKENDS`]; `None` disables `web_search`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Instance URL (required for `searxng`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl WebSearchConfig {
    /// Backends `backend` may name.
    pub const BACKENDS: [&'static str; 3] = ["brave", "searxng", "tavily"];
}

/// `[tools.browser]`: the `browser` tool's Chromium.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BrowserConfig {
    /// Seconds without a browser call before Chromium is stopped (it starts again on
    /// the next call).
    pub idle_s: u64,
    /// Inner addresses the browser may reach anyway: `IP:port` (`127.0.0.1:8080`,
    /// `[::1]:3000`) or a CIDR block (`10.1.2.0/24`, any port). Empty: only the public
    /// internet.
    pub allow_private: Vec<String>,
    /// The Chromium to run; `None` looks for chromium, chromium-browser,
    /// google-chrome on PATH.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            idle_s: 300,
            allow_private: Vec::new(),
            executable: None,
        }
    }
}
