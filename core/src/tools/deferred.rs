//! Deferred tools: a gateway with hundreds of MCP tools would send every schema in
//! every request. Only the first `OFFERED` (by name) are offered whole; the rest are
//! found with `tool_search {query}`, which names the best matches and loads them into
//! the conversation, so the model can call them from its next step on. A model with a
//! small context window is offered only a few built-ins whole
//! (`agent.small_window_tools`); `tool_search` finds the other built-ins for it too.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Effects, ToolContext, ToolError, TypedTool};
use crate::mcp::McpManager;
use crate::provider::ToolSpec;

/// MCP tools offered with their whole schema in every request.
pub const OFFERED: usize = 20;
/// Matches a search returns (and loads).
const MATCHES: usize = 5;
pub const TOOL_SEARCH: &str = "tool_search";

/// The deferred tools each conversation has loaded, by session.
#[derive(Debug, Default)]
pub struct Loaded(Mutex<HashMap<i64, HashSet<String>>>);

impl Loaded {
    pub fn get(&self, session: i64) -> HashSet<String> {
        self.lock().get(&session).cloned().unwrap_or_default()
    }

    fn add(&self, session: i64, names: impl IntoIterator<Item = String>) {
        self.lock().entry(session).or_default().extend(names);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, HashSet<String>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Split MCP tool specs (sorted by name) into the offered and the deferred.
pub fn split(mut specs: Vec<ToolSpec>) -> (Vec<ToolSpec>, Vec<ToolSpec>) {
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    let deferred = if specs.len() > OFFERED {
        specs.split_off(OFFERED)
    } else {
        Vec::new()
    };
    (specs, deferred)
}

pub struct ToolSearch {
    pub mcp: Arc<McpManager>,
    pub loaded: Arc<Loaded>,
    /// The built-in tools and what they do, set once the registry is built.
    pub builtins: Arc<std::sync::OnceLock<Vec<(ToolSpec, Effects)>>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSearchArgs {
    /// words describing the tool
    query: String,
}

#[async_trait]
impl TypedTool for ToolSearch {
    type Args = ToolSearchArgs;
    const NAME: &'static str = TOOL_SEARCH;
    const EFFECTS: Effects = Effects::PLAN.union(Effects::SUBAGENT);

    fn description(&self) -> String {
        format!(
            "Find more tools: not all are listed (MCP tools past the first {OFFERED}; with a small context window, most built-ins). Search by what you need; the best matches are loaded and can be called from your next step."
        )
    }

    async fn run(&self, args: ToolSearchArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let query = args.query.to_lowercase();
        let words: Vec<&str> = query
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| !w.is_empty())
            .collect();
        if words.is_empty() {
            return Err(ToolError::new(
                "say what the tool should do, in a few words",
            ));
        }
        let specs = self
            .mcp
            .tools()
            .iter()
            .filter(|t| ctx.caller.may_use(&t.spec().name, t.effects()))
            .map(|t| t.spec())
            .collect();
        let (offered, mut deferred) = split(specs);
        // The offered MCP tools and the built-ins may be left out of a small prompt.
        deferred.extend(offered);
        deferred.extend(
            self.builtins
                .get()
                .into_iter()
                .flatten()
                .filter(|(spec, effects)| {
                    spec.name != TOOL_SEARCH && ctx.caller.may_use(&spec.name, *effects)
                })
                .map(|(spec, _)| spec.clone()),
        );
        let mut scored: Vec<(usize, &ToolSpec)> = deferred
            .iter()
            .map(|spec| {
                let haystack = format!("{} {}", spec.name, spec.description).to_lowercase();
                (
                    words.iter().filter(|w| haystack.contains(**w)).count(),
                    spec,
                )
            })
            .filter(|(score, _)| *score > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
        let found: Vec<&ToolSpec> = scored.into_iter().take(MATCHES).map(|(_, s)| s).collect();
        if found.is_empty() {
            return Ok(format!(
                "no tool matches \"{query}\" among the {} not listed",
                deferred.len()
            ));
        }
        if let Some(session) = ctx.session {
            self.loaded
                .add(session, found.iter().map(|s| s.name.clone()));
        }
        let lines: Vec<String> = found
            .iter()
            .map(|s| format!("- {}: {}", s.name, s.description))
            .collect();
        Ok(format!(
            "Loaded, callable from your next step:\n{}",
            lines.join("\n")
        ))
    }
}
