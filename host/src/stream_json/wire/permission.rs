//! A `can_use_tool` decision as the host gives it — the SDKs' `{"behavior": "allow",
//! "updatedInput", "updatedPermissions"}` or `{"behavior": "deny", "message",
//! "interrupt"}` — the permission updates it may carry (seed 002 §2, the SDK's
//! `PermissionUpdate.to_dict`), and the rules they add: whether a rule covers a call,
//! and where an allow rule is kept. Pincer suggests one rule per request
//! (`suggestions`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::lenient::{lenient, lenient_items, lenient_list};
use pincer_core::tools::mode::PermissionMode;

/// The host's decision on a call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Decision {
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) behavior: Option<String>,
    /// Older adapters say `subtype` where `behavior` goes.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) subtype: Option<String>,
    /// The input to run the call with (the SDKs send the original when unchanged; a
    /// question's answer is its `answer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) updated_input: Option<Value>,
    #[serde(
        default,
        deserialize_with = "lenient_list",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) updated_permissions: Option<Vec<PermissionUpdate>>,
    /// Why not (a deny).
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) message: Option<String>,
    /// A deny that also stops the turn.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) interrupt: Option<bool>,
    /// Seed 002's answers name the call again; Pincer knows it by the request.
    #[serde(
        rename = "toolUseID",
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) tool_use_id: Option<String>,
}

impl Decision {
    /// `allow` lets the call run; anything else (`deny`, nothing) refuses it.
    pub(crate) fn allows(&self) -> bool {
        self.behavior.as_deref().or(self.subtype.as_deref()) == Some("allow")
    }

    pub(crate) fn interrupts(&self) -> bool {
        self.interrupt == Some(true)
    }

    fn updates(&self) -> &[PermissionUpdate] {
        self.updated_permissions.as_deref().unwrap_or_default()
    }

    /// The mode of the first `setMode` update, if it names one.
    pub(crate) fn set_mode(&self) -> Option<PermissionMode> {
        self.updates()
            .iter()
            .find_map(|update| match update {
                PermissionUpdate::SetMode { mode, .. } => Some(mode),
                _ => None,
            })?
            .as_deref()
            .and_then(PermissionMode::parse)
    }

    /// Whether an `addRules` allow update covers a call of `tool` on `subject`, and
    /// where it is kept.
    pub(crate) fn allow_rule(&self, tool: &str, subject: &str) -> Option<Kept> {
        self.allowed().find_map(|change| {
            let covered = change.rules.iter().any(|rule| rule.covers(tool, subject));
            let kept = match change.destination.as_deref() {
                None | Some("session" | "cliArg") => Kept::Session,
                Some(_) => Kept::Stored,
            };
            covered.then_some(kept)
        })
    }

    /// The rules of every `addRules` allow update.
    pub(crate) fn added_rules(&self) -> Vec<Rule> {
        self.allowed()
            .flat_map(|change| change.rules.iter().cloned())
            .collect()
    }

    fn allowed(&self) -> impl Iterator<Item = &RuleChange> {
        self.updates().iter().filter_map(|update| match update {
            PermissionUpdate::AddRules(change) if change.behavior.as_deref() == Some("allow") => {
                Some(change)
            }
            _ => None,
        })
    }
}

/// Where an allow rule that covers a call is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    /// For this process (`destination: "session"`, or none).
    Session,
    /// For good: Pincer's "always" grant (`localSettings`, `userSettings`, …).
    Stored,
}

/// A change to the permission rules, modes or directories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum PermissionUpdate {
    AddRules(RuleChange),
    ReplaceRules(RuleChange),
    RemoveRules(RuleChange),
    SetMode {
        #[serde(default, deserialize_with = "lenient")]
        mode: Option<String>,
        #[serde(
            default,
            deserialize_with = "lenient",
            skip_serializing_if = "Option::is_none"
        )]
        destination: Option<String>,
    },
    AddDirectories(DirectoryChange),
    RemoveDirectories(DirectoryChange),
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RuleChange {
    #[serde(default, deserialize_with = "lenient_items")]
    pub(crate) rules: Vec<Rule>,
    /// `allow`, `deny` or `ask`.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) behavior: Option<String>,
    /// `session`, `localSettings`, `userSettings`, `projectSettings`, `cliArg`.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) destination: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct DirectoryChange {
    #[serde(default, deserialize_with = "lenient_items")]
    pub(crate) directories: Vec<String>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) destination: Option<String>,
}

/// A permission rule: a tool, and what of it (none or empty: all of it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Rule {
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) tool_name: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) rule_content: Option<String>,
}

impl Rule {
    /// Whether the rule covers a call of `tool` on `subject`: it names the tool by
    /// Pincer's or the CLI's name, with no content or with this call's subject.
    pub(crate) fn covers(&self, tool: &str, subject: &str) -> bool {
        let named = self.tool_name.as_deref();
        let cli = crate::hooks::cli_name(tool);
        (named == Some(tool) || (named.is_some() && named == cli))
            && self
                .rule_content
                .as_deref()
                .filter(|content| !content.is_empty())
                .is_none_or(|content| content == subject)
    }
}

/// What `can_use_tool` suggests: allow this call from now on, for the session.
pub(crate) fn suggestions(tool: &str, subject: &str) -> Vec<PermissionUpdate> {
    vec![PermissionUpdate::AddRules(RuleChange {
        rules: vec![Rule {
            tool_name: Some(tool.to_string()),
            rule_content: Some(subject.to_string()),
        }],
        behavior: Some("allow".into()),
        destination: Some("session".into()),
    })]
}
