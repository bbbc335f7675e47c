//! `task {description, prompt, background?}`: the model hands a self-contained piece of
//! work to a subagent (see the module above). The call carries the turn's tier, chat
//! and taint to the child; it is not read-only, so it runs alone.

use crate::tools::Effects;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Start, Tasks};
use crate::tools::{ToolContext, ToolError, TypedTool};

pub struct TaskTool {
    tasks: Arc<Tasks>,
}

impl TaskTool {
    pub fn new(tasks: Arc<Tasks>) -> Arc<Self> {
        Arc::new(Self { tasks })
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskArgs {
    /// a few words naming the task
    description: String,
    /// everything the subagent needs to know
    prompt: String,
    background: Option<bool>,
}

#[async_trait]
impl TypedTool for TaskTool {
    type Args = TaskArgs;
    const NAME: &'static str = "task";
    const EFFECTS: Effects = Effects::ALONE;

    fn description(&self) -> String {
        "Hand a self-contained piece of work to a subagent with your tools (but task, send_message and cron); it works in its own conversation and returns its final answer. background: true returns at once and sends the answer to this chat when done. At most 3 at once.".into()
    }

    async fn run(&self, args: TaskArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let description = args.description.trim().to_string();
        let prompt = args.prompt;
        if description.is_empty() || prompt.trim().is_empty() {
            return Err(ToolError::new(
                "give the task a description and a prompt saying what to do",
            ));
        }
        let background = args.background.unwrap_or(false);
        let (Some(parent_session), Some(target)) = (ctx.session, ctx.origin.clone()) else {
            return Err(ToolError::new(
                "tasks can only be started from a conversation",
            ));
        };
        let start = Start {
            parent_session,
            description: description.chars().take(120).collect(),
            prompt,
            background,
            origin: ctx.caller.origin.clone(),
            target,
            tainted: ctx.taint.is_set(),
        };
        let (answer, untrusted) = self
            .tasks
            .start(start)
            .await
            .map_err(|e| ToolError(e.to_string()))?;
        // What the child read may be in its answer: the parent's turn is untrusted too.
        if untrusted {
            ctx.taint.set();
        }
        Ok(answer)
    }
}
