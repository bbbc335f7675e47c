//! What a tool is: the `Tool` trait every tool implements, the context a call runs in,
//! and the error it answers with. The pipeline that runs tools is `Registry` (mod.rs);
//! this file imports nothing of it, so a tool (or an MCP server's) depends on the
//! definition, not on the registry that holds every tool.

use std::path::PathBuf;

use async_trait::async_trait;
use serde_json::Value;

use super::args::{ArgsError, Parsed};
use super::caller::Caller;
use super::effects::Effects;
use super::error::ToolError;
use super::mode;
use super::taint::Taint;
use crate::provider::ToolSpec;

/// The most a tool result may put into the conversation.
pub const MAX_RESULT_BYTES: usize = 32 * 1024;

/// Pictures a call made for the model to look at (a browser screenshot): the turn shows
/// them after the call's result when its models see images; the result's text names
/// where each is saved either way.
#[derive(Debug, Clone, Default)]
pub struct Pictures(std::sync::Arc<std::sync::Mutex<Vec<(String, crate::provider::ImageData)>>>);

impl Pictures {
    /// `path` (inside the workspace), as the model is sent it.
    pub fn add(&self, path: String, data: crate::provider::ImageData) {
        self.lock().push((path, data));
    }

    /// What was added since the last take.
    pub fn take(&self) -> Vec<(String, crate::provider::ImageData)> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, crate::provider::ImageData)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What a tool may touch.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub workspace: PathBuf,
    /// The chat the turn answers (where a job made now delivers by default).
    pub origin: Option<pincer_channels::Target>,
    /// Who the call is made for, and which tools they may use.
    pub caller: Caller,
    /// Set once the turn has taken in untrusted content.
    pub taint: Taint,
    /// Pictures the call made for the model (see [`Pictures`]).
    pub pictures: Pictures,
    /// The stored session the turn belongs to (none outside a turn).
    pub session: Option<i64>,
    /// The conversation's permission mode, where a program drives it (`mode`).
    pub mode: Option<mode::PermissionMode>,
}

#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    /// What the tool does (see `effects`): every policy — taint, asking after untrusted
    /// content, plan mode, subagents, tiers, running side by side — follows from it. A
    /// tool that says nothing is taken to do everything (`Effects::STRICTEST`).
    fn effects(&self) -> Effects {
        Effects::STRICTEST
    }
    /// What this call does, where its arguments change it (`cron list` schedules
    /// nothing); by default the tool's own effects.
    fn call_effects(&self, _args: &Value) -> Effects {
        self.effects()
    }
    /// The most of a result that goes into the conversation; the rest is saved to a
    /// file in the workspace and the model is told where.
    fn max_result_bytes(&self) -> usize {
        MAX_RESULT_BYTES
    }
    /// Parse the model's JSON input, before hooks and permissions see the call, so the
    /// model can fix a bad one. A [`TypedTool`] parses it into its own `Args`; by
    /// default the JSON is kept as it is (a tool that reads `Value` itself).
    fn parse(&self, args: &Value) -> Result<Parsed, ArgsError> {
        Ok(Parsed::new(args.clone()))
    }
    /// Run the call with what `parse` made of its arguments.
    async fn run(&self, args: Parsed, ctx: &ToolContext) -> Result<String, ToolError>;
    /// `parse`, then `run`: a call from outside the pipeline (tests).
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let parsed = self
            .parse(&args)
            .map_err(|bad| ToolError::new(bad.to_string()))?;
        self.run(parsed, ctx).await
    }
}
