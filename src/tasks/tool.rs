//! `task {description, prompt, background?}`: the model hands a self-contained piece of
//! work to a subagent (see the module above). The call carries the turn's tier, chat
//! and taint to the child; it is not read-only, so it runs alone.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Start, Tasks};
use crate::provider::ToolSpec;
use crate::tools::{Tool, ToolContext, ToolError, string_arg};

pub struct TaskTool {
    tasks: Arc<Tasks>,
}

impl TaskTool {
    pub fn new(tasks: Arc<Tasks>) -> Arc<Self> {
        Arc::new(Self { tasks })
    }
}

#[async_trait]
impl Tool for TaskTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "task".into(),
            description: "Hand a self-contained piece of work to a subagent with your tools (but task, send_message and cron); it works in its own conversation and returns its final answer. background: true returns at once and sends the answer to this chat when done. At most 3 at once.".into(),
            input_schema: json!({"type": "object", "properties": {
                "description": {"type": "string", "description": "a few words naming the task"},
                "prompt": {"type": "string", "description": "everything the subagent needs to know"},
                "background": {"type": "boolean"}
            }, "required": ["description", "prompt"]}),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let description = string_arg(&args, "description")?.trim().to_string();
        let prompt = string_arg(&args, "prompt")?.to_string();
        if description.is_empty() || prompt.trim().is_empty() {
            return Err(ToolError::new(
                "give the task a description and a prompt saying what to do",
            ));
        }
        let background = args
            .get("background")
            .and_then(Value::as_bool)
            .unwrap_or(false);
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
        self.tasks.start(start).await.map_err(ToolError::new)
    }
}
