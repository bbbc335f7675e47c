//! The `exec` tool: run a shell command in the workspace, inside the sandbox, with a
//! timeout, an output cap and an environment without secrets, after the deny groups
//! (a tripwire, not the wall: the sandbox is) have checked it. The prompt's own files
//! are put back if the command changed them.
//!
//! - `parse/`    — splits the command into segments (`&&`, `||`, `;`, `|`, subshells,
//!   substitutions); what it cannot follow is refused
//! - `command/`  — the programs a segment runs, seeing through `sudo`, `env`, `sh -c` …
//! - `paths`     — what a path stands for (the root, a disk, a credentials file …)
//! - `rules/`    — one rule per deny group
//! - `deny`      — the group list and `check`
//! - `run`       — the process: `/bin/sh -c`, fresh environment, process group, capture
//!
//! A refused command and a command that cannot start are tool errors; a command that
//! runs and fails is not (its exit code is in the result).

mod command;
mod deny;
mod parse;
mod paths;
mod rules;
pub(super) mod run;
#[cfg(test)]
mod tests;

use crate::tools::Effects;
use std::num::NonZeroU64;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{ToolContext, ToolError, TypedTool};
use crate::sandbox::Jail;

pub use deny::{Denied, GROUPS, Run, check};

/// How long a command may run when the model names no timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest timeout the model may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// The most output (stdout and stderr together) a result carries.
pub const MAX_OUTPUT: usize = 16 * 1024;

/// The deny groups switched on, fixed when the tool is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenyPolicy {
    on: Vec<&'static str>,
}

impl DenyPolicy {
    /// The groups of [`GROUPS`] that `denies` says are on.
    pub fn new(denies: impl Fn(&str) -> bool) -> Self {
        let on = GROUPS
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| denies(name))
            .collect();
        Self { on }
    }

    pub fn denies(&self, group: &str) -> bool {
        self.on.contains(&group)
    }

    /// Whether `command` may run.
    pub fn check(&self, command: &str) -> Result<(), Denied> {
        check(command, &|group| self.denies(group))
    }
}

/// The `exec` tool.
#[derive(Debug, Clone)]
pub struct ExecTool {
    /// Which deny groups refuse commands (from `[tools.exec] deny_groups`).
    deny: DenyPolicy,
    /// Used when the call names no `timeout_secs`.
    default_timeout: Duration,
    /// The cap on `timeout_secs`, so one call cannot hold a turn for hours.
    max_timeout: Duration,
    /// The cap on the output put into the conversation.
    max_output: usize,
    /// The sandbox commands run in; `None` only where the library is used without one
    /// (unit tests): the gateway always sets it.
    jail: Option<Jail>,
}

impl ExecTool {
    /// `denies(group)` says whether that deny group is on; it is asked once per group,
    /// now (pass `|g| config.tools.exec.deny_groups.denies(g)`).
    pub fn new(denies: impl Fn(&str) -> bool) -> Self {
        Self {
            deny: DenyPolicy::new(denies),
            default_timeout: DEFAULT_TIMEOUT,
            max_timeout: MAX_TIMEOUT,
            max_output: MAX_OUTPUT,
            jail: None,
        }
    }

    /// Run every command in `jail`.
    pub fn in_jail(mut self, jail: Jail) -> Self {
        self.jail = Some(jail);
        self
    }

    /// The call's timeout: the default when it names none, never past the cap.
    fn timeout(&self, args: &ExecArgs) -> Duration {
        args.timeout_secs.map_or(self.default_timeout, |secs| {
            Duration::from_secs(secs.get()).min(self.max_timeout)
        })
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecArgs {
    command: String,
    // More than the cap is cut to it.
    #[schemars(range(max = MAX_TIMEOUT.as_secs()))]
    timeout_secs: Option<NonZeroU64>,
}

#[async_trait]
impl TypedTool for ExecTool {
    type Args = ExecArgs;
    const NAME: &'static str = "exec";
    const EFFECTS: Effects = Effects::RUNS
        .union(Effects::READS_WORKSPACE)
        .union(Effects::WRITES_WORKSPACE)
        .union(Effects::FETCHES)
        .union(Effects::SUBAGENT);

    fn description(&self) -> String {
        format!(
            "Run a shell command (sh -c) in the workspace; returns exit code, stdout, stderr. \
             No stdin, no API keys in the environment, killed after timeout_secs (default {}). \
             Dangerous or uncheckable commands (sudo, rm -rf /, heredocs, eval …) are refused.",
            self.default_timeout.as_secs(),
        )
    }

    fn validate(&self, args: &ExecArgs) -> Result<(), ToolError> {
        if args.command.trim().is_empty() {
            return Err(ToolError::new(
                "`command` is empty; give a shell command to run",
            ));
        }
        Ok(())
    }

    async fn run(&self, args: ExecArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let command = args.command.as_str();
        let timeout = self.timeout(&args);
        self.deny
            .check(command)
            .map_err(|denied| ToolError::new(denied.to_string()))?;
        let call = run::run(
            self.jail.as_ref(),
            command,
            &ctx.workspace,
            timeout,
            self.max_output,
        );
        let (mut result, put_back) = match &self.jail {
            Some(jail) => crate::sandbox::bracket(&jail.command_lock(), &ctx.workspace, call).await,
            None => (call.await, Vec::new()),
        };
        if !put_back.is_empty() {
            let note = crate::sandbox::put_back_note(&put_back);
            match &mut result {
                Ok(text) => text.push_str(&note),
                Err(err) => err.0.push_str(&note),
            }
        }
        result
    }
}
