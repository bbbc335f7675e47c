//! Deferred tools: every schema in every request would make even "hi" cost thousands of
//! tokens. The built-ins a turn rarely needs (all but `agent.always_tools`) are named
//! in `tool_search`'s description with a line each, and only the first `OFFERED` MCP
//! tools (by name) are offered whole; `tool_search {query}` names the best matches and
//! loads them into the conversation, so the model can call them from its next step
//! on. A model with a small context window is offered fewer built-ins whole
//! (`agent.small_window_tools`) and no MCP tool until it is loaded.

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

/// Tools never deferred: each is offered by rules of its own (`tool_search` when
/// something is deferred, `skill` when there are skills, the plan-mode pair by mode).
const NEVER_DEFERRED: [&str; 4] = [TOOL_SEARCH, "skill", "enter_plan_mode", "exit_plan_mode"];

/// What a request offers: the built-ins in `keep` (all when `None`), the ones
/// `NEVER_DEFERRED`, the MCP tools offered `whole`, and whatever the conversation
/// `loaded`; `tool_search` only when something is left out, its description then
/// naming each built-in left out with a line of what it does (by name alone when
/// `brief`).
pub(super) fn offer(
    builtins: Vec<&ToolSpec>,
    whole: Vec<ToolSpec>,
    deferred: Vec<ToolSpec>,
    keep: Option<&[String]>,
    loaded: &HashSet<String>,
    brief: bool,
) -> Vec<ToolSpec> {
    let offered = |name: &String| {
        keep.is_none_or(|keep| keep.contains(name))
            || NEVER_DEFERRED.contains(&name.as_str())
            || loaded.contains(name)
    };
    let (mut specs, listed): (Vec<&ToolSpec>, Vec<&ToolSpec>) =
        builtins.into_iter().partition(|spec| offered(&spec.name));
    let unloaded = deferred
        .iter()
        .filter(|s| !loaded.contains(&s.name))
        .count();
    let mut specs: Vec<ToolSpec> = match listed.is_empty() && unloaded == 0 {
        true => {
            specs.retain(|spec| spec.name != TOOL_SEARCH);
            specs.into_iter().cloned().collect()
        }
        false => specs
            .into_iter()
            .map(|spec| match spec.name == TOOL_SEARCH {
                true => with_list(spec, &listed, unloaded, brief),
                false => spec.clone(),
            })
            .collect(),
    };
    specs.extend(whole);
    specs.extend(
        deferred
            .into_iter()
            .filter(|spec| loaded.contains(&spec.name)),
    );
    specs
}

/// `tool_search`'s spec, its description naming the built-ins left out (`brief`: by
/// name alone, for a model with a small window).
fn with_list(spec: &ToolSpec, listed: &[&ToolSpec], mcp: usize, brief: bool) -> ToolSpec {
    let mut spec = spec.clone();
    if !listed.is_empty() {
        let lines: Vec<String> = listed
            .iter()
            .map(|s| match brief {
                true => s.name.clone(),
                false => format!("{}: {}", s.name, one_line(&s.description)),
            })
            .collect();
        spec.description
            .push_str(&format!(" Not listed, load by name: {}.", lines.join("; ")));
    }
    if mcp > 0 {
        spec.description
            .push_str(&format!(" Also {mcp} MCP tools, found by what they do."));
    }
    spec
}

/// A description's first sentence, at most about 60 characters (cut at a word).
fn one_line(description: &str) -> String {
    let first = description
        .split_inclusive(". ")
        .next()
        .unwrap_or(description)
        .trim_end()
        .trim_end_matches('.');
    if first.chars().count() <= 60 {
        return first.to_string();
    }
    let cut: String = first.chars().take(60).collect();
    match cut.rfind(' ') {
        Some(at) => format!("{}…", &cut[..at]),
        None => format!("{cut}…"),
    }
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
    // Whoever has a tool left out of the request needs it to load the tool.
    const EFFECTS: Effects = Effects::PLAN
        .union(Effects::SUBAGENT)
        .union(Effects::ANY_TIER);

    fn description(&self) -> String {
        "Load tools that are not listed: give a name, or words for what you need. The best matches are loaded and can be called from your next step.".into()
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
                // A tool asked for by its name comes first.
                let named = words.iter().any(|w| *w == spec.name) as usize * 100;
                (
                    named + words.iter().filter(|w| haystack.contains(**w)).count(),
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
