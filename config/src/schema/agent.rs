//! `[agent]`: the agent loop's limits (iterations, cost, time), its queue mode, timezone,
//! owners and workspace. Validation of these values lives in `crate::load::validate`;
//! the timezone name is checked by the core (chrono-tz), not here.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// `[agent]` settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// The agent's working directory (memory, skills, files). `None` means
    /// `$PINCER_HOME/workspace`; read it through [`AgentConfig::workspace_dir`], which
    /// also expands a leading `~`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<PathBuf>,
    /// Model calls allowed in one turn before the loop stops.
    pub max_iterations: u32,
    /// Spending cap for one turn, USD.
    pub max_turn_cost_usd: f64,
    /// Spending cap for one day (in `timezone`), USD.
    pub max_day_cost_usd: f64,
    /// Wall-clock cap for one turn, seconds.
    pub max_turn_secs: u64,
    /// What happens to messages that arrive while a turn runs.
    pub queue_mode: QueueMode,
    /// IANA timezone name for dates shown to the model, cron and daily budgets.
    pub timezone: String,
    /// Canonical sender ids (`telegram:42`) treated as owners; empty means the first
    /// sender approved on a channel becomes its owner.
    pub owners: Vec<String>,
    /// A session worker idle this long (seconds) is reaped; the session itself stays.
    pub idle_session_secs: u64,
    /// Output tokens requested per model call.
    pub max_tokens: u32,
    /// Before a model call whose request is estimated past this share of the model's
    /// context window (`[models."P/M"] context_tokens`), old tool results are pruned and
    /// then, if still over, the older conversation is summarised.
    pub compact_at: f64,
    /// Model calls a subagent task may make (the `task` tool).
    pub task_max_iterations: u32,
    /// A model whose context window is under this many tokens gets a small prompt:
    /// only `small_window_tools` offered whole (the rest found with `tool_search`).
    pub small_window_tokens: u64,
    /// The tools offered whole to a model with a small window.
    pub small_window_tools: Vec<String>,
    /// The built-in tools offered whole in every request; the others are named in
    /// `tool_search`'s description with a line each and loaded when the model asks, so
    /// the first request stays small.
    pub always_tools: Vec<String>,
}

/// The built-ins every request carries whole by default: what most turns use.
pub(super) const ALWAYS_TOOLS: [&str; 12] = [
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "glob",
    "grep",
    "exec",
    "web_fetch",
    "web_search",
    "memory_search",
    "memory_write",
    "todo",
];

/// The tools a small-window model is offered whole by default.
pub(super) const SMALL_WINDOW_TOOLS: [&str; 6] = [
    "read_file",
    "write_file",
    "edit_file",
    "exec",
    "memory_write",
    "memory_search",
];

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            workspace: None,
            max_iterations: 25,
            max_turn_cost_usd: 0.50,
            max_day_cost_usd: 5.00,
            max_turn_secs: 600,
            queue_mode: QueueMode::default(),
            timezone: "UTC".to_owned(),
            owners: Vec::new(),
            idle_session_secs: 300,
            max_tokens: 4096,
            compact_at: 0.75,
            task_max_iterations: 15,
            small_window_tokens: 16_384,
            small_window_tools: SMALL_WINDOW_TOOLS.map(String::from).to_vec(),
            always_tools: ALWAYS_TOOLS.map(String::from).to_vec(),
        }
    }
}

impl AgentConfig {
    /// The workspace directory: `workspace` with `~` expanded against `user_home`, or
    /// `pincer_home/workspace` when unset.
    pub fn workspace_dir(&self, pincer_home: &Path, user_home: Option<&Path>) -> PathBuf {
        match &self.workspace {
            Some(dir) => expand_tilde(dir, user_home),
            None => pincer_home.join("workspace"),
        }
    }
}

/// Expands a leading `~` or `~/` against `user_home`; any other path (and `~` when the
/// user's home is unknown) is returned unchanged.
pub fn expand_tilde(path: &Path, user_home: Option<&Path>) -> PathBuf {
    let Some(home) = user_home else {
        return path.to_path_buf();
    };
    match path.strip_prefix("~") {
        Ok(rest) => home.join(rest),
        Err(_) => path.to_path_buf(),
    }
}

/// How a busy session treats new messages (see DESIGN.md "Sessions, queue modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueMode {
    /// Deliver at the next checkpoint of the running turn.
    #[default]
    Steer,
    /// Each becomes its own next turn.
    Followup,
    /// All are merged into one next turn.
    Collect,
    /// Abort the running turn and answer the newest.
    Interrupt,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_defaults_under_pincer_home_and_expands_tilde() {
        let mut agent = AgentConfig::default();
        let home = Path::new("/h/.pincer");
        let user = Path::new("/home/u");
        assert_eq!(
            agent.workspace_dir(home, Some(user)),
            home.join("workspace")
        );
        agent.workspace = Some(PathBuf::from("~/ws"));
        assert_eq!(
            agent.workspace_dir(home, Some(user)),
            PathBuf::from("/home/u/ws")
        );
        agent.workspace = Some(PathBuf::from("~"));
        assert_eq!(
            agent.workspace_dir(home, Some(user)),
            PathBuf::from("/home/u")
        );
        agent.workspace = Some(PathBuf::from("/abs/~x"));
        assert_eq!(
            agent.workspace_dir(home, Some(user)),
            PathBuf::from("/abs/~x")
        );
        agent.workspace = Some(PathBuf::from("~other/x"));
        assert_eq!(
            agent.workspace_dir(home, Some(user)),
            PathBuf::from("~other/x")
        );
    }
}
