//! Permission modes, for conversations a program drives (`pincer agent`, `pincer acp`),
//! as the Claude Code CLI names them:
//!
//! - `default` — a call that acts (by its tool's declared `Effects`: runs a command,
//!   writes a file, sends, schedules, writes memory; an MCP tool) asks the host first;
//! - `acceptEdits` — calls that only edit workspace files go ahead; anything else that
//!   acts asks;
//! - `plan` — only tools declared for plan mode (they read, look up or plan) are
//!   offered and run, plus `exit_plan_mode {plan}`, whose approval by the host ends
//!   plan mode; outside it, `enter_plan_mode {}` lets the model go into it (it only
//!   narrows what runs, so it is not asked about);
//! - `bypassPermissions` — nothing asks (`deny` rules still refuse);
//! - `dontAsk` — nothing asks either: a call that would be asked is refused instead,
//!   unless an "always" answer already allows it.
//!
//! Chats and the terminal have no mode: their permission rules alone decide. A
//! conversation's mode lives here, by session, set by its host and by `exit_plan_mode`;
//! so does the tool preset its host chose (`super::preset`), which a subagent's
//! conversation inherits from its parent's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::preset::ToolPreset;
use super::{Effects, ToolContext, ToolError, TypedTool};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PermissionMode {
    #[default]
    Default,
    AcceptEdits,
    Plan,
    BypassPermissions,
    DontAsk,
}

impl PermissionMode {
    /// The mode a host names (`default`, `acceptEdits`, `plan`, `bypassPermissions`,
    /// `dontAsk`; the CLI's `auto` reads as `default`).
    pub fn parse(name: &str) -> Option<PermissionMode> {
        Some(match name {
            "default" | "auto" => PermissionMode::Default,
            "dontAsk" => PermissionMode::DontAsk,
            "acceptEdits" => PermissionMode::AcceptEdits,
            "plan" => PermissionMode::Plan,
            "bypassPermissions" => PermissionMode::BypassPermissions,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::DontAsk => "dontAsk",
        }
    }

    /// Whether a call that does `effects` must be approved by the host first.
    pub fn asks(self, effects: Effects) -> bool {
        match self {
            PermissionMode::Default | PermissionMode::DontAsk => effects.acts(),
            PermissionMode::AcceptEdits => effects.acts() && !effects.only_edits(),
            PermissionMode::Plan | PermissionMode::BypassPermissions => false,
        }
    }
}

pub const EXIT_PLAN_MODE: &str = "exit_plan_mode";
pub const ENTER_PLAN_MODE: &str = "enter_plan_mode";

/// Of the tools a turn would offer, those its conversation's mode lets it have: plan
/// mode only what reads, and the way out; a host's conversation elsewhere the way in;
/// a chat (no mode) neither.
pub fn keep_offered(
    mode: Option<PermissionMode>,
    tools: &mut Vec<crate::provider::ToolSpec>,
    effects: impl Fn(&str) -> Effects,
) {
    match mode {
        Some(PermissionMode::Plan) => {
            tools.retain(|t| t.name != ENTER_PLAN_MODE && effects(&t.name).in_plan_mode());
        }
        Some(_) => tools.retain(|t| t.name != EXIT_PLAN_MODE),
        None => tools.retain(|t| t.name != EXIT_PLAN_MODE && t.name != ENTER_PLAN_MODE),
    }
}

/// The modes and tool presets of the conversations a host drives, by session, and the
/// most model calls a turn of theirs may make where the host set it (`--max-turns`).
#[derive(Debug, Default)]
pub struct Modes {
    modes: Mutex<HashMap<i64, PermissionMode>>,
    /// Only the conversations whose host asked for less than `full`.
    presets: Mutex<HashMap<i64, ToolPreset>>,
    max_calls: Mutex<HashMap<i64, u32>>,
}

impl Modes {
    pub fn max_calls(&self, session: i64) -> Option<u32> {
        lock(&self.max_calls).get(&session).copied()
    }

    pub fn set_max_calls(&self, session: i64, calls: u32) {
        lock(&self.max_calls).insert(session, calls);
    }

    pub fn get(&self, session: i64) -> Option<PermissionMode> {
        lock(&self.modes).get(&session).copied()
    }

    pub fn set(&self, session: i64, mode: PermissionMode) {
        lock(&self.modes).insert(session, mode);
    }

    /// The tool preset of `session`, when its host chose one.
    pub fn preset(&self, session: i64) -> Option<ToolPreset> {
        lock(&self.presets).get(&session).copied()
    }

    pub fn set_preset(&self, session: i64, preset: ToolPreset) {
        lock(&self.presets).insert(session, preset);
    }

    /// A subagent's conversation keeps its parent's mode and preset: a host's task must
    /// not run unasked what the host would be asked about (or, in plan mode, at all),
    /// nor get back tools the host took away.
    pub fn inherit(&self, parent: i64, child: i64) {
        if let Some(mode) = self.get(parent) {
            self.set(child, mode);
        }
        if let Some(preset) = self.preset(parent) {
            self.set_preset(child, preset);
        }
    }
}

fn lock<T>(map: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    map.lock().unwrap_or_else(|e| e.into_inner())
}

/// `exit_plan_mode {plan}`: offered in plan mode only. The pipeline asks the host with
/// the plan (always); once approved, this leaves plan mode for `default`, unless the
/// host already chose another mode with its answer.
pub struct ExitPlanMode {
    pub modes: Arc<Modes>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExitPlanModeArgs {
    /// the plan, in markdown
    // The host shows it from the raw call; the tool itself only leaves plan mode.
    #[expect(dead_code)]
    plan: String,
}

#[async_trait]
impl TypedTool for ExitPlanMode {
    type Args = ExitPlanModeArgs;
    const NAME: &'static str = EXIT_PLAN_MODE;
    const EFFECTS: Effects = Effects::PLAN;

    fn description(&self) -> String {
        "In plan mode: present your plan and ask the user to approve it; once approved you may carry it out.".into()
    }

    async fn run(&self, _args: ExitPlanModeArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let Some(session) = ctx.session else {
            return Err(ToolError::new(
                "there is no conversation to leave plan mode in",
            ));
        };
        if self.modes.get(session) == Some(PermissionMode::Plan) {
            self.modes.set(session, PermissionMode::Default);
        }
        let now = self.modes.get(session).unwrap_or_default();
        Ok(format!(
            "The user approved the plan. The permission mode is now {}: carry the plan out.",
            now.as_str()
        ))
    }
}

/// `enter_plan_mode {}` (the CLI's `EnterPlanMode`): offered where a host drives the
/// conversation and it is not in plan mode, never to a subagent. It only narrows what
/// runs, so nobody is asked; the host sees the mode change.
pub struct EnterPlanMode {
    pub modes: Arc<Modes>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnterPlanModeArgs {}

#[async_trait]
impl TypedTool for EnterPlanMode {
    type Args = EnterPlanModeArgs;
    const NAME: &'static str = ENTER_PLAN_MODE;
    const EFFECTS: Effects = Effects::PLAN;

    fn description(&self) -> String {
        "Before a task that is not simple: go into plan mode, where you look around with the reading tools and design the approach, then present it with exit_plan_mode for the user to approve before you change anything.".into()
    }

    async fn run(&self, _args: EnterPlanModeArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let Some(session) = ctx.session.filter(|s| self.modes.get(*s).is_some()) else {
            return Err(ToolError::new(
                "plan mode is for conversations a program drives; this one has none",
            ));
        };
        self.modes.set(session, PermissionMode::Plan);
        Ok("Entered plan mode. Explore with the reading tools and design the approach; when the plan is ready, present it with exit_plan_mode.".into())
    }
}
