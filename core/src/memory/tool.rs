//! The memory tools the model calls: `memory_write {name, type, description, content}`,
//! `memory_search {query}`, `memory_read {name}`, `memory_forget {name}`. They work on
//! the workspace's memory files through `pincer-memory`, off the async threads. Bad
//! input comes back as an error that says how to fix the call.

use crate::tools::Effects;
use std::sync::Arc;

use crate::tz::Tz;
use async_trait::async_trait;
use pincer_memory::{HitKind, Kind, Memory, MemoryError};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::{Tool, ToolContext, ToolError, TypedTool};

/// One of the four memory tools on `memory`, dating what it stores in `timezone`.
pub fn tool(action: Action, memory: &Memory, timezone: Tz) -> Arc<dyn Tool> {
    let on = On {
        memory: memory.clone(),
        timezone,
    };
    match action {
        Action::Write => Arc::new(MemoryWrite(on)),
        Action::Search => Arc::new(MemorySearch(on)),
        Action::Read => Arc::new(MemoryRead(on)),
        Action::Forget => Arc::new(MemoryForget(on)),
    }
}

/// Which memory tool.
#[derive(Debug, Clone, Copy)]
pub enum Action {
    Write,
    Search,
    Read,
    Forget,
}

/// What each tool works on: the gateway's memory (its state folder out of commands'
/// reach), and the timezone today's date is read in.
struct On {
    memory: Memory,
    timezone: Tz,
}

struct MemoryWrite(On);
struct MemorySearch(On);
struct MemoryRead(On);
struct MemoryForget(On);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    name: String,
    #[serde(rename = "type")]
    #[schemars(extend("enum" = Kind::NAMES))]
    kind: String,
    description: String,
    content: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    query: String,
}

/// memory_read's and memory_forget's: one memory, by name.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NameArgs {
    name: String,
}

#[async_trait]
impl TypedTool for MemoryWrite {
    type Args = WriteArgs;
    const NAME: &'static str = "memory_write";
    const EFFECTS: Effects = Effects::WRITES_MEMORY.union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "Save or replace a lasting memory about your owner or their work (memory/<name>.md plus its MEMORY.md line). Use absolute dates.".into()
    }

    fn validate(&self, args: &WriteArgs) -> Result<(), ToolError> {
        match Kind::parse(&args.kind) {
            Some(_) => Ok(()),
            None => Err(ToolError::new(format!(
                "`type` must be one of {}; got `{}`",
                Kind::NAMES.join(", "),
                args.kind
            ))),
        }
    }

    async fn run(&self, args: WriteArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        blocking(&self.0, move |memory, today| write(memory, &args, today)).await
    }
}

#[async_trait]
impl TypedTool for MemorySearch {
    type Args = SearchArgs;
    const NAME: &'static str = "memory_search";
    const EFFECTS: Effects = Effects::OWNER_MEMORY
        .union(Effects::PLAN)
        .union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "Search memory files and daily conversation logs.".into()
    }

    /// A hit in the daily logs is what people said (and what a command may have
    /// written there under Landlock), not a memory the owner vouched for: it makes the
    /// turn untrusted.
    async fn run(&self, args: SearchArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let logs = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = std::sync::Arc::clone(&logs);
        let found = blocking(&self.0, move |memory, today| {
            let (text, logs) = search(memory, &args.query, today)?;
            seen.store(logs, std::sync::atomic::Ordering::Relaxed);
            Ok(text)
        })
        .await?;
        if logs.load(std::sync::atomic::Ordering::Relaxed) {
            ctx.taint.set();
        }
        Ok(found)
    }
}

#[async_trait]
impl TypedTool for MemoryRead {
    type Args = NameArgs;
    const NAME: &'static str = "memory_read";
    const EFFECTS: Effects = Effects::OWNER_MEMORY
        .union(Effects::PLAN)
        .union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "Read one memory file.".into()
    }

    async fn run(&self, args: NameArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        blocking(&self.0, move |memory, today| {
            read(memory, &args.name, today)
        })
        .await
    }
}

#[async_trait]
impl TypedTool for MemoryForget {
    type Args = NameArgs;
    const NAME: &'static str = "memory_forget";
    const EFFECTS: Effects = Effects::WRITES_MEMORY.union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "Delete a memory that is wrong or no longer true.".into()
    }

    async fn run(&self, args: NameArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        blocking(&self.0, move |memory, _| {
            let entry = memory.forget(&args.name)?;
            Ok(format!(
                "Forgot {} and removed its MEMORY.md line.",
                entry.path()
            ))
        })
        .await
    }
}

/// Run `work` on the memory off the async threads, with today's date in its timezone.
async fn blocking(
    on: &On,
    work: impl FnOnce(&Memory, chrono::NaiveDate) -> Result<String, MemoryError> + Send + 'static,
) -> Result<String, ToolError> {
    let memory = on.memory.clone();
    let today = crate::clock::utc().with_timezone(&on.timezone).date_naive();
    tokio::task::spawn_blocking(move || work(&memory, today))
        .await
        .map_err(|e| ToolError::new(format!("the memory tool failed: {e}")))?
        .map_err(|e| ToolError::new(e.to_string()))
}

fn write(
    memory: &Memory,
    args: &WriteArgs,
    today: chrono::NaiveDate,
) -> Result<String, MemoryError> {
    let written = memory.write(
        &args.name,
        &args.kind,
        &args.description,
        &args.content,
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

/// The hits for `query`, and whether any is a daily log's.
fn search(
    memory: &Memory,
    query: &str,
    today: chrono::NaiveDate,
) -> Result<(String, bool), MemoryError> {
    let hits = memory.search(query, 10)?;
    if hits.is_empty() {
        return Ok((
            format!("Nothing in memory matches \"{query}\". Try other words."),
            false,
        ));
    }
    let logs = hits.iter().any(|hit| hit.kind == HitKind::Log);
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
    Ok((lines.join("\n"), logs))
}

fn read(memory: &Memory, name: &str, today: chrono::NaiveDate) -> Result<String, MemoryError> {
    let entry = memory.read(name)?;
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
