//! The memory tools the model calls: `memory_write {name, type, description, content}`,
//! `memory_search {query}`, `memory_read {name}`, `memory_forget {name}`. They work on
//! the workspace's memory files through `pincer-memory`, off the async threads. Bad
//! input comes back as an error that says how to fix the call.

use std::sync::Arc;

use async_trait::async_trait;
use chrono_tz::Tz;
use pincer_memory::{HitKind, Memory, MemoryError};
use serde_json::{Value, json};

use crate::provider::ToolSpec;
use crate::tools::{Tool, ToolContext, ToolError};

/// One of the four memory tools, dating what it stores in `timezone`.
pub fn tool(action: Action, timezone: Tz) -> Arc<dyn Tool> {
    Arc::new(MemoryTool { action, timezone })
}

/// Which memory tool.
#[derive(Debug, Clone, Copy)]
pub enum Action {
    Write,
    Search,
    Read,
    Forget,
}

struct MemoryTool {
    action: Action,
    timezone: Tz,
}

fn arg(args: &Value, key: &str) -> String {
    args.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[async_trait]
impl Tool for MemoryTool {
    fn spec(&self) -> ToolSpec {
        let name = json!({"type": "string"});
        let (tool, description, schema) = match self.action {
            Action::Write => (
                "memory_write",
                "Save or replace a lasting memory about your owner or their work (memory/<name>.md plus its MEMORY.md line). Use absolute dates.",
                json!({"type": "object", "properties": {
                    "name": name,
                    "type": {"type": "string", "enum": ["user", "feedback", "project", "reference"]},
                    "description": {"type": "string"},
                    "content": {"type": "string"}
                }, "required": ["name", "type", "description", "content"]}),
            ),
            Action::Search => (
                "memory_search",
                "Search memory files and daily conversation logs.",
                json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
            ),
            Action::Read => (
                "memory_read",
                "Read one memory file.",
                json!({"type": "object", "properties": {"name": name}, "required": ["name"]}),
            ),
            Action::Forget => (
                "memory_forget",
                "Delete a memory that is wrong or no longer true.",
                json!({"type": "object", "properties": {"name": name}, "required": ["name"]}),
            ),
        };
        ToolSpec {
            name: tool.into(),
            description: description.into(),
            input_schema: schema,
        }
    }

    fn read_only(&self, _args: &Value) -> bool {
        matches!(self.action, Action::Search | Action::Read)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let memory = Memory::new(&ctx.workspace);
        let action = self.action;
        let today = crate::clock::utc()
            .with_timezone(&self.timezone)
            .date_naive();
        tokio::task::spawn_blocking(move || run(&memory, action, &args, today))
            .await
            .map_err(|e| ToolError::new(format!("the memory tool failed: {e}")))?
            .map_err(|e| ToolError::new(e.to_string()))
    }
}

fn run(
    memory: &Memory,
    action: Action,
    args: &Value,
    today: chrono::NaiveDate,
) -> Result<String, MemoryError> {
    match action {
        Action::Write => {
            let written = memory.write(
                &arg(args, "name"),
                &arg(args, "type"),
                &arg(args, "description"),
                &arg(args, "content"),
                today,
            )?;
            // The repository exists from the first memory on, so the owner can undo.
            if let Err(err) = memory.repo() {
                tracing::warn!("the memory repository is not usable: {err}");
            }
            let mut out = format!(
                "{} {}.",
                if written.created { "Saved" } else { "Updated" },
                written.entry.path()
            );
            for (from, to) in &written.dates {
                out.push_str(&format!(" Stored \"{from}\" as \"{to}\"."));
            }
            if written.index_lines > pincer_memory::index::MAX_LINES {
                out.push_str(&format!(
                    " MEMORY.md has {} lines, over the {} shown: merge or forget old memories.",
                    written.index_lines,
                    pincer_memory::index::MAX_LINES
                ));
            }
            Ok(out)
        }
        Action::Search => {
            let query = arg(args, "query");
            let hits = memory.search(&query, 10)?;
            if hits.is_empty() {
                return Ok(format!(
                    "Nothing in memory matches \"{query}\". Try other words."
                ));
            }
            let lines: Vec<String> = hits
                .iter()
                .map(|hit| {
                    let age = hit
                        .updated
                        .and_then(|d| pincer_memory::entry::age_note((today - d).num_days()))
                        .map(|a| format!(" ({a})"))
                        .unwrap_or_default();
                    match hit.kind {
                        HitKind::Memory => {
                            format!("- {}{age}: {} — {}", hit.path, hit.description, hit.snippet)
                        }
                        HitKind::Log => {
                            format!("- {} (log of {}): {}", hit.path, hit.name, hit.snippet)
                        }
                    }
                })
                .collect();
            Ok(lines.join("\n"))
        }
        Action::Read => {
            let entry = memory.read(&arg(args, "name"))?;
            let age = entry
                .age_note(today)
                .map(|a| format!(", {a}"))
                .unwrap_or_default();
            let updated = entry
                .updated
                .map(|d| format!(", updated {d}"))
                .unwrap_or_default();
            Ok(format!(
                "{} ({}{updated}{age}): {}\n\n{}",
                entry.path(),
                entry.kind.as_str(),
                entry.description,
                entry.body
            ))
        }
        Action::Forget => {
            let entry = memory.forget(&arg(args, "name"))?;
            Ok(format!(
                "Forgot {} and removed its MEMORY.md line.",
                entry.path()
            ))
        }
    }
}
