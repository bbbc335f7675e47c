//! The `cron` tool: the model creates, lists, removes and runs scheduled jobs when
//! someone asks in a chat. A job belongs to the caller and runs at their tier; made in a
//! chat, it delivers to that chat (an owner's may also deliver to an owner's own chat).
//! Callers see, remove and run only their own jobs; owners all of them. The arguments
//! are the CLI's names.

use crate::tools::Effects;
use std::sync::Arc;

use crate::tz::Tz;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::Notify;

use super::Clock;
use super::jobs::{JobRequest, Maker, create, describe};
use crate::access::Place;
use crate::store::Store;
use crate::tools::{ToolContext, ToolError, TypedTool};

pub struct CronTool {
    pub store: Store,
    /// Wakes the scheduler (when it runs in this process) after a change.
    pub wake: Arc<Notify>,
    pub timezone: Tz,
    pub clock: Arc<dyn Clock>,
    /// `agent.owners`: where owners' jobs may also deliver.
    pub owners: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CronArgs {
    action: Action,
    name: Option<String>,
    cron: Option<String>,
    every: Option<String>,
    at: Option<String>,
    tz: Option<String>,
    prompt: Option<String>,
    deliver: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Action {
    Add,
    List,
    Remove,
    Run,
}

/// An argument that says something (blank counts as not given).
fn text(value: Option<String>) -> Option<String> {
    value.filter(|s| !s.trim().is_empty())
}

/// Whether the caller may see and change `job`: their own, or any for owners.
fn owns(ctx: &ToolContext, job: &crate::store::Job) -> bool {
    let caller = &ctx.caller.origin;
    caller.is_owner() || job.creator == caller.sender
}

#[async_trait]
impl TypedTool for CronTool {
    type Args = CronArgs;
    const NAME: &'static str = "cron";
    const EFFECTS: Effects = Effects::SCHEDULES;

    /// Listing schedules nothing; every other action changes what happens later.
    fn call_effects(&self, args: &serde_json::Value) -> Effects {
        match args.get("action").and_then(serde_json::Value::as_str) {
            Some("list") => Effects::empty(),
            _ => Self::EFFECTS,
        }
    }

    fn description(&self) -> String {
        "Scheduled tasks. add: name, one of cron (5 fields, e.g. \"30 8 * * 1-5\") / every (\"30m\") / at (\"2026-11-23T09:00\"), optional tz, prompt (what to do then); results go to this chat unless deliver (\"telegram:<chat>\"). Also list, remove (name), run (name).".into()
    }

    async fn run(&self, args: CronArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let changed = match args.action {
            Action::Add => {
                let request = JobRequest {
                    name: text(args.name).unwrap_or_default(),
                    cron: text(args.cron),
                    every: text(args.every),
                    at: text(args.at),
                    tz: text(args.tz),
                    prompt: text(args.prompt).unwrap_or_default(),
                    deliver: text(args.deliver),
                    session: None,
                };
                let caller = &ctx.caller.origin;
                let maker = Maker {
                    creator: caller.sender.clone(),
                    tier: caller.tier,
                    chat: ctx
                        .origin
                        .clone()
                        .filter(|_| caller.place != Place::Terminal),
                    owners: self.owners.clone(),
                    in_group: caller.place == Place::Group,
                };
                let job = create(
                    &self.store,
                    request,
                    self.timezone,
                    &maker,
                    self.clock.now(),
                )
                .await
                .map_err(|e| ToolError(e.to_string()))?;
                let note = if job.deliver.is_none() {
                    " Results stay in the job's session (this chat is the terminal); pass deliver to send them to a chat."
                } else {
                    ""
                };
                format!("Scheduled: {}.{note}", describe(&job))
            }
            Action::List => {
                let mut jobs = self
                    .store
                    .jobs()
                    .await
                    .map_err(|e| ToolError::new(e.to_string()))?;
                jobs.retain(|job| owns(ctx, job));
                if jobs.is_empty() {
                    return Ok("No scheduled jobs.".into());
                }
                return Ok(jobs.iter().map(describe).collect::<Vec<_>>().join("\n"));
            }
            action @ (Action::Remove | Action::Run) => {
                let name = text(args.name)
                    .ok_or_else(|| ToolError::new("give the job's name (see action list)"))?;
                let job = self
                    .store
                    .job(&name)
                    .await
                    .map_err(|e| ToolError::new(e.to_string()))?
                    .filter(|job| owns(ctx, job))
                    .ok_or_else(|| {
                        ToolError::new(format!(
                            "no job of yours named `{name}`; action list shows them"
                        ))
                    })?;
                if matches!(action, Action::Remove) {
                    self.store
                        .remove_job(job.id)
                        .await
                        .map_err(|e| ToolError::new(e.to_string()))?;
                    format!("Removed job {}.", job.name)
                } else {
                    let now = self.clock.now().timestamp_millis();
                    self.store
                        .set_next_run(job.id, Some(now))
                        .await
                        .map_err(|e| ToolError::new(e.to_string()))?;
                    self.store
                        .set_job_enabled(job.id, true)
                        .await
                        .map_err(|e| ToolError::new(e.to_string()))?;
                    format!(
                        "Job {} will run in a moment (when the gateway, `pincer run`, is running).",
                        job.name
                    )
                }
            }
        };
        self.wake.notify_one();
        Ok(changed)
    }
}
