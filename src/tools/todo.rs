//! `todo`: the model's checklist for long tasks. It sends the whole list each time
//! (there is no hidden state); the tool checks it and shows it back, so the plan is in
//! the conversation for the model and, in the transcript, for the owner.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError};
use crate::provider::ToolSpec;

pub fn tool() -> Arc<dyn Tool> {
    Arc::new(Todo)
}

struct Todo;

#[async_trait]
impl Tool for Todo {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "todo".into(),
            description: "Keep a checklist for a long task: send the whole list each time, marking items done as you finish them.".into(),
            input_schema: json!({"type": "object", "properties": {
                "items": {"type": "array", "items": {"type": "object", "properties": {
                    "text": {"type": "string"}, "done": {"type": "boolean"}
                }, "required": ["text"]}}
            }, "required": ["items"]}),
        }
    }

    fn read_only(&self, _args: &Value) -> bool {
        true
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<String, ToolError> {
        let items = args
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if items.is_empty() {
            return Ok("The checklist is empty.".into());
        }
        let mut done = 0;
        let mut lines = Vec::new();
        for item in &items {
            let text = item
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim();
            if text.is_empty() {
                return Err(ToolError::new("every item needs a non-empty `text`"));
            }
            let finished = item.get("done").and_then(Value::as_bool).unwrap_or(false);
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
