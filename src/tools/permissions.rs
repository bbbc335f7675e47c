//! The permission watchdog consulted before every call. Rules come from
//! `[tools.permissions]`: lists of `tool` or `tool(pattern)`, where the pattern is a
//! glob over the call's main argument (exec: the command; file tools: the path;
//! web_fetch: the URL; others: the arguments as JSON). Deny beats ask beats allow; a
//! call no rule names is allowed (the tools themselves are confined).

use globset::{Glob, GlobMatcher};
use serde_json::Value;

/// What the watchdog says about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refused; the reason goes back to the model.
    Deny(String),
    /// The owner must say yes first.
    Ask,
}

#[derive(Debug, Clone)]
struct Rule {
    text: String,
    tool: String,
    pattern: Option<GlobMatcher>,
}

#[derive(Debug, Clone, Default)]
pub struct Permissions {
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
}

impl Permissions {
    /// Parse the three lists; a malformed rule is an error naming it.
    pub fn new(allow: &[String], ask: &[String], deny: &[String]) -> Result<Self, String> {
        let parse = |list: &[String], which: &str| -> Result<Vec<Rule>, String> {
            list.iter()
                .map(|text| {
                    rule(text).map_err(|e| format!("tools.permissions.{which}: `{text}` {e}"))
                })
                .collect()
        };
        Ok(Self {
            allow: parse(allow, "allow")?,
            ask: parse(ask, "ask")?,
            deny: parse(deny, "deny")?,
        })
    }

    pub fn decide(&self, tool: &str, args: &Value) -> Decision {
        let subject = subject(tool, args);
        let hit = |rules: &[Rule]| {
            rules
                .iter()
                .find(|r| r.matches(tool, &subject))
                .map(|r| r.text.clone())
        };
        if let Some(rule) = hit(&self.deny) {
            return Decision::Deny(format!(
                "refused by the owner's rule `{rule}` in [tools.permissions] deny"
            ));
        }
        if hit(&self.ask).is_some() {
            return Decision::Ask;
        }
        Decision::Allow
    }

    /// Whether an explicit allow rule covers the call (for "always" answers).
    pub fn allows(&self, tool: &str, args: &Value) -> bool {
        let subject = subject(tool, args);
        self.allow.iter().any(|r| r.matches(tool, &subject))
    }
}

impl Rule {
    fn matches(&self, tool: &str, subject: &str) -> bool {
        (self.tool == "*" || self.tool == tool)
            && self.pattern.as_ref().is_none_or(|p| p.is_match(subject))
    }
}

fn rule(text: &str) -> Result<Rule, String> {
    let text = text.trim();
    let (tool, pattern) = match text.split_once('(') {
        Some((tool, rest)) => {
            let pattern = rest.strip_suffix(')').ok_or("is missing its closing `)`")?;
            (tool.trim(), Some(pattern))
        }
        None => (text, None),
    };
    if tool.is_empty() {
        return Err("names no tool; write e.g. exec or exec(git *)".into());
    }
    let pattern = match pattern {
        Some(p) => Some(
            Glob::new(p)
                .map_err(|e| format!("has a bad pattern: {e}"))?
                .compile_matcher(),
        ),
        None => None,
    };
    Ok(Rule {
        text: text.to_string(),
        tool: tool.to_string(),
        pattern,
    })
}

/// The argument a rule's pattern is matched against.
pub fn subject(tool: &str, args: &Value) -> String {
    let key = match tool {
        "exec" => "command",
        "web_fetch" => "url",
        "read_file" | "write_file" | "edit_file" | "list_dir" | "glob" | "grep" => "path",
        _ => "",
    };
    match args.get(key).and_then(Value::as_str) {
        Some(text) => text.to_string(),
        None => args.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deny_beats_ask_beats_allow() {
        let p = Permissions::new(
            &["exec(git *)".into()],
            &["exec".into(), "write_file(notes/*)".into()],
            &["exec(git push*)".into()],
        )
        .unwrap();
        assert_eq!(
            p.decide("exec", &json!({"command": "git status"})),
            Decision::Ask,
            "ask beats allow"
        );
        assert!(
            matches!(p.decide("exec", &json!({"command": "git push origin"})), Decision::Deny(r) if r.contains("git push"))
        );
        assert_eq!(
            p.decide("write_file", &json!({"path": "notes/a.md"})),
            Decision::Ask
        );
        assert_eq!(
            p.decide("write_file", &json!({"path": "a.md"})),
            Decision::Allow
        );
        assert_eq!(
            p.decide("read_file", &json!({"path": "a.md"})),
            Decision::Allow
        );
    }

    #[test]
    fn bad_rules_are_reported_with_their_list() {
        let err = Permissions::new(&["exec(git *".into()], &[], &[]).unwrap_err();
        assert!(
            err.contains("tools.permissions.allow") && err.contains("closing"),
            "{err}"
        );
    }
}
