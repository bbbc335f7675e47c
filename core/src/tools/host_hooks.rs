//! A host's own hooks: the program driving a conversation (the Claude Agent SDKs over
//! `pincer agent`) registers callbacks for `PreToolUse`, `PostToolUse`,
//! `UserPromptSubmit` and `Stop`; the core calls them through the conversation's
//! approver (`Approver::hook`) at those points and honours what they answer, in the
//! Claude Code CLI's hook output format. The host finds the callbacks that match and
//! hands back each one's answer (`pincer_host`'s `hooks`); this file is what the answers mean.
//!
//! Several answers to one event: a deny beats an ask, an ask beats an allow; every
//! `additionalContext` is kept, in order.

use serde_json::{Value, json};

/// The points a host's hooks are called at (the SDKs' names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostHook {
    PreToolUse,
    PostToolUse,
    UserPromptSubmit,
    Stop,
}

impl HostHook {
    pub fn name(self) -> &'static str {
        match self {
            HostHook::PreToolUse => "PreToolUse",
            HostHook::PostToolUse => "PostToolUse",
            HostHook::UserPromptSubmit => "UserPromptSubmit",
            HostHook::Stop => "Stop",
        }
    }

    pub fn parse(name: &str) -> Option<HostHook> {
        [
            HostHook::PreToolUse,
            HostHook::PostToolUse,
            HostHook::UserPromptSubmit,
            HostHook::Stop,
        ]
        .into_iter()
        .find(|hook| hook.name() == name)
    }
}

/// What the `PreToolUse` answers decide about a call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Pre {
    /// No opinion: the permission rules and the mode decide.
    #[default]
    Default,
    /// Run it without asking (the deny rules, tiers and sandbox still hold).
    Allow,
    /// Ask the host, whatever the rules and the mode say.
    Ask,
    /// Refuse it; the reason goes to the model.
    Deny(String),
}

/// The `PreToolUse` answers: the decision, and the input a hook put in the call's place.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PreAnswer {
    pub decision: Pre,
    pub input: Option<Value>,
}

fn specific<'a>(answer: &'a Value, field: &str) -> &'a Value {
    &answer["hookSpecificOutput"][field]
}

/// The reason an answer gives, or `fallback`.
fn reason(answer: &Value, fields: &[&str], fallback: &str) -> String {
    fields
        .iter()
        .find_map(|field| {
            specific(answer, field)
                .as_str()
                .or_else(|| answer[*field].as_str())
                .filter(|r| !r.trim().is_empty())
        })
        .unwrap_or(fallback)
        .to_string()
}

/// `continue: false`: the host wants the turn to stop; its `stopReason`.
fn stops(answer: &Value) -> Option<String> {
    (answer["continue"] == false).then(|| reason(answer, &["stopReason"], "no reason given"))
}

pub fn pre(answers: &[Value], tool: &str) -> PreAnswer {
    let mut out = PreAnswer::default();
    for answer in answers {
        if let Some(why) = stops(answer) {
            out.decision = Pre::Deny(format!(
                "the host's PreToolUse hook stopped this {tool} call: {why}"
            ));
            continue;
        }
        let decision = specific(answer, "permissionDecision")
            .as_str()
            .or(match answer["decision"].as_str() {
                Some("approve") => Some("allow"),
                Some("block") => Some("deny"),
                _ => None,
            });
        let said = match decision {
            Some("deny") => Pre::Deny(format!(
                "the host's PreToolUse hook refused this {tool} call: {}",
                reason(
                    answer,
                    &["permissionDecisionReason", "reason"],
                    "no reason given"
                )
            )),
            Some("ask") => Pre::Ask,
            Some("allow") => Pre::Allow,
            _ => Pre::Default,
        };
        out.decision = match (&out.decision, said) {
            (Pre::Deny(_), _) => out.decision,
            (_, deny @ Pre::Deny(_)) => deny,
            (Pre::Ask, _) | (_, Pre::Ask) => Pre::Ask,
            (Pre::Allow, _) | (_, Pre::Allow) => Pre::Allow,
            _ => Pre::Default,
        };
        if let Some(input) = specific(answer, "updatedInput").as_object() {
            out.input = Some(Value::Object(input.clone()));
        }
    }
    out
}

/// Every `additionalContext` the answers carry, and the reasons of those that `block`
/// (`PostToolUse`: the reason is for the model), as one note; `None` when none does.
pub fn context(answers: &[Value], event: HostHook) -> Option<String> {
    let notes: Vec<String> = answers
        .iter()
        .flat_map(|answer| {
            let context = specific(answer, "additionalContext")
                .as_str()
                .map(str::to_string);
            let blocked = (answer["decision"] == "block" && event == HostHook::PostToolUse)
                .then(|| reason(answer, &["reason"], "no reason given"));
            [context, blocked]
        })
        .flatten()
        .filter(|note| !note.trim().is_empty())
        .collect();
    (!notes.is_empty()).then(|| notes.join("\n"))
}

/// `UserPromptSubmit` / `Stop`: the first answer that blocks (`decision: "block"`, or
/// `continue: false`), and its reason.
pub fn blocked(answers: &[Value]) -> Option<String> {
    answers.iter().find_map(|answer| {
        stops(answer).or_else(|| {
            (answer["decision"] == "block").then(|| reason(answer, &["reason"], "no reason given"))
        })
    })
}

/// The input of a tool event, as the CLI sends it (the host adds the session's fields).
pub fn tool_input(event: HostHook, tool: &str, args: &Value, call_id: &str) -> Value {
    json!({
        "hook_event_name": event.name(),
        "tool_name": tool,
        "tool_input": args,
        "tool_use_id": call_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deny_beats_an_allow_and_an_ask_beats_an_allow() {
        let allow = json!({"hookSpecificOutput": {"permissionDecision": "allow"}});
        let ask = json!({"hookSpecificOutput": {"permissionDecision": "ask"}});
        let deny = json!({"hookSpecificOutput": {"permissionDecision": "deny",
                          "permissionDecisionReason": "not today"}});
        assert_eq!(
            pre(std::slice::from_ref(&allow), "exec").decision,
            Pre::Allow
        );
        assert_eq!(
            pre(&[allow.clone(), ask.clone()], "exec").decision,
            Pre::Ask
        );
        match pre(&[deny, allow, ask], "exec").decision {
            Pre::Deny(why) => assert!(why.contains("not today"), "{why}"),
            other => panic!("{other:?}"),
        }
        // The older top-level form.
        let block = json!({"decision": "block", "reason": "old style"});
        assert!(
            matches!(pre(&[block], "exec").decision, Pre::Deny(why) if why.contains("old style"))
        );
        assert_eq!(pre(&[json!({})], "exec"), PreAnswer::default());
    }

    #[test]
    fn contexts_are_kept_and_a_block_says_why() {
        let answers = [
            json!({"hookSpecificOutput": {"additionalContext": "one"}}),
            json!({"decision": "block", "reason": "two"}),
        ];
        assert_eq!(
            context(&answers, HostHook::PostToolUse).as_deref(),
            Some("one\ntwo")
        );
        assert_eq!(blocked(&answers).as_deref(), Some("two"));
        assert_eq!(
            blocked(&[json!({"continue": false, "stopReason": "enough"})]).as_deref(),
            Some("enough")
        );
        assert_eq!(blocked(&[json!({})]), None);
    }
}
