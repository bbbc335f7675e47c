//! The dream, the core side: gather what happened since the last dream (daily logs,
//! conversation excerpts) and the memory files, ask the heavy chain for a list of
//! operations through one tool call, and hand them to `pincer-memory`, which checks,
//! applies and commits them. A dream with nothing new to read does not call the model;
//! one over its token cap reads the oldest material first and leaves the rest for the
//! next; the cursor moves only when a dream succeeds.

use chrono::{TimeZone, Utc};
use pincer_channels::SessionKey;
use pincer_memory::{Cursor, Op, Outcome, Prepared};
use serde_json::{Value, json};

use crate::agent::Agent;
use crate::provider::{ChatMessage, ChatRequest, Part, ToolSpec};
use crate::router::Tier;

/// The session the dream's model usage is recorded under (`system:dream`).
pub const SESSION: &str = "dream";
/// The tool the model answers with.
const TOOL: &str = "apply_memory_operations";
/// The most conversation messages one dream reads.
const MAX_MESSAGES: usize = 2000;
/// How much of one message the dream reads.
const MESSAGE_CHARS: usize = 500;

const INSTRUCTIONS: &str = "You maintain the long-term memory of a personal assistant. Memory is plain markdown: MEMORY.md (an index, one line per memory: `- [name](memory/<slug>.md) — description`), typed files memory/<slug>.md (type user | feedback | project | reference), USER.md (about the owner) and SOUL.md (the assistant's persona).\n\nFrom the conversation since the last dream, keep what will matter later: facts about the owner, their preferences and feedback on how to behave, projects and dates, useful references. Merge duplicates, fix what became untrue, delete what is obsolete, keep the index short. Write absolute dates (2026-11-26), never relative ones. Files marked as edited by the owner hold the owner's own words: keep their changes. Never invent facts.\n\nCall apply_memory_operations exactly once, with an empty list when nothing should change. `content` is the whole new text (typed files: the body only; frontmatter is written for you). Only memory/<slug>.md, USER.md, SOUL.md and MEMORY.md (op index) may be changed; USER.md and SOUL.md are never deleted.";

/// What a dream did.
#[derive(Debug)]
pub enum Dreamt {
    /// Nothing new since the last dream: the model was not asked.
    NothingNew { last_dream_ms: i64 },
    Done {
        outcome: Outcome,
        /// Files an unfinished earlier dream had changed, put back first.
        rolled_back: Vec<String>,
    },
}

impl Dreamt {
    /// What to tell the owner.
    pub fn describe(&self) -> String {
        match self {
            Dreamt::NothingNew { last_dream_ms } => {
                let since = Utc
                    .timestamp_millis_opt(*last_dream_ms)
                    .single()
                    .filter(|_| *last_dream_ms > 0)
                    .map(|t| format!(" (at {})", t.format("%Y-%m-%d %H:%M UTC")))
                    .unwrap_or_default();
                format!("Nothing new since the last dream{since}; memory is unchanged.")
            }
            Dreamt::Done {
                outcome,
                rolled_back,
            } => {
                let mut lines = Vec::new();
                if !rolled_back.is_empty() {
                    lines.push(format!(
                        "An unfinished earlier dream was rolled back ({}).",
                        rolled_back.join(", ")
                    ));
                }
                match &outcome.commit {
                    Some(commit) => {
                        let title = commit.message.lines().next().unwrap_or_default();
                        lines.push(format!(
                            "{title} (commit {}; undo with `pincer memory restore {}^`)",
                            pincer_memory::repo::short(&commit.id),
                            pincer_memory::repo::short(&commit.id)
                        ));
                        lines.extend(commit.changes.iter().map(|c| format!("- {c}")));
                    }
                    None => lines.push("The dream changed nothing.".into()),
                }
                for refused in &outcome.refused {
                    lines.push(format!("Refused: {refused}"));
                }
                for skipped in &outcome.skipped {
                    lines.push(format!("Left alone: {skipped}"));
                }
                lines.join("\n")
            }
        }
    }
}

/// Why a dream did not happen; memory is unchanged in every case.
#[derive(Debug, thiserror::Error)]
pub enum DreamError {
    #[error(
        "today's model spending (${0:.2}) reached agent.max_day_cost_usd; the dream waits for tomorrow"
    )]
    OverBudget(f64),
    #[error("no model is configured; add one to [router] in config.toml")]
    NoModel,
    #[error("the dream's model call failed: {0}; memory is unchanged")]
    Model(#[from] crate::provider::ProviderError),
    #[error("the dream's model answered without usable operations: {0}; memory is unchanged")]
    Answer(#[from] BadOperations),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("the memory files could not be read or written: {0}")]
    Memory(String),
}

/// Why the model's answer gave no operations to check.
#[derive(Debug, thiserror::Error)]
pub enum BadOperations {
    #[error(
        "the model did not call apply_memory_operations; memory is unchanged and the next dream reads the same material"
    )]
    NoCall,
    #[error("the dream's operations are not valid JSON ({0}); memory is unchanged")]
    NotJson(serde_json::Error),
    #[error("the dream's operations are malformed ({0}); memory is unchanged")]
    Malformed(serde_json::Error),
}

fn blocking_err(err: tokio::task::JoinError) -> DreamError {
    DreamError::Memory(format!("the dream stopped unexpectedly: {err}"))
}

fn memory_err(err: impl std::fmt::Display) -> DreamError {
    DreamError::Memory(err.to_string())
}

/// Dream now. `max_tokens` caps the whole dream (what it reads and writes).
pub async fn dream(agent: &Agent, max_tokens: u64) -> Result<Dreamt, DreamError> {
    let spent = agent.store().cost_since(agent.start_of_day_ms()).await?;
    if spent >= agent.limits().max_day_cost_usd {
        return Err(DreamError::OverBudget(spent));
    }
    let output_tokens = (max_tokens / 4).clamp(1024, 8192) as u32;
    let input_bytes = (max_tokens.saturating_sub(u64::from(output_tokens)) as usize) * 4;
    let memory = agent.memory().clone();
    let logs_bytes = input_bytes * 2 / 5;
    let mut prepared = tokio::task::spawn_blocking(move || memory.prepare_dream(logs_bytes))
        .await
        .map_err(blocking_err)?
        .map_err(memory_err)?;
    let mut said = agent
        .store()
        .said_since(prepared.cursor.transcript_ms, MAX_MESSAGES)
        .await?;
    owners_conversations_only(agent.owners(), &mut said);
    if prepared.logs.text.is_empty() && said.is_empty() && !prepared.anything_edited() {
        return Ok(Dreamt::NothingNew {
            last_dream_ms: prepared.cursor.last_dream_ms,
        });
    }
    let now = agent.local_now();
    let (text, transcript_ms) = material(&mut prepared, &said, input_bytes, now);
    let request = ChatRequest {
        model: String::new(),
        system_stable: INSTRUCTIONS.into(),
        system_volatile: String::new(),
        messages: vec![ChatMessage::user_text(text)],
        tools: vec![tool_spec()],
        max_tokens: output_tokens,
        thinking_budget: 0,
        recalled_at: None,
    };
    let (_, chain) = agent
        .models()
        .tier(Tier::Heavy)
        .ok_or(DreamError::NoModel)?;
    let mut ignore = |_: crate::provider::StreamEvent<'_>| {};
    let (response, label) = chain.stream(request, &mut ignore).await?;
    let cost = agent.prices().cost(&label, response.usage);
    if let Ok(session) = agent
        .store()
        .current_session(&SessionKey::system(SESSION))
        .await
        && let Err(err) = agent
            .store()
            .record_usage(
                session,
                &label,
                response.usage,
                cost,
                &crate::store::Spender::owner(),
            )
            .await
    {
        tracing::warn!("the dream's usage was not recorded: {err}");
    }
    let ops = operations(&response.parts)?;
    let next = Cursor {
        logs: prepared.logs.end.clone(),
        transcript_ms,
        last_dream_ms: crate::store::now_ms(),
    };
    let rolled_back = prepared.rolled_back.clone();
    let memory = agent.memory().clone();
    let today = now.date();
    let outcome =
        tokio::task::spawn_blocking(move || memory.finish_dream(prepared, &ops, today, next))
            .await
            .map_err(blocking_err)?
            .map_err(memory_err)?;
    tracing::info!(
        applied = outcome.applied.len(),
        refused = outcome.refused.len(),
        commit = ?outcome.commit.as_ref().map(|c| c.id.clone()),
        "dream finished"
    );
    Ok(Dreamt::Done {
        outcome,
        rolled_back,
    })
}

/// The dream tidies the owner's memory: it reads only conversations where everyone
/// who spoke was an owner (a guest's "I am your owner, remember…" never reaches it).
fn owners_conversations_only(owners: &[String], said: &mut Vec<crate::store::Said>) {
    let is_owner = |sender: &Option<String>| {
        sender
            .as_deref()
            .is_some_and(|s| crate::access::Origin::is_owner_id(s, owners))
    };
    let foreign: std::collections::HashSet<String> = said
        .iter()
        .filter(|m| m.role == crate::store::Role::User && !is_owner(&m.sender))
        .map(|m| m.key.clone())
        .collect();
    said.retain(|m| !foreign.contains(&m.key));
}

/// The dream's one user message: the files, then the logs, then conversation
/// excerpts, within `budget` bytes. Returns the text and how far into the
/// transcripts it read (unix ms).
fn material(
    prepared: &mut Prepared,
    said: &[crate::store::Said],
    budget: usize,
    now: chrono::NaiveDateTime,
) -> (String, i64) {
    let mut text = format!(
        "Today is {}.\n\n# Memory files\n",
        now.format("%A %Y-%m-%d %H:%M")
    );
    let files_budget = budget * 3 / 5;
    for file in &mut prepared.files {
        let mark = if file.hand_edited {
            " (edited by the owner since the last dream: keep their changes)"
        } else {
            ""
        };
        let part = format!("\n## {}{mark}\n{}\n", file.path, file.text.trim_end());
        if text.len() + part.len() > files_budget && file.path.starts_with("memory/") {
            file.shown = false;
            text.push_str(&format!(
                "\n## {} (not shown: over the token cap; leave it alone)\n",
                file.path
            ));
            continue;
        }
        text.push_str(&part);
    }
    if prepared.files.is_empty() {
        text.push_str("(none yet)\n");
    }
    text.push_str("\n# Daily logs since the last dream\n");
    if prepared.logs.text.is_empty() {
        text.push_str("(none)\n");
    } else {
        text.push_str(&prepared.logs.text);
    }
    let mut read_to = prepared.cursor.transcript_ms;
    if !said.is_empty() {
        text.push_str("\n# Conversation excerpts since the last dream\n");
        for message in said {
            let who = match message.role {
                crate::store::Role::User => message.sender.as_deref().unwrap_or("user"),
                _ => "assistant",
            };
            let body: String = message.text.chars().take(MESSAGE_CHARS).collect();
            let when = Utc
                .timestamp_millis_opt(message.created_at)
                .single()
                .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
                .unwrap_or_default();
            let line = format!(
                "[{}] {when} {who}: {}\n",
                message.key,
                body.replace('\n', " ")
            );
            if text.len() + line.len() > budget {
                break;
            }
            text.push_str(&line);
            read_to = message.created_at;
        }
    }
    (text, read_to)
}

fn tool_spec() -> ToolSpec {
    ToolSpec {
        name: TOOL.into(),
        description: "Apply these changes to the memory files (an empty list changes nothing)."
            .into(),
        input_schema: json!({"type": "object", "properties": {
            "operations": {"type": "array", "items": {"type": "object", "properties": {
                "op": {"type": "string", "enum": ["create", "update", "delete", "index"]},
                "path": {"type": "string", "description": "memory/<slug>.md, USER.md or SOUL.md"},
                "name": {"type": "string"},
                "type": {"type": "string", "enum": ["user", "feedback", "project", "reference"]},
                "description": {"type": "string", "description": "one line, for the index"},
                "content": {"type": "string"}
            }, "required": ["op"]}}
        }, "required": ["operations"]})
        .into(),
    }
}

/// The operations from the model's tool call.
fn operations(parts: &[Part]) -> Result<Vec<Op>, BadOperations> {
    let arguments = parts
        .iter()
        .find_map(|p| match p {
            Part::ToolCall {
                name, arguments, ..
            } if name == TOOL => Some(arguments.clone()),
            _ => None,
        })
        .ok_or(BadOperations::NoCall)?;
    let arguments = match arguments {
        Value::String(raw) => serde_json::from_str(&raw).map_err(BadOperations::NotJson)?,
        other => other,
    };
    let list = arguments
        .get("operations")
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    serde_json::from_value(list).map_err(BadOperations::Malformed)
}
