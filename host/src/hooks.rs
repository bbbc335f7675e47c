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

use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::stream_json::Hooks;
use pincer_core::tools::host_hooks::HostHook;

/// A hook call from the core, waiting for the host's callbacks.
pub(crate) struct HookCall {
    pub(crate) event: HostHook,
    pub(crate) input: Value,
    pub(crate) answer: oneshot::Sender<Vec<Value>>,
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
pub(crate) fn cli_name(tool: &str) -> Option<&'static str> {
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
pub(crate) struct Registered {
    by_event: HashMap<HostHook, Vec<Matcher>>,
}

/// A hook the host registered that Pincer cannot honour: the host hears why rather
/// than have its hook silently never run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HookError {
    #[error(
        "pincer agent calls PreToolUse, PostToolUse, UserPromptSubmit and Stop hooks; it never calls {0}, so that hook would not run"
    )]
    NeverCalled(String),
    #[error("the {event} matcher {pattern:?} is not a pattern: {source}")]
    BadMatcher {
        event: String,
        pattern: String,
        source: regex::Error,
    },
}

impl Registered {
    /// What `initialize.hooks` registers; `Err` names what Pincer cannot honour (an
    /// event it never calls, a matcher that is not a pattern), for the host to hear
    /// rather than have its hook silently never run.
    pub(crate) fn from_initialize(hooks: Hooks) -> Result<Registered, HookError> {
        let mut registered = Registered::default();
        for (name, matchers) in hooks.0 {
            let Some(event) = HostHook::parse(&name) else {
                return Err(HookError::NeverCalled(name));
            };
            for matcher in matchers {
                let tools = match matcher.matcher.as_deref().map(str::trim) {
                    None | Some("" | "*") => None,
                    Some(pattern) => Some(regex::Regex::new(&format!("^(?:{pattern})$")).map_err(
                        |source| HookError::BadMatcher {
                            event: name.clone(),
                            pattern: pattern.to_string(),
                            source,
                        },
                    )?),
                };
                registered.by_event.entry(event).or_default().push(Matcher {
                    tools,
                    ids: matcher.hook_callback_ids,
                    block_on_failure: matcher.on_failure.is_some_and(|f| f != "continue"),
                });
            }
        }
        Ok(registered)
    }

    /// The callbacks to call for `event` on `tool`, each with whether its failure blocks.
    pub(crate) fn matching(&self, event: HostHook, tool: Option<&str>) -> Vec<(String, bool)> {
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
pub(crate) struct Gathering {
    pub(crate) answer: oneshot::Sender<Vec<Value>>,
    pub(crate) waiting: usize,
    pub(crate) answers: Vec<Value>,
}

/// What a failed callback counts as.
pub(crate) fn failed(block: bool, event: HostHook, error: &str) -> Option<Value> {
    let denial = block.then(|| Denial {
        decision: "block",
        reason: format!("the host's {} hook failed: {error}", event.name()),
        hook_specific_output: Verdict {
            hook_event_name: event.name(),
            permission_decision: "deny",
            permission_decision_reason: format!("the host's hook failed: {error}"),
        },
    })?;
    // A struct of strings always becomes JSON.
    serde_json::to_value(denial).ok()
}

/// A hook's output that blocks, in the form the SDKs' hooks answer (the core reads it
/// as it reads theirs: `pincer_core::tools::host_hooks`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Denial {
    decision: &'static str,
    reason: String,
    hook_specific_output: Verdict,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Verdict {
    hook_event_name: &'static str,
    permission_decision: &'static str,
    permission_decision_reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    fn read_hooks(value: Value) -> Hooks {
        serde_json::from_value(value).expect("hooks")
    }

    #[test]
    fn matchers_take_pincers_names_the_clis_names_and_patterns() {
        let hooks = read_hooks(json!({"PreToolUse": [
            {"matcher": "Bash", "hookCallbackIds": ["h0"]},
            {"matcher": "write_file|Edit", "hookCallbackIds": ["h1"], "onFailure": "block"},
            {"matcher": "mcp__.*", "hookCallbackIds": ["h2"]},
            {"hookCallbackIds": ["h3"]},
        ]}));
        let registered = Registered::from_initialize(hooks).unwrap();
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
        let unknown = Registered::from_initialize(read_hooks(json!({"SessionStart": []})));
        assert!(
            unknown
                .err()
                .unwrap()
                .to_string()
                .contains("never calls SessionStart")
        );
    }
}
