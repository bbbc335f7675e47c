//! `todo`: the model's checklist for long tasks. It sends the whole list each time
//! (there is no hidden state); the tool checks it and shows it back, so the plan is in
//! the conversation for the model and, in the transcript, for the owner.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Effects, Tool, ToolContext, ToolError, TypedTool};

pub(super) fn tool() -> Arc<dyn Tool> {
    Arc::new(Todo)
}

struct Todo;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct TodoArgs {
    items: Vec<Item>,
}

// Extra fields in an item are ignored, as they always were.
#[derive(Deserialize, JsonSchema)]
struct Item {
    text: String,
    done: Option<bool>,
}

#[async_trait]
impl TypedTool for Todo {
    type Args = TodoArgs;
    const NAME: &'static str = "todo";
    const EFFECTS: Effects = Effects::PLAN.union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "Keep a checklist for a long task: send the whole list each time, marking items done as you finish them.".into()
    }

    async fn run(&self, args: TodoArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let items = args.items;
        if items.is_empty() {
            return Ok("The checklist is empty.".into());
        }
        let mut done = 0;
        let mut lines = Vec::new();
        for item in &items {
            let text = item.text.trim();
            if text.is_empty() {
                return Err(ToolError::new("every item needs a non-empty `text`"));
            }
            let finished = item.done.unwrap_or(false);
            done += usize::from(finished);
            lines.push(format!("{} {text}", if finished { "☑" } else { "☐" }));
        }
        Ok(format!(
            "{}\n({done} of {} done)",
            lines.join("\n"),
            items.len()
        ))
    }
}
