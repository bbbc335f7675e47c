//! Tests of the `exec` tool: every deny group blocks its cases and lets look-alikes
//! through (here), the parser finds every segment (`parsing`), and the tool runs
//! commands as promised (`running`).

mod cases;
mod parsing;
mod running;

use super::{Denied, DenyPolicy, GROUPS, check};
use cases::CASES;

/// The group that refuses `command` with every group on; "unparsable" when it cannot
/// be checked; None when it may run.
fn refused_by(command: &str) -> Option<&'static str> {
    match check(command, &|_| true) {
        Ok(()) => None,
        Err(Denied::Group { group, .. }) => Some(group),
        Err(Denied::Unparsable { .. }) => Some("unparsable"),
    }
}

#[test]
fn every_group_has_cases_both_ways() {
    let named: Vec<&str> = CASES.iter().map(|(group, _, _)| *group).collect();
    let groups: Vec<&str> = GROUPS.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        named, groups,
        "CASES must list every group, in GROUPS order"
    );
    for (group, blocked, allowed) in CASES {
        assert!(!blocked.is_empty() && !allowed.is_empty(), "{group}");
    }
}

#[test]
fn every_group_has_a_rule() {
    let rules: Vec<&str> = super::rules::RULES.iter().map(|(name, _)| *name).collect();
    let groups: Vec<&str> = GROUPS.iter().map(|(name, _)| *name).collect();
    assert_eq!(rules, groups);
}

#[test]
fn blocked_cases_are_refused_by_their_group() {
    let mut wrong = Vec::new();
    for (group, blocked, _) in CASES {
        for command in *blocked {
            let got = refused_by(command);
            if got != Some(group) {
                wrong.push(format!("{command:?}: want {group}, got {got:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn look_alikes_are_allowed() {
    let mut wrong = Vec::new();
    for (_, _, allowed) in CASES {
        for command in *allowed {
            if let Err(denied) = check(command, &|_| true) {
                wrong.push(format!("{command:?}: {denied}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn switching_a_group_off_lets_its_cases_past_it() {
    for (group, blocked, _) in CASES {
        let policy = DenyPolicy::new(|g| g != *group);
        for command in *blocked {
            if let Err(Denied::Group { group: by, .. }) = policy.check(command) {
                assert_ne!(by, *group, "{command:?}");
            }
        }
    }
    let policy = DenyPolicy::new(|g| g != "destructive");
    assert_eq!(policy.check("rm -rf /"), Ok(()));
}

#[test]
fn with_every_group_off_nothing_is_checked() {
    let policy = DenyPolicy::new(|_| false);
    assert_eq!(policy.check("rm -rf / && cat <<EOF"), Ok(()));
}

#[test]
fn the_refusal_names_group_segment_and_fix() {
    let err = check("ls && rm -rf /", &|_| true).map_err(|d| d.to_string());
    assert_eq!(
        err,
        Err(
            "refused by the `destructive` deny group: `rm -rf /` deletes the whole file system \
             (switch the group off in [tools.exec] deny_groups if you really mean it)"
                .to_string()
        )
    );
    let err = check("cat <<EOF\nhi\nEOF", &|_| true).map_err(|d| d.to_string());
    assert!(err.is_err_and(|e| e.contains("heredocs") && e.contains("simplify the command")));
}
