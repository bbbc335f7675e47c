//! The hooks an SDK registers in `initialize` (`hooks: {"PreToolUse": [{"matcher":
//! "Bash", "hookCallbackIds": ["hook_0"], "timeout": 60, "onFailure": "block"}]}`), and
//! the `hook_callback` requests that call them: the core asks through `HostApprover`
//! (`Approver::hook`), the front-end sends one request per matching callback and hands
//! back their answers (`pincer_core::tools::host_hooks` says what they mean).
//!
//! A matcher is a tool name, names joined by `|`, or a regular expression, matched
//! against Pincer's name for the tool and the Claude Code CLI's (`exec` is `Bash`);
//! none, `""` or `*` matches every tool. A callback that fails (the SDK answers
//! `error`) counts as no answer, or as a deny where its matcher says `onFailure:
//! "block"`.

use std::collections::HashMap;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use pincer_core::tools::host_hooks::HostHook;

/// A hook call from the core, waiting for the host's callbacks.
pub struct HookCall {
    pub event: HostHook,
    pub input: Value,
    pub answer: oneshot::Sender<Vec<Value>>,
}

/// Pincer's tools by the Claude Code CLI's names, for matchers written for the CLI.
const CLI_NAMES: &[(&str, &str)] = &[
    ("exec", "Bash"),
    ("read_file", "Read"),
    ("write_file", "Write"),
    ("edit_file", "Edit"),
    ("glob", "Glob"),
    ("grep", "Grep"),
    ("list_dir", "LS"),
    ("web_fetch", "WebFetch"),
    ("web_search", "WebSearch"),
    ("todo", "TodoWrite"),
    ("task", "Task"),
    ("exit_plan_mode", "ExitPlanMode"),
    ("enter_plan_mode", "EnterPlanMode"),
    ("question", "AskUserQuestion"),
];

/// The CLI's name for a Pincer tool, where it has one.
pub fn cli_name(tool: &str) -> Option<&'static str> {
    CLI_NAMES
        .iter()
        .find(|(ours, _)| *ours == tool)
        .map(|(_, theirs)| *theirs)
}

struct Matcher {
    /// `None`: every tool (and the events without tools).
    tools: Option<regex::Regex>,
    ids: Vec<String>,
    block_on_failure: bool,
}

impl Matcher {
    fn matches(&self, tool: Option<&str>) -> bool {
        match (&self.tools, tool) {
            (None, _) | (Some(_), None) => true,
            (Some(pattern), Some(tool)) => {
                pattern.is_match(tool) || cli_name(tool).is_some_and(|cli| pattern.is_match(cli))
            }
        }
    }
}

/// The callbacks an SDK registered, by event.
#[derive(Default)]
pub struct Registered {
    by_event: HashMap<HostHook, Vec<Matcher>>,
}

impl Registered {
    /// What `initialize.hooks` registers; `Err` names what Pincer cannot honour (an
    /// event it never calls, a matcher that is not a pattern), for the host to hear
    /// rather than have its hook silently never run.
    pub fn from_initialize(hooks: &Value) -> Result<Registered, String> {
        let mut registered = Registered::default();
        let Some(events) = hooks.as_object() else {
            return Ok(registered);
        };
        for (name, matchers) in events {
            let Some(event) = HostHook::parse(name) else {
                return Err(format!(
                    "pincer agent calls PreToolUse, PostToolUse, UserPromptSubmit and Stop hooks; it never calls {name}, so that hook would not run"
                ));
            };
            for matcher in matchers.as_array().into_iter().flatten() {
                let tools = match matcher["matcher"].as_str().map(str::trim) {
                    None | Some("" | "*") => None,
                    Some(pattern) => Some(regex::Regex::new(&format!("^(?:{pattern})$")).map_err(
                        |err| format!("the {name} matcher {pattern:?} is not a pattern: {err}"),
                    )?),
                };
                let ids = matcher["hookCallbackIds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
                registered.by_event.entry(event).or_default().push(Matcher {
                    tools,
                    ids,
                    block_on_failure: matcher["onFailure"]
                        .as_str()
                        .is_some_and(|f| f != "continue"),
                });
            }
        }
        Ok(registered)
    }

    /// The callbacks to call for `event` on `tool`, each with whether its failure blocks.
    pub fn matching(&self, event: HostHook, tool: Option<&str>) -> Vec<(String, bool)> {
        self.by_event
            .get(&event)
            .into_iter()
            .flatten()
            .filter(|m| m.matches(tool))
            .flat_map(|m| m.ids.iter().map(|id| (id.clone(), m.block_on_failure)))
            .collect()
    }
}

/// One hook call in flight: the answers its callbacks gave so far.
pub struct Gathering {
    pub answer: oneshot::Sender<Vec<Value>>,
    pub waiting: usize,
    pub answers: Vec<Value>,
}

/// What a failed callback counts as.
pub fn failed(block: bool, event: HostHook, error: &str) -> Option<Value> {
    block.then(|| {
        json!({
            "decision": "block",
            "reason": format!("the host's {} hook failed: {error}", event.name()),
            "hookSpecificOutput": {"hookEventName": event.name(), "permissionDecision": "deny",
                "permissionDecisionReason": format!("the host's hook failed: {error}")},
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_take_pincers_names_the_clis_names_and_patterns() {
        let hooks = json!({"PreToolUse": [
            {"matcher": "Bash", "hookCallbackIds": ["h0"]},
            {"matcher": "write_file|Edit", "hookCallbackIds": ["h1"], "onFailure": "block"},
            {"matcher": "mcp__.*", "hookCallbackIds": ["h2"]},
            {"hookCallbackIds": ["h3"]},
        ]});
        let registered = Registered::from_initialize(&hooks).unwrap();
        let ids = |tool| -> Vec<String> {
            registered
                .matching(HostHook::PreToolUse, Some(tool))
                .into_iter()
                .map(|(id, _)| id)
                .collect()
        };
        assert_eq!(ids("exec"), ["h0", "h3"]);
        assert_eq!(ids("edit_file"), ["h1", "h3"]);
        assert_eq!(ids("mcp__files__read"), ["h2", "h3"]);
        assert_eq!(ids("read_file"), ["h3"]);
        assert!(registered.matching(HostHook::Stop, None).is_empty());
        let unknown = Registered::from_initialize(&json!({"SessionStart": []}));
        assert!(unknown.err().unwrap().contains("never calls SessionStart"));
    }
}
