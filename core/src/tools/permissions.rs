//! The permission watchdog consulted before every call. Rules come from
//! `[tools.permissions]`: lists of `tool` or `tool(pattern)`, where the pattern is a
//! glob over the call's main argument (exec: the command; file tools: the path;
//! web_fetch: the URL; others: the arguments as JSON). Deny beats ask beats allow; a
//! call no rule names is allowed (the tools themselves are confined).
//!
//! Rules match what really runs. An exec pattern is matched against the whole command
//! and against every program it runs (`true && git push`, `sh -c 'git push'`,
//! `$(git push)`, `xargs git push` all run `git push`); deny or ask when any of them
//! matches — git also as it will run, past its global options (`git -C x push`) — and
//! when part of the command cannot be followed while such a rule exists. An allow
//! rule must cover every program as written. None of this is a boundary: a script the
//! model writes, an alias or a variable spells a command past any pattern; the sandbox
//! is the wall. A file pattern is
//! matched against the normalised workspace path (`./secrets/a.txt` is
//! `secrets/a.txt`). Writing under skills/ or to HEARTBEAT.md asks the owner even with
//! no rule (skills and the heartbeat's orders change what the assistant does later,
//! unasked), unless a deny or an explicit allow rule covers the call.

use globset::{Glob, GlobMatcher};
use serde_json::Value;

use super::confine::{Rel, prompt};
use super::exec::{ExecTool, Run};

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

/// What a call's rules are matched against.
struct Subjects {
    /// The main argument: the command, the normalised path, the URL, or the JSON.
    whole: String,
    /// exec: every program the command runs, as written and as it will run.
    runs: Vec<Run>,
    /// exec: why part of the command could not be followed.
    unfollowed: Option<String>,
}

impl Subjects {
    fn of(tool: &str, args: &Value) -> Self {
        let whole = subject(tool, args);
        if tool != "exec" {
            return Self {
                whole,
                runs: Vec::new(),
                unfollowed: None,
            };
        }
        let (runs, followed) = ExecTool::programs(&whole);
        let unfollowed = followed.err().map(|denied| match denied {
            super::exec::Denied::Unparsable { reason } => reason,
            other => other.to_string(),
        });
        Self {
            whole,
            runs,
            unfollowed,
        }
    }

    /// Whether `rule` names this call: its tool, and its pattern matches the whole
    /// argument or any program run, as written or as it will run.
    fn hit(&self, rule: &Rule, tool: &str) -> bool {
        rule.names(tool)
            && rule.pattern.as_ref().is_none_or(|p| {
                p.is_match(&self.whole)
                    || self.runs.iter().any(|run| {
                        run.written
                            .iter()
                            .chain(&run.runs_as)
                            .any(|form| p.is_match(form))
                    })
            })
    }

    /// A rule with a pattern for this tool that could not be checked against all of it.
    fn unchecked<'r>(&self, rules: &'r [Rule], tool: &str) -> Option<(&'r Rule, &str)> {
        let why = self.unfollowed.as_deref()?;
        let rule = rules
            .iter()
            .find(|r| r.names(tool) && r.pattern.is_some())?;
        Some((rule, why))
    }
}

/// A rule of `[tools.permissions]` that cannot be read: its list, its text, and what
/// is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tools.permissions.{list}: `{text}` {why}")]
pub struct RuleError {
    /// "allow", "ask" or "deny".
    pub list: &'static str,
    pub text: String,
    pub why: BadRule,
}

/// What is wrong with a rule's text (the words after it in `RuleError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadRule {
    #[error("is missing its closing `)`")]
    Unclosed,
    #[error("names no tool; write e.g. exec or exec(git *)")]
    NoTool,
    #[error("has a bad pattern: {0}")]
    Pattern(#[from] globset::Error),
}

impl Permissions {
    /// Parse the three lists; a malformed rule is an error naming it.
    pub fn new(allow: &[String], ask: &[String], deny: &[String]) -> Result<Self, RuleError> {
        let parse = |list: &[String], which: &'static str| -> Result<Vec<Rule>, RuleError> {
            list.iter()
                .map(|text| {
                    rule(text).map_err(|why| RuleError {
                        list: which,
                        text: text.clone(),
                        why,
                    })
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
        let subjects = Subjects::of(tool, args);
        if let Some(rule) = self.deny.iter().find(|r| subjects.hit(r, tool)) {
            return Decision::Deny(format!(
                "refused by the owner's rule `{}` in [tools.permissions] deny",
                rule.text
            ));
        }
        if let Some((rule, why)) = subjects.unchecked(&self.deny, tool) {
            return Decision::Deny(format!(
                "refused: the owner's rule `{}` in [tools.permissions] deny cannot be checked against this command ({why}); simplify it (no eval, heredocs or programs named by variables) or split it into several calls",
                rule.text
            ));
        }
        if self.ask.iter().any(|r| subjects.hit(r, tool))
            || subjects.unchecked(&self.ask, tool).is_some()
        {
            return Decision::Ask;
        }
        if writes_standing_orders(tool, &subjects.whole) && !self.allows(tool, args) {
            return Decision::Ask;
        }
        Decision::Allow
    }

    /// Whether explicit allow rules cover the call: for exec, every program it runs
    /// (`exec(git *)` does not cover `git status && rm -rf x`).
    pub fn allows(&self, tool: &str, args: &Value) -> bool {
        let subjects = Subjects::of(tool, args);
        let rules: Vec<&Rule> = self.allow.iter().filter(|r| r.names(tool)).collect();
        let covered = |text: &str| {
            rules
                .iter()
                .any(|r| r.pattern.as_ref().is_none_or(|p| p.is_match(text)))
        };
        if subjects.runs.is_empty() {
            return subjects.unfollowed.is_none() && covered(&subjects.whole);
        }
        subjects.unfollowed.is_none()
            && subjects
                .runs
                .iter()
                .all(|run| run.written.iter().any(|form| covered(form)))
    }
}

/// Whether the call writes skills/ or HEARTBEAT.md (see `writes_standing_orders`).
pub fn standing_order(tool: &str, args: &Value) -> bool {
    writes_standing_orders(tool, &Subjects::of(tool, args).whole)
}

/// A write to skills/ or HEARTBEAT.md: what the assistant will do later without asking
/// (skills enter every system prompt, the heartbeat runs as the owner), so the owner
/// says yes.
fn writes_standing_orders(tool: &str, path: &str) -> bool {
    let first = path.split('/').next().unwrap_or_default();
    matches!(tool, "write_file" | "edit_file")
        && (first.eq_ignore_ascii_case(prompt::SKILLS)
            || path.eq_ignore_ascii_case(prompt::HEARTBEAT))
}

impl Rule {
    fn names(&self, tool: &str) -> bool {
        self.tool == "*" || self.tool == tool
    }
}

fn rule(text: &str) -> Result<Rule, BadRule> {
    let text = text.trim();
    let (tool, pattern) = match text.split_once('(') {
        Some((tool, rest)) => {
            let pattern = rest.strip_suffix(')').ok_or(BadRule::Unclosed)?;
            (tool.trim(), Some(pattern))
        }
        None => (text, None),
    };
    if tool.is_empty() {
        return Err(BadRule::NoTool);
    }
    let pattern = match pattern {
        Some(p) => Some(Glob::new(p)?.compile_matcher()),
        None => None,
    };
    Ok(Rule {
        text: text.to_string(),
        tool: tool.to_string(),
        pattern,
    })
}

/// The argument a rule's pattern is matched against: file paths normalised
/// (`./a/../secrets/b` → `secrets/b`; a path that climbs out stays as written).
pub fn subject(tool: &str, args: &Value) -> String {
    let key = match tool {
        "exec" => "command",
        "web_fetch" => "url",
        "read_file" | "write_file" | "edit_file" | "list_dir" | "glob" | "grep" => "path",
        _ => "",
    };
    match args.get(key).and_then(Value::as_str) {
        Some(path) if key == "path" => {
            Rel::parse(path).map_or_else(|_| path.to_string(), |r| r.path())
        }
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
        let err = Permissions::new(&["exec(git *".into()], &[], &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("tools.permissions.allow") && err.contains("closing"),
            "{err}"
        );
    }

    fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> Permissions {
        let list = |l: &[&str]| l.iter().map(|r| r.to_string()).collect::<Vec<_>>();
        Permissions::new(&list(allow), &list(ask), &list(deny)).unwrap()
    }

    fn exec(p: &Permissions, command: &str) -> Decision {
        p.decide("exec", &json!({ "command": command }))
    }

    const RUNS_GIT_PUSH: &[&str] = &[
        "git push",
        "true && git push origin main",
        "echo x; git push",
        "(git push)",
        "sh -c 'git push'",
        "$(git push)",
        "echo $(git push)",
        "echo `git push`",
        "git status || git push --force",
        "ls | git push",
        "sudo git push",
        "env X=1 git push",
        "/usr/bin/git push",
        "GIT_DIR=x git 'push'",
        "echo 'git push' | sh",
        "bash -lc \"cd repo && git push\"",
    ];

    #[test]
    fn exec_rules_match_every_program_the_command_runs() {
        let ask = rules(&[], &["exec(git push*)"], &[]);
        let deny = rules(&[], &[], &["exec(git push*)"]);
        for command in RUNS_GIT_PUSH {
            assert_eq!(exec(&ask, command), Decision::Ask, "{command}");
            assert!(
                matches!(exec(&deny, command), Decision::Deny(r) if r.contains("`exec(git push*)`")),
                "{command}"
            );
        }
        for command in [
            "git status",
            "echo git push",
            "git pull && ls",
            "cat push.txt",
        ] {
            assert_eq!(exec(&ask, command), Decision::Allow, "{command}");
            assert_eq!(exec(&deny, command), Decision::Allow, "{command}");
        }
    }

    /// `git push` behind git's global options, and fed arguments by `xargs`.
    const RUNS_GIT_PUSH_SPELLED_OTHERWISE: &[&str] = &[
        "git -C /x push",
        "git -C. push origin",
        "git -c a=b push",
        "git -ca=b push",
        "git --no-pager push",
        "git -p push",
        "git --paginate push",
        "git -P push",
        "git --git-dir=.git push",
        "git --git-dir .git --work-tree . push",
        "git --work-tree=. push",
        "git --namespace=x push",
        "git --namespace x push",
        "git --bare push",
        "git --no-replace-objects push",
        "git --literal-pathspecs push",
        "git --glob-pathspecs --noglob-pathspecs --icase-pathspecs push",
        "git --exec-path=/usr/lib/git-core push",
        "git --config-env=a.b=VAR push",
        "git --config-env a.b=VAR push",
        "git --no-optional-locks --no-advice push",
        "git --super-prefix=x/ push",
        "git -C /x -c a=b --no-pager --git-dir .git push --force",
        "/usr/bin/git -C x push",
        "sudo git -C x push",
        "sh -c 'git -C /repo push'",
        "echo origin | xargs git push",
        "printf x | xargs git push",
        "xargs git push < remotes.txt",
        "xargs -I{} git push {}",
        "xargs -I {} git push {}",
        "xargs -i git push {}",
        "xargs --replace git push {}",
        "xargs --replace={} git push {}",
        "xargs -0 -r -t git push",
        "xargs --null --no-run-if-empty --verbose git push",
        "xargs -n1 git push",
        "xargs -n 1 -P 4 git push",
        "xargs --max-args 1 git push",
        "xargs --max-args=1 git push",
        "xargs -L 1 git push",
        "xargs -l git push",
        "xargs -s 100 git push",
        "xargs --max-chars 100 git push",
        "xargs -d '\\n' git push",
        "xargs -E END git push",
        "xargs -e git push",
        "xargs --eof=END git push",
        "xargs --process-slot-var SLOT git push",
        "xargs -a list.txt git push",
        "xargs -- git push",
        "xargs git -C repo push",
        "xargs sudo git push",
    ];

    #[test]
    fn exec_rules_see_git_behind_its_global_options_and_commands_run_by_xargs() {
        let ask = rules(&[], &["exec(git push*)"], &[]);
        let deny = rules(&[], &[], &["exec(git push*)"]);
        let mut missed = Vec::new();
        for command in RUNS_GIT_PUSH_SPELLED_OTHERWISE {
            if exec(&ask, command) != Decision::Ask
                || !matches!(exec(&deny, command), Decision::Deny(r) if r.contains("`exec(git push*)`"))
            {
                missed.push(*command);
            }
        }
        assert!(missed.is_empty(), "not seen as `git push`: {missed:#?}");
        for command in [
            "git -C push status",
            "git -c push=1 status",
            "git --git-dir push log",
            "git --namespace push fetch",
            "git --config-env push=X pull",
            "xargs -I git echo git",
            "xargs -E push git status",
            "echo git push | xargs echo",
        ] {
            assert_eq!(exec(&ask, command), Decision::Allow, "{command}");
            assert_eq!(exec(&deny, command), Decision::Allow, "{command}");
        }
    }

    #[test]
    fn git_given_its_command_by_xargs_meets_the_rules_that_might_apply() {
        let ask = rules(&[], &["exec(git push*)"], &[]);
        let deny = rules(&[], &[], &["exec(git push*)"]);
        for command in [
            "echo push | xargs git",
            "echo push | xargs git -C repo",
            "echo push | xargs -I{} git {}",
            "echo push | xargs -I % git -C . % origin",
            "echo push | xargs -i git {}",
            "echo push | xargs --replace=@ git @",
        ] {
            assert_eq!(exec(&ask, command), Decision::Ask, "{command}");
            assert!(
                matches!(exec(&deny, command), Decision::Deny(r) if r.contains("cannot be checked") && r.contains("xargs")),
                "{command}"
            );
        }
        assert_eq!(
            exec(&deny, "echo a | xargs -I{} git add {}"),
            Decision::Allow
        );
    }

    #[test]
    fn allow_rules_are_not_widened_by_git_global_options() {
        let p = rules(&["exec(git status*)"], &[], &[]);
        let allows = |command: &str| p.allows("exec", &json!({ "command": command }));
        assert!(allows("git status"));
        assert!(!allows("git -c core.fsmonitor=./evil status"));
        assert!(!allows("git --exec-path=/tmp status"));
    }

    #[test]
    fn a_command_that_cannot_be_followed_meets_the_rules_that_might_apply() {
        let command = "eval \"$CMD\"";
        assert!(matches!(
            exec(&rules(&[], &[], &["exec(git push*)"]), command),
            Decision::Deny(r) if r.contains("cannot be checked") && r.contains("eval")
        ));
        assert_eq!(
            exec(&rules(&[], &["exec(git push*)"], &[]), command),
            Decision::Ask
        );
        assert_eq!(exec(&rules(&[], &[], &[]), command), Decision::Allow);
        assert_eq!(
            exec(&rules(&[], &[], &["web_fetch(*evil*)"]), command),
            Decision::Allow,
            "only rules for exec with a pattern are in doubt"
        );
    }

    #[test]
    fn file_rules_match_the_normalised_path() {
        let p = rules(&[], &[], &["read_file(secrets/*)", "write_file(secrets/*)"]);
        for path in [
            "secrets/a.txt",
            "./secrets/a.txt",
            "a/../secrets/b",
            "secrets//c",
            " secrets/d ",
        ] {
            assert!(
                matches!(
                    p.decide("read_file", &json!({ "path": path })),
                    Decision::Deny(_)
                ),
                "{path}"
            );
        }
        assert_eq!(
            p.decide("read_file", &json!({"path": "notsecrets/a.txt"})),
            Decision::Allow
        );
        assert_eq!(subject("edit_file", &json!({"path": "./x/../y"})), "y");
        assert_eq!(subject("read_file", &json!({"path": "../out"})), "../out");
    }

    #[test]
    fn writing_skills_or_the_heartbeat_asks_the_owner_unless_a_rule_says_otherwise() {
        let none = rules(&[], &[], &[]);
        for (tool, path) in [
            ("write_file", "HEARTBEAT.md"),
            ("edit_file", "./HEARTBEAT.md"),
            ("write_file", "notes/../heartbeat.md"),
            ("write_file", "Skills/x/SKILL.md"),
            ("write_file", "skills/x/SKILL.md"),
            ("write_file", "./skills/new.md"),
            ("write_file", "notes/../skills/x/run.sh"),
            ("edit_file", "skills/x/SKILL.md"),
        ] {
            assert_eq!(
                none.decide(tool, &json!({ "path": path })),
                Decision::Ask,
                "{tool} {path}"
            );
        }
        for (tool, path) in [
            ("read_file", "skills/x/SKILL.md"),
            ("write_file", "skillset/a.md"),
            ("write_file", "notes/skills/a.md"),
            ("write_file", "notes/HEARTBEAT.md"),
            ("read_file", "HEARTBEAT.md"),
        ] {
            assert_eq!(
                none.decide(tool, &json!({ "path": path })),
                Decision::Allow,
                "{tool} {path}"
            );
        }
        let write = json!({"path": "skills/x/SKILL.md"});
        assert!(matches!(
            rules(&[], &[], &["write_file(skills/*)"]).decide("write_file", &write),
            Decision::Deny(_)
        ));
        assert_eq!(
            rules(&["write_file(skills/**)"], &[], &[]).decide("write_file", &write),
            Decision::Allow
        );
    }

    #[test]
    fn allow_rules_cover_a_command_only_when_they_cover_all_it_runs() {
        let p = rules(&["exec(git *)", "exec(ls*)"], &[], &[]);
        let allows = |command: &str| p.allows("exec", &json!({ "command": command }));
        assert!(allows("git status && git log"));
        assert!(allows("git status | ls -l"));
        assert!(allows("/usr/bin/git log"));
        assert!(!allows("git status && rm -rf x"));
        assert!(!allows("sudo git push"));
        assert!(!allows("eval git status"));
    }
}
